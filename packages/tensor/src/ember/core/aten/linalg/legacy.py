"""The top-level linear-algebra names (``ember.det``, ``ember.svd``, ``ember.triangular_solve``, ...)
and their ``Tensor`` methods, each in PyTorch's older convention over ``ember.linalg``'s functions:
``svd`` returns ``V`` rather than ``Vh`` and takes ``some``/``compute_uv``, ``qr`` takes ``some``,
``triangular_solve`` takes ``(b, A)`` and returns the coefficient's copy too, ``lu`` returns the
packed factorization.
"""

from __future__ import annotations

from ember.core import return_types
from ember.core.api import method, public
from ember.core.aten.linalg import factorizations as F
from ember.core.aten.linalg import linalg_functions as L
from ember.core.aten.linalg import solvers as S
from ember.core.aten.linalg.svd import svd as _linalg_svd
from ember.core.aten.linalg.svd import svdvals
from ember.core.tensor import Tensor


@public("det")
@method("det")
def det(input: Tensor) -> Tensor:
    return S.det_op(input)


@public("logdet")
@method("logdet")
def logdet(input: Tensor) -> Tensor:
    """``log(det)``: -inf for a singular matrix and nan for a negative determinant, as in PyTorch."""
    sign, logabs = S.slogdet_op(input)
    return logabs + sign.log()


@public("slogdet")
@method("slogdet")
def slogdet(input: Tensor, *, out=None):
    return L.write_out(return_types.slogdet(*S.slogdet_op(input)), out)


@public("inverse")
@method("inverse")
def inverse(input: Tensor, *, out=None) -> Tensor:
    return L.inv(input, out=out)


@public("cholesky")
@method("cholesky")
def cholesky(input: Tensor, upper: bool = False, *, out=None) -> Tensor:
    return L.cholesky(input, upper=upper, out=out)


@public("cholesky_solve")
@method("cholesky_solve")
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """``X`` with ``A X = B`` for ``A = L L^H`` (``U^H U`` with ``upper``), ``input`` being ``B``."""
    if input.ndim < 2 or input2.ndim < 2:
        raise RuntimeError("b should have at least 2 dimensions, but has 1 dimensions instead")
    factor = input2
    y = S.solve_triangular(L.mh(factor) if upper else factor, input, upper=False)
    x = S.solve_triangular(factor if upper else L.mh(factor), y, upper=True)
    return L.write_out(x, out)


@public("cholesky_inverse")
@method("cholesky_inverse")
def cholesky_inverse(input: Tensor, upper: bool = False, *, out=None) -> Tensor:
    eye = L._eye_like(input, input.shape[-1]).expand(input.shape)
    return cholesky_solve(eye, input, upper, out=out)


@public("svd")
@method("svd")
def svd(input: Tensor, some: bool = True, compute_uv: bool = True, *, out=None):
    if compute_uv:
        U, values, Vh = _linalg_svd(input, full_matrices=not some)
        result = return_types.svd(U, values, L.mh(Vh))
    else:
        # Without the vectors, U and V are zero-filled square matrices, as PyTorch returns them.
        m, n = input.shape[-2], input.shape[-1]
        values = svdvals(input)
        batch = tuple(input.shape[:-2])
        U, V = input.new_zeros((*batch, m, m)), input.new_zeros((*batch, n, n)).mT  # V = Vh^H, as PyTorch lays it
        result = return_types.svd(U, values, V)
    return L.write_out(result, out)


@public("pinverse")
@method("pinverse")
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    return L.pinv(input, rtol=rcond)


@public("matrix_exp")
@method("matrix_exp")
def matrix_exp(input: Tensor) -> Tensor:
    return S.matrix_exp_op(input)


@public("matrix_power")
@method("matrix_power")
def matrix_power(input: Tensor, n: int) -> Tensor:
    return L.matrix_power(input, n)


@public("qr")
@method("qr")
def qr(input: Tensor, some: bool = True, *, out=None):
    Q, R = F.qr_op(input, "reduced" if some else "complete")
    return L.write_out(return_types.qr(Q, R), out)


