"""The singular value decomposition: ``ember.linalg.svd`` and ``ember.linalg.svdvals`` (aten
``_linalg_svd``; ``linalg_svd`` and ``linalg_svdvals`` decompose into it), by NumPy's LAPACK.

``A = U @ diag(S) @ Vh`` over the last two dims, S descending, in A's real dtype. U and Vh come back
column-major per matrix (their transposes are contiguous), as PyTorch's LAPACK path lays them out;
without ``compute_uv`` they are empty. Empty matrices give identities where PyTorch does. Singular
vectors are unique only up to sign (a phase, for complex inputs): NumPy and PyTorch both call
LAPACK's gesdd and usually agree, but only products like ``U @ diag(S) @ Vh`` are guaranteed.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core import reduction as R
from ember.core import return_types
from ember.core.dispatch import define
from ember.core.layout import contiguous_strides
from ember.core.pointwise import type_name, unsupported
from ember.core.tensor import Tensor, empty

svd_op = define(
    "_linalg_svd(Tensor A, bool full_matrices=False, bool compute_uv=True, *, str? driver=None) "
    "-> (Tensor U, Tensor S, Tensor Vh)",
    ("core",),
)
linalg_svd_op = define(
    "linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)"
)
svdvals_op = define("linalg_svdvals(Tensor A, *, str? driver=None) -> Tensor")


def _check(A: Tensor, driver) -> None:
    if A.ndim < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    if driver is not None:
        raise RuntimeError(
            "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend."
        )
    if A.dtype.category < D.FLOATING:
        raise RuntimeError(
            f"linalg.svd: Expected a floating point or complex tensor as input. Got {type_name(A.dtype)}"
        )
    if A.dtype.itemsize == 2:
        raise unsupported("linalg_svd", A.dtype)


def _column_major(shape: tuple) -> tuple:
    """Strides of a batch of matrices each stored by columns (PyTorch's rule for sizes 0 and 1)."""
    swapped = contiguous_strides((*shape[:-2], shape[-1], shape[-2]))
    return (*swapped[:-2], swapped[-1], swapped[-2])


def _bool(value, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"linalg_svd(): argument '{name}' must be bool, not {type(value).__name__}")
    return bool(value)


def _plan(A: Tensor, full_matrices, compute_uv, driver) -> tuple:
    """The checked flags and the shapes and strides of U, S and Vh."""
    _check(A, driver)
    full_matrices = _bool(full_matrices, "full_matrices")
    compute_uv = _bool(compute_uv, "compute_uv")
    *batch, m, n = A._shape
    k = min(m, n)
    if compute_uv:
        u_shape = (*batch, m, m if full_matrices else k)
        vh_shape = (*batch, n if full_matrices else k, n)
    else:
        u_shape = vh_shape = (0,)
    u_stride = _column_major(u_shape) if compute_uv else None
    vh_stride = _column_major(vh_shape) if compute_uv else None
    return full_matrices, compute_uv, (*batch, k), (u_shape, u_stride), (vh_shape, vh_stride)


@svd_op.register_meta
def _linalg_svd_meta(A: Tensor, full_matrices: bool = False, compute_uv: bool = True, *, driver=None):
    _, _, s_shape, (u_shape, u_stride), (vh_shape, vh_stride) = _plan(A, full_matrices, compute_uv, driver)
    return return_types.linalg_svd(
        empty(u_shape, A.dtype, A.device, u_stride),
        empty(s_shape, A.dtype.to_real(), A.device),
        empty(vh_shape, A.dtype, A.device, vh_stride),
    )


@svd_op.register_kernel("cpu")
def _linalg_svd(A: Tensor, full_matrices: bool = False, compute_uv: bool = True, *, driver=None):
    full_matrices, compute_uv, s_shape, (u_shape, u_stride), (vh_shape, vh_stride) = _plan(
        A, full_matrices, compute_uv, driver
    )
    parts: dict = {}

    def compute(name: str):
        if not parts:
            a = R.values(A)
            if a.size and not np.all(np.isfinite(a)):
                raise RuntimeError(
                    "linalg.svd: The algorithm failed to converge because the input matrix contained non-finite values."
                )
            if compute_uv:
                parts["U"], parts["S"], parts["Vh"] = np.linalg.svd(a, full_matrices=full_matrices)
            else:
                parts["S"] = np.linalg.svd(a, compute_uv=False)
                parts["U"] = parts["Vh"] = np.zeros((0,), a.dtype)
        return parts[name]

    S = R.computed(s_shape, A.dtype.to_real(), lambda: compute("S"))
    U = R.computed(u_shape, A.dtype, lambda: compute("U"), u_stride)
    Vh = R.computed(vh_shape, A.dtype, lambda: compute("Vh"), vh_stride)
    return return_types.linalg_svd(U, S, Vh)


@linalg_svd_op.register_decomposition
def _linalg_svd_decomposition(A: Tensor, full_matrices: bool = True, *, driver=None):
    return return_types.linalg_svd(*svd_op(A, full_matrices, True, driver=driver))


@svdvals_op.register_decomposition
def _svdvals_decomposition(A: Tensor, *, driver=None) -> Tensor:
    # The vectors are computed only where a gradient will need them (reverse or forward mode), as
    # PyTorch does.
    needs_vectors = bool(A.requires_grad) or getattr(A, "_fw_grad", None) is not None
    return svd_op(A, False, needs_vectors, driver=driver)[1]


def svd(A, full_matrices=True, *, driver=None, out=None):
    """``ember.linalg.svd``: ``(U, S, Vh)`` with ``A = U @ diag(S) @ Vh``."""
    if out is not None:
        raise NotImplementedError("linalg.svd: out= is not supported")
    return linalg_svd_op(A, _bool(full_matrices, "full_matrices"), driver=driver)


def svdvals(A, *, driver=None, out=None):
    """``ember.linalg.svdvals``: the singular values of ``A``, descending."""
    if out is not None:
        raise NotImplementedError("linalg.svdvals: out= is not supported")
    return svdvals_op(A, driver=driver)
