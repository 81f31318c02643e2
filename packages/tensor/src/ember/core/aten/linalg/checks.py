"""What every linear-algebra op checks, with PyTorch's messages, and ``LinAlgError``.

The checks read metadata only, so the meta functions run them too. Results of LAPACK-style kernels
are laid out column-major per matrix (``column_major``), as PyTorch's CPU kernels return them.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.aten.linalg.svd import _column_major
from ember.core.pointwise import type_name, unsupported
from ember.core.tensor import Tensor, empty


class LinAlgError(RuntimeError):
    """A matrix the operation cannot handle (singular, not positive-definite, no convergence):
    ``ember.linalg.LinAlgError``, a ``RuntimeError`` as PyTorch's is."""


LinAlgError.__module__ = "ember.linalg"

column_major = _column_major


def check_float(A: Tensor, name: str, half: str | None = "low") -> None:
    """Floating or complex; float16 and bfloat16 refused as PyTorch's kernel refuses them: ``half``
    is ``"low"`` (a RuntimeError), the name of the LAPACK kernel (NotImplementedError) or None (accepted)."""
    if A.dtype.category < D.FLOATING:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {type_name(A.dtype)}")
    if A.dtype.itemsize == 2 and half is not None:
        if half == "low":
            raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {type_name(A.dtype)}")
        raise unsupported(half, A.dtype)


def check_matrix(A: Tensor, name: str, square: bool = True, arg: str = "A", half: str | None = "low") -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if square and A._shape[-1] != A._shape[-2]:
        raise RuntimeError(
            f"{name}: {arg} must be batches of square matrices, but they are {A._shape[-2]} by {A._shape[-1]} matrices"
        )
    check_float(A, name, half)


def check_same_dtype(name: str, A: Tensor, B: Tensor, b_name: str = "B") -> None:
    if A.dtype is not B.dtype:
        raise RuntimeError(
            f"{name}: Expected A and {b_name} to have the same dtype, but found A of type {type_name(A.dtype)} "
            f"and {b_name} of type {type_name(B.dtype)} instead"
        )


def batch_shape(name: str, *shapes: tuple) -> tuple:
    """The broadcast of the batch shapes, with PyTorch's error where they do not broadcast."""
    out: list = []
    for shape in shapes:
        for i, size in enumerate(reversed(shape)):
            if i >= len(out):
                out.append(size)
            elif out[i] == 1:
                out[i] = size
            elif size != 1 and size != out[i]:
                raise RuntimeError(
                    f"{name}: The size of tensor a ({out[i]}) must match the size of tensor b ({size}) at "
                    f"non-singleton dimension {len(out) - 1 - i}"
                )
    return tuple(reversed(out))


def info_tensor(batch: tuple, device) -> Tensor:
    return empty(batch, D.int32, device)


def raise_on_info(info: np.ndarray, name: str, message) -> None:
    """``message(code)`` for the first matrix whose LAPACK ``info`` is not 0, with its batch index."""
    codes = np.asarray(info).reshape(-1)
    bad = np.flatnonzero(codes)
    if not bad.size:
        return
    first = int(bad[0])
    prefix = f"{name}: (Batch element {first}): " if np.asarray(info).ndim else f"{name}: "
    raise LinAlgError(prefix + message(int(codes[first])))