@public("triangular_solve")
@method("triangular_solve")
def triangular_solve(
    input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False, unitriangular: bool = False, *, out=None
):
    """``X`` with ``op(A) X = input`` for ``op`` the identity or (``transpose``) the transpose, and a copy of ``A``."""
    if input.ndim < 2:
        raise RuntimeError(
            f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has {input.ndim} dimensions instead"
        )
    if A.ndim < 2:
        raise RuntimeError(
            f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has {A.ndim} dimensions instead"
        )
    coefficient = A.mT if transpose else A
    x = S.solve_triangular(coefficient, input, upper=upper != transpose, unitriangular=unitriangular)
    return L.write_out(return_types.triangular_solve(x, A.mT.contiguous().mT), out)


@public("lu")
@method("lu")
def lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out=None):
    LU, pivots, infos = F.lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    result = (LU, pivots, infos) if get_infos else (LU, pivots)
    return L.write_out(result, out)


@public("lu_solve")
@method("lu_solve")
def lu_solve(input: Tensor, LU_data: Tensor, LU_pivots: Tensor, *, out=None) -> Tensor:
    return L.lu_solve(LU_data, LU_pivots, input, out=out)


@public("lu_unpack")
def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True, *, out=None):
    return L.lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots, out=out)


@public("chain_matmul")
def chain_matmul(*matrices: Tensor, out=None) -> Tensor:
    if len(matrices) == 1:
        return L.write_out(matrices[0].clone(), out)
    return L.multi_dot(matrices, out=out)


@public("orgqr")
@method("orgqr")
def orgqr(input: Tensor, input2: Tensor) -> Tensor:
    return L.householder_product(input, input2)


@public("cross")
@method("cross")
def cross(input: Tensor, other: Tensor, dim: int | None = None, *, out=None) -> Tensor:
    """With no ``dim``, the first dim of size 3 (PyTorch's old default)."""
    if dim is None:
        shape = S.batch_shape("cross", tuple(input.shape), tuple(other.shape))
        dim = next((i for i, size in enumerate(shape) if size == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return L.cross(input, other, dim=dim, out=out)


@public("geqrf")
@method("geqrf")
def geqrf(input: Tensor, *, out=None):
    return L.write_out(F.geqrf_op(input), out)


@public("ormqr")
@method("ormqr")
def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True, transpose: bool = False, *, out=None):
    """``op(Q) @ input3`` (``input3 @ op(Q)`` with ``left=False``) for the ``Q`` of ``geqrf``'s
    reflectors ``(input, input2)``, ``op`` the transpose where ``transpose``."""
    m = input.shape[-2]
    missing = m - input.shape[-1]
    reflectors = input
    if missing > 0:  # the full m x m Q: reflectors padded with zero columns (no reflection)
        reflectors = L.householder_product_pad(input, missing)
    Q = L.householder_product(reflectors, input2)
    Q = L.mh(Q) if transpose else Q
    result = Q.matmul(input3) if left else input3.matmul(Q)
    return L.write_out(result.mT.contiguous().mT, out)  # column-major, as LAPACK's ormqr leaves it


def _removed(name: str, advice: str):
    def removed(*args, **kwargs):
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now removed. {advice}")

    removed.__name__ = name
    public(name)(removed)
    if name != "matrix_rank":  # the Tensor methods PyTorch keeps, raising the same
        method(name)(removed)


_removed("solve", "`torch.solve` is deprecated in favor of `torch.linalg.solve`.")
_removed("lstsq", "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.")
_removed("eig", "`torch.linalg.eig` returns complex tensors: use `torch.linalg.eig` or `torch.linalg.eigvals`.")
_removed("symeig", "Use `torch.linalg.eigh` or `torch.linalg.eigvalsh` (the lower triangle by default).")
_removed("matrix_rank", "Please use the `torch.linalg.matrix_rank` function instead.")


@public("frobenius_norm")
def frobenius_norm(input: Tensor, dim=(-2, -1), keepdim: bool = False, *, out=None) -> Tensor:
    return L.write_out(L.vector_norm(input, 2, dim, keepdim), out)


@public("nuclear_norm")
def nuclear_norm(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return L.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, out=out)
