"""``ember.autograd.forward_ad``: forward-mode differentiation with dual tensors.

Inside ``with dual_level():``, ``make_dual(primal, tangent)`` gives a tensor that carries a tangent;
every op on such tensors gives outputs that carry theirs (the Jacobian-vector product), and
``unpack_dual`` reads it back. As in PyTorch, one level exists at a time, and leaving it drops every
tangent made inside it. The propagation lives in ``_forward_dispatch``, an interposer installed in
the dispatcher as its ``forward_ad`` level, switched on only while a level is open, so code outside a level pays nothing for it.

Example::

    with forward_ad.dual_level():
        x = forward_ad.make_dual(primal, tangent)
        y = x.sin()
        jvp = forward_ad.unpack_dual(y).tangent  # cos(primal) * tangent
"""

from __future__ import annotations

from typing import NamedTuple

from ember.autograd import _forward_dispatch as fd
from ember.core import dtypes as D
from ember.core.dispatch import enable_level, install_level
from ember.core.tensor import Tensor

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal (a view without tangent) and the tangent (or None)."""

    primal: Tensor
    tangent: Tensor | None


def _current_index() -> int:
    return -1 if fd.current is None else fd.current.index


def enter_dual_level() -> int:
    """Open the forward AD level and return its index (0); a second one raises, as in PyTorch."""
    if fd.current is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    fd.current = fd.Level(0)
    enable_level("forward_ad")
    hook = fd.function_hook()
    if hook is not None:
        hook(fd.function_handler)  # custom Functions: their jvp staticmethod
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the level: every tangent made inside it is dropped."""
    index = _current_index()
    if level is None:
        level = index
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != index:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. This is not supported."
        )
    finished = fd.current
    fd.current = None
    enable_level("forward_ad", False)
    hook = fd.function_hook()
    if hook is not None:
        hook(None)
    finished.close()


install_level("forward_ad", fd.handle)


class dual_level:
    """Context manager of a forward AD level: ``with dual_level():`` enters it, leaving exits it."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


def _check_level(level: int | None, what: str) -> int:
    index = _current_index()
    if level is None:
        level = index
    if level != index or level < 0:
        raise RuntimeError(f"Invalid level given to {what}")
    return level


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` carrying ``tangent`` as its forward gradient at ``level``."""
    if fd.current is None and level is None:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first."
        )
    _check_level(level, "_make_dual")
    if tensor.dtype.category not in (D.FLOATING, D.COMPLEX):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if tangent.dtype.category not in (D.FLOATING, D.COMPLEX):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if fd.tangent_of(tensor) is not None:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the same level "
            f"{level if level is not None else 0} is not supported."
        )
    if tuple(tangent._shape) != tuple(tensor._shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is "
            f"not supported. Tensor is of size {list(tensor._shape)} while the given forward gradient is of size "
            f"{list(tangent._shape)}."
        )
    dual = fd.primal_alias(tensor)
    fd.set_tangent(dual, fd.laid_out_like(tangent, dual))
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at ``level``; outside a level, ``(tensor, None)``."""
    if fd.current is None and level is None:
        return UnpackedDualTensor(tensor, None)
    tangent = fd.tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    _check_level(level, "_fw_primal")  # as in PyTorch, only a dual tensor checks the level
    return UnpackedDualTensor(fd.primal_alias(tensor), tangent)
