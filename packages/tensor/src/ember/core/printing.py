"""How tensors print."""

from __future__ import annotations


def tensor_repr(t) -> str:
    if t._array is None:
        return f"tensor(..., device='{t.device}', size={tuple(t._shape)}, dtype={t.dtype})"
    return f"tensor({t.tolist()}, dtype={t.dtype})"
