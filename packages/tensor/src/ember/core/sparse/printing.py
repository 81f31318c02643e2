"""``repr`` of a sparse COO tensor, as PyTorch prints one: the indices and values as tensors, then
``size=``, ``nnz=``, ``dtype=`` (when not a default one) and ``layout=``, the first suffix always on
a new line."""

from __future__ import annotations

from ember.core import dtypes as D
from ember.core.printing import OPTIONS, _node_name
from ember.core.printing_layout import tensor_body
from ember.core.promotion import get_default_dtype


def _body(t, indent: int) -> str:
    if t.numel() == 0:
        return f"[], size={tuple(t._shape)}"
    return tensor_body(t._array, indent)


def sparse_repr(t) -> str:
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    suffixes.append(f"size={tuple(t._shape)}")
    suffixes.append(f"nnz={t._nnz()}")
    default = get_default_dtype()
    # As for dense tensors: printing takes complex64 as the default complex type under float16.
    if t.dtype not in (default, D.complex128 if default is D.float64 else D.complex64, D.int64, D.bool_):
        suffixes.append(f"dtype={t.dtype}")
    indices_prefix, values_prefix = "indices=tensor(", "values=tensor("
    body = (
        indices_prefix
        + _body(t._sp_indices, indent + len(indices_prefix))
        + "),\n"
        + " " * indent
        + values_prefix
        + _body(t._sp_values, indent + len(values_prefix))
        + ")"
    )
    suffixes.append("layout=ember.sparse_coo")
    grad_fn = getattr(t, "grad_fn", None)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{_node_name(grad_fn)}>")
    elif getattr(t, "requires_grad", False):
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """PyTorch's suffix wrapping with the first suffix forced onto a new line (its sparse form)."""
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    force_newline = True
    for suffix in suffixes:
        if force_newline or last_line + len(suffix) + 2 > OPTIONS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
            force_newline = False
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    parts.append(")")
    return "".join(parts)
