"""How tensors print: ``repr(t)`` and ``str(t)`` exactly as PyTorch prints its tensors, with ``ember.``
where PyTorch writes ``torch.``, and the options ``set_printoptions``/``get_printoptions`` that govern it.

The text is built in two parts. The body (``[[1., 2.], ...]``) is laid out by ``ember.core.printing_layout``
from a NumPy view of the values: one formatter per tensor (two for complex, real and imaginary parts)
decides, from every value that will be shown, between integer mode, fixed precision and scientific
notation, and pads every value to one width. This module wraps the body in ``tensor(...)`` and adds the
suffixes PyTorch adds (``device=``, ``size=``, ``dtype=``, ``requires_grad=True``/``grad_fn=``),
wrapping them onto a new line when they would pass ``linewidth``.

Options are one module-level object, as in PyTorch; ``printoptions(...)`` sets them for a block.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from math import inf
from typing import Any

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.printing_layout import OPTIONS, tensor_body
from ember.core.promotion import get_default_dtype

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": inf, "edgeitems": 3, "linewidth": 80},
}


@public("set_printoptions")
def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set how tensors print.

    ``precision`` digits after the point (4), ``threshold`` elements above which a tensor prints
    summarized (1000), ``edgeitems`` items kept at each end of a summarized dimension (3), ``linewidth``
    characters per line (80), ``profile`` one of ``"default"``, ``"short"``, ``"full"`` (applied before
    the other arguments), ``sci_mode`` True/False to force or forbid scientific notation; None (the
    default, and what every call without it sets) lets each tensor choose.

    >>> ember.set_printoptions(precision=2)
    >>> ember.tensor([1.12345])
    tensor([1.12])
    """
    if profile is not None:
        # PyTorch ignores a profile name it does not know; so do we, for programs that pass one.
        for name, value in _PROFILES.get(profile, {}).items():
            setattr(OPTIONS, name, value)
    if precision is not None:
        OPTIONS.precision = precision
    if threshold is not None:
        OPTIONS.threshold = threshold
    if edgeitems is not None:
        OPTIONS.edgeitems = edgeitems
    if linewidth is not None:
        OPTIONS.linewidth = linewidth
    OPTIONS.sci_mode = sci_mode


@public("get_printoptions")
def get_printoptions() -> dict[str, Any]:
    """The current print options, as keyword arguments for ``set_printoptions``."""
    return dataclasses.asdict(OPTIONS)


@contextlib.contextmanager
def printoptions(**kwargs: Any) -> Iterator[None]:
    """Set print options (as ``set_printoptions`` takes them) for the duration of a ``with`` block."""
    previous = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**previous)


def tensor_repr(t, *, tensor_contents: str | None = None) -> str:
    """``repr(t)``: ``tensor(<body>, <suffixes>)``. ``tensor_contents`` replaces the body when given."""
    cls = type(t)
    plain = _is_plain(t)
    prefix = "tensor(" if plain else f"{cls.__name__}("
    indent = len(prefix)
    suffixes = []
    # PyTorch prints the device of every tensor not on the CPU (its default tensor type's device,
    # which set_default_device does not change).
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")

    default = get_default_dtype()
    shape = tuple(t._shape)
    if t.device.type == "meta" or getattr(t, "fake_mode", None) is not None:
        suffixes.append(f"size={shape}")
        if t.dtype is not default:
            suffixes.append(f"dtype={t.dtype}")
        body = "..."
    elif 0 in shape:
        # Only the shape (0,) goes without saying: it is what "[]" reads as.
        if len(shape) != 1:
            suffixes.append(f"size={shape}")
        if t.dtype is not default:
            suffixes.append(f"dtype={t.dtype}")
        body = "[]"
    else:
        if not OPTIONS.edgeitems:
            suffixes.append(f"size={shape}")
        # PyTorch's printing takes complex64 as the default complex type under a float16 default,
        # where its factories take complex32.
        default_complex = D.complex128 if default is D.float64 else D.complex64
        if t.dtype not in (default, default_complex, D.int64, D.bool_):
            suffixes.append(f"dtype={t.dtype}")
        body = None if tensor_contents is not None else tensor_body(_host_values(t), indent)
    if tensor_contents is not None:
        body = tensor_contents

    grad_fn = getattr(t, "grad_fn", None)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{_node_name(grad_fn)}>")
    elif getattr(t, "requires_grad", False):
        suffixes.append("requires_grad=True")

    text = _add_suffixes(prefix + body, suffixes, indent)
    if getattr(cls, "_is_param", False) and not plain:
        text = f"Parameter({text})"
    return text


def _is_plain(t) -> bool:
    """Plain tensors and parameters print as ``tensor(``; other subclasses under their class name."""
    from ember.core.tensor import Tensor

    cls = type(t)
    return cls is Tensor or bool(cls.__dict__.get("_is_param", False))


def _host_values(t):
    """The tensor's values as a NumPy array (a view where the tensor lives on the CPU)."""
    if t._array is None:
        t = t.cpu()
    return t._array


def _node_name(grad_fn) -> str:
    name = getattr(grad_fn, "name", None)
    if callable(name):
        return str(name()).rsplit("::", 1)[-1]
    return type(grad_fn).__name__


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    parts = [text]
    # PyTorch counts the last line this way (two more than its length when there is one line);
    # the wrapping decisions depend on it, so we count the same.
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > OPTIONS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


@method("__format__")
def _format(self, format_spec: str) -> str:
    """``f"{t:.2f}"`` formats a 0-dim tensor's value; other tensors take only the empty spec."""
    from ember.core.tensor import Tensor

    if len(self._shape) == 0 and self.device.type != "meta" and type(self) is Tensor:
        return format(self.item(), format_spec)
    return object.__format__(self, format_spec)
