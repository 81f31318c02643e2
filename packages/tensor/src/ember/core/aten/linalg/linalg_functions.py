"""``ember.linalg``'s functions over the factorization and solver ops (``factorizations.py``,
``solvers.py``): norms, inverses, solves, ranks, powers, products and the tensor forms.

Each composite is written with other ops, as PyTorch's implicit composites are: autograd, vmap and
every dispatch mode see its parts. Conjugate transposes (``mh``) conjugate into new tensors, as
Ember has no conjugate bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ember.core import dtypes as D
from ember.core import return_types
from ember.core.aten.linalg import factorizations as F
from ember.core.aten.linalg import solvers as S
from ember.core.aten.linalg.checks import check_float, check_matrix
from ember.core.aten.linalg.svd import svd, svdvals
from ember.core.aten.reductions.norms import vector_norm
from ember.core.dtype_info import finfo
from ember.core.pointwise import type_name
from ember.core.tensor import Tensor


def write_out(result, out):
    """Copy ``result`` (a tensor or a tuple of them) into ``out``, resized, as PyTorch's ``out=`` does."""
    if out is None:
        return result
    if isinstance(result, tuple):
        if not isinstance(out, tuple | list) or len(out) != len(result):
            raise TypeError(f"out must be a tuple of {len(result)} tensors")
        written = [write_out(r, o) for r, o in zip(result, out, strict=True)]
        return type(result)(*written) if hasattr(result, "_fields") else tuple(written)
    if out.dtype is not result.dtype:
        raise RuntimeError(
            f"Expected out tensor to have dtype {type_name(result.dtype)}, but got {type_name(out.dtype)} instead"
        )
    from ember.core.reduction import write_out as _write

    return _write(out, result.contiguous())


def mh(A: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims."""
    return A.mT.conj()


def _eye_like(A: Tensor, n, m=None) -> Tensor:
    from ember.core.aten.factories.factories import eye_function

    return eye_function(n, n if m is None else m, dtype=A.dtype, device=A.device)


# -- inverses and solves --------------------------------------------------------------------------


def inv_ex(A: Tensor, *, check_errors: bool = False, out=None):
    return write_out(F.inv_ex(A, check_errors=check_errors), out)


def inv(A: Tensor, *, out=None) -> Tensor:
    return write_out(F.inv_ex(A, check_errors=True)[0], out)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False, out=None):
    return write_out(S.solve_ex(A, B, left=left, check_errors=check_errors), out)


def solve(A: Tensor, B: Tensor, *, left: bool = True, out=None) -> Tensor:
    return write_out(S.solve_ex(A, B, left=left, check_errors=True)[0], out)


def solve_triangular(
    A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False, out=None
) -> Tensor:
    return write_out(S.solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular), out)


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False, out=None):
    return write_out(F.cholesky_ex(A, upper=upper, check_errors=check_errors), out)


def cholesky(A: Tensor, *, upper: bool = False, out=None) -> Tensor:
    return write_out(F.cholesky_ex(A, upper=upper, check_errors=True)[0], out)


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None):
    return S.lstsq_op(A, B, rcond, driver=driver)


def det(A: Tensor, *, out=None) -> Tensor:
    return write_out(S.det_op(A), out)


def slogdet(A: Tensor, *, out=None):
    return write_out(S.slogdet_op(A), out)


def matrix_exp(A: Tensor) -> Tensor:
    return S.matrix_exp_op(A)


# -- factorizations -------------------------------------------------------------------------------


def qr(A: Tensor, mode: str = "reduced", *, out=None):
    return write_out(F.qr_op(A, mode), out)


def eigh(A: Tensor, UPLO: str = "L", *, out=None):
    return write_out(F.eigh_op(A, UPLO, True), out)


def eigvalsh(A: Tensor, UPLO: str = "L", *, out=None) -> Tensor:
    # The vectors are computed only where a gradient will need them, as PyTorch does.
    needs_vectors = bool(A.requires_grad) or getattr(A, "_fw_grad", None) is not None
    return write_out(F.eigh_op(A, UPLO, needs_vectors)[0], out)


def eig(A: Tensor, *, out=None):
    return write_out(F.eig_op(A), out)


def eigvals(A: Tensor, *, out=None) -> Tensor:
    return write_out(F.eig_op(A)[0], out)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False, out=None):
    return write_out(F.lu_factor_ex(A, pivot=pivot, check_errors=check_errors), out)


def lu_factor(A: Tensor, *, pivot: bool = True, out=None):
    LU, pivots, _ = F.lu_factor_ex(A, pivot=pivot, check_errors=True)
    return write_out(return_types.linalg_lu_factor(LU, pivots), out)


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False, out=None):
    return write_out(F.ldl_factor_ex(A, hermitian=hermitian, check_errors=check_errors), out)


def ldl_factor(A: Tensor, *, hermitian: bool = False, out=None):
    LD, pivots, _ = F.ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return write_out(return_types.linalg_ldl_factor(LD, pivots), out)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False, out=None) -> Tensor:
    return write_out(F.ldl_solve_op(LD, pivots, B, hermitian=hermitian), out)


def permutation_matrix(pivots: Tensor, m, dtype: D.dtype) -> Tensor:
    """``P`` (*, m, m) with ``A = P L U`` from LAPACK's 1-based row swaps, by composing the swaps."""
    from ember.core.aten.factories.factories import arange_function

    batch = tuple(pivots.shape[:-1])
    perm = arange_function(m, device=pivots.device).expand((*batch, m)).contiguous()
    for j in range(pivots.shape[-1]):
        p = pivots[..., j : j + 1].long() - 1
        at_j, at_p = perm[..., j : j + 1], perm.gather(-1, p)
        perm = perm.scatter(-1, p, at_j).scatter(-1, perm.new_full((*batch, 1), j), at_p)
    # Row i of P^T A is row perm[i] of A: P^T's row i is the unit vector e_perm[i].
    rows = _eye_like(pivots.new_empty((0,), dtype=dtype), m).index_select(0, perm.reshape(-1))
    return rows.reshape((*batch, m, m)).mT.contiguous()


def lu_unpack(LU: Tensor, pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True, *, out=None):
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    if unpack_data:
        L = LU[..., :, :k].tril(-1) + _eye_like(LU, m, k)
        U = LU[..., :k, :].triu()
    else:
        L, U = LU.new_empty((0,)), LU.new_empty((0,))
    P = permutation_matrix(pivots, m, LU.dtype) if unpack_pivots else LU.new_empty((0,))
    return write_out(return_types.lu_unpack(P, L, U), out)


def lu(A: Tensor, *, pivot: bool = True, out=None):
    LU, pivots, _ = F.lu_factor_ex(A, pivot=pivot)
    P, L, U = lu_unpack(LU, pivots)
    return write_out(return_types.linalg_lu(P, L, U), out)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False, out=None) -> Tensor:
    check_matrix(LU, "linalg.lu_solve")
    if not left:
        # X A = B  <=>  A^H X^H = B^H.
        return write_out(mh(lu_solve(LU, pivots, mh(B), left=True, adjoint=not adjoint)), out)
    n = LU.shape[-1]
    P = permutation_matrix(pivots, n, LU.dtype)
    if not adjoint:
        y = S.solve_triangular(LU, mh(P).matmul(B), upper=False, unitriangular=True)
        x = S.solve_triangular(LU, y, upper=True)
    else:
        y = S.solve_triangular(mh(LU), B, upper=False)
        x = P.matmul(S.solve_triangular(mh(LU), y, upper=True, unitriangular=True))
    return write_out(x, out)


def householder_product_pad(A: Tensor, columns: int) -> Tensor:
    """``A`` with ``columns`` zero columns appended (reflectors that reflect nothing)."""
    from ember.core.aten.shape.joining import cat

    return cat([A, A.new_zeros((*A.shape[:-1], columns))], -1)


def householder_product(A: Tensor, tau: Tensor, *, out=None) -> Tensor:
    """The first n columns of ``H_1 ... H_k`` with ``H_i = I - tau_i v_i v_i^H`` (LAPACK's orgqr);
    ``v_i`` is column i of ``A`` below the diagonal, with a 1 on it."""
    check_matrix(A, "torch.linalg.householder_product", square=False, half=None)
    from ember.core.aten.factories.factories import arange_function

    m, n = A.shape[-2], A.shape[-1]
    if n > m:
        raise RuntimeError(
            "torch.linalg.householder_product: input.shape[-2] must be greater than or equal to input.shape[-1]"
        )
    if tau.shape[-1] > n:
        raise RuntimeError(
            "torch.linalg.householder_product: input.shape[-1] must be greater than or equal to tau.shape[-1]"
        )
    rows = arange_function(m, device=A.device)
    Q = _eye_like(A, m, n).expand((*A.shape[:-2], m, n))
    for i in reversed(range(tau.shape[-1])):
        v = A[..., :, i : i + 1] * (rows > i).to(A.dtype).unsqueeze(-1) + (rows == i).to(A.dtype).unsqueeze(-1)
        Q = Q - tau[..., i : i + 1].unsqueeze(-1) * v.matmul(mh(v).matmul(Q))
    return write_out(Q.mT.contiguous().mT, out)  # column-major, as LAPACK's orgqr leaves it


# -- norms ----------------------------------------------------------------------------------------


def _cast(A: Tensor, dtype) -> Tensor:
    return A if dtype is None else A.to(dtype)


def _matrix_dims(A: Tensor, dim) -> tuple[int, int]:
    if not isinstance(dim, Sequence) or len(dim) != 2:
        raise RuntimeError(
            f"linalg.matrix_norm: dim must be a 2-tuple. Got {tuple(dim) if isinstance(dim, Sequence) else dim}"
        )
    d0, d1 = (d % A.ndim if A.ndim else d for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    check_float(A, "linalg.matrix_norm", half=None)
    d0, d1 = _matrix_dims(A, dim)
    A = _cast(A, dtype)
    if ord == "fro":
        result = vector_norm(A, 2, (d0, d1), keepdim)
    elif ord in ("nuc", 2, -2):
        values = svdvals(A.movedim((d0, d1), (-2, -1)))
        result = values.sum(-1) if ord == "nuc" else values.amax(-1) if ord == 2 else values.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                result = result.unsqueeze(d)
    elif ord in (1, -1, math.inf, -math.inf):
        # 1: the largest column sum (sum over rows d0, then the max over d1); inf: the largest row sum.
        first, second = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = A.abs().sum(first, keepdim=True)
        result = sums.amax(second, keepdim=True) if ord > 0 else sums.amin(second, keepdim=True)
        if not keepdim:
            result = result.squeeze((d0, d1))
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    return write_out(result, out)


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, out=None, dtype=None) -> Tensor:
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
    if ord is not None and dim is None:
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
        if A.ndim != 1:
            raise RuntimeError(
                f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.ndim}D."
            )
    if isinstance(ord, str):
        raise RuntimeError("linalg.vector_norm: Expected a non-complex scalar as the order of norm.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)


def cond(A: Tensor, p=None, *, out=None) -> Tensor:
    check_matrix(A, "linalg.cond", square=p not in (None, 2, -2), half=None)
    if p in (None, 2, -2):
        values = svdvals(A)
        top, bottom = values[..., 0], values[..., -1]
        result = top / bottom if p != -2 else bottom / top
    else:
        result = matrix_norm(A, p) * matrix_norm(F.inv_ex(A)[0], p)
    return write_out(result, out)


def _tolerances(values: Tensor, m, n, atol, rtol, rcond=None):
    """The cutoff ``max(atol, rtol * largest value)``; without ``rtol``, PyTorch's default is
    ``eps * max(m, n)``, or 0 where a positive ``atol`` is given."""
    if rcond is not None:
        atol, rtol = 0.0, rcond
    if rtol is None:
        rtol = 0.0 if atol is not None and _positive(atol) else finfo(values.dtype).eps * max(m, n)
    if values.shape[-1]:
        largest = values.amax(-1, keepdim=True)
    else:
        largest = values.sum(-1, keepdim=True)
    cutoff = largest * rtol
    if atol is None:
        return cutoff
    if isinstance(atol, Tensor):
        return cutoff.maximum(atol.unsqueeze(-1).to(cutoff.dtype))
    return cutoff.clamp_min(atol)


def _positive(atol) -> bool:
    return bool((atol > 0).all()) if isinstance(atol, Tensor) else atol > 0


def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None, rtol=None, out=None) -> Tensor:
    check_matrix(A, "torch.linalg.matrix_rank", square=hermitian, half=None)
    if tol is not None:
        atol, rtol = tol, 0.0
    values = F.eigh_op(A, "L", False)[0].abs() if hermitian else svdvals(A)
    m, n = A.shape[-2], A.shape[-1]
    cutoff = _tolerances(values, m, n, atol, rtol)
    return write_out((values > cutoff).sum(-1), out)


def _masked_reciprocal(values: Tensor, keep: Tensor) -> Tensor:
    """``1 / values`` where ``keep``, else 0 (the dropped values are never divided by, so that their
    gradient is 0 rather than nan)."""
    from ember.core.aten.pointwise.ternary import where_function

    safe = where_function(keep, values, 1.0)
    return where_function(keep, safe.reciprocal(), 0.0)


def pinv(A: Tensor, rcond=None, hermitian: bool = False, *, atol=None, rtol=None, out=None) -> Tensor:
    check_matrix(A, "linalg.pinv", square=hermitian, half=None)
    m, n = A.shape[-2], A.shape[-1]
    if hermitian:
        values, vectors = F.eigh_op(A, "L", True)
        cutoff = _tolerances(values.abs(), m, n, atol, rtol, rcond)
        inverse = _masked_reciprocal(values, values.abs() > cutoff)
        result = (vectors * inverse.unsqueeze(-2)).matmul(mh(vectors))
    else:
        U, values, Vh = svd(A, full_matrices=False)
        cutoff = _tolerances(values, m, n, atol, rtol, rcond)
        inverse = _masked_reciprocal(values, values > cutoff)
        result = (mh(Vh) * inverse.unsqueeze(-2)).matmul(mh(U))
    return write_out(result.contiguous(), out)


def matrix_power(A: Tensor, n: int, *, out=None) -> Tensor:
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"linalg.matrix_power: A must be batches of square matrices, but they are {A.shape[-2] if A.ndim > 1 else 1} "
            f"by {A.shape[-1] if A.ndim else 1} matrices"
        )
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:
        # A copy of A overwritten with the identity: connected to A (with a zero gradient), as in PyTorch.
        result = A.contiguous().clone().copy_(_eye_like(A, A.shape[-1]).expand(A.shape))
    else:
        base = F.inv_ex(A, check_errors=True)[0] if n < 0 else A
        n = abs(n)
        result = None
        while n:
            if n & 1:
                result = base if result is None else result.matmul(base)
            n >>= 1
            if n:
                base = base.matmul(base)
        # A power of one is a copy; the inverse keeps its column-major layout, as PyTorch's does.
        result = A.contiguous().clone() if result is A else result
    return write_out(result, out)


# -- products -------------------------------------------------------------------------------------


def cross(input: Tensor, other: Tensor, *, dim: int = -1, out=None) -> Tensor:
    if input.ndim != other.ndim:
        raise RuntimeError(
            f"linalg.cross: inputs must have the same number of dimensions. Got {input.ndim} and {other.ndim}"
        )
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[dim]} and {other.shape[dim]}"
        )
    from ember.core.aten.shape.joining import cat

    shape = _broadcast(tuple(input.shape), tuple(other.shape))
    a = [input.expand(shape).narrow(dim, i, 1) for i in range(3)]
    b = [other.expand(shape).narrow(dim, i, 1) for i in range(3)]
    result = cat([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]], dim)
    return write_out(result, out)


def _broadcast(a: tuple, b: tuple) -> tuple:
    return tuple(S.batch_shape("linalg.cross", a, b))


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out=None) -> Tensor:
    if x.dtype is not y.dtype:
        raise RuntimeError(
            f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type {type_name(x.dtype)} and y of "
            f"type {type_name(y.dtype)} instead"
        )
    return write_out((x.conj() * y).sum(dim), out)


def multi_dot(tensors: Sequence[Tensor], *, out=None) -> Tensor:
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first_vector, last_vector = tensors[0].ndim == 1, tensors[-1].ndim == 1
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if t.ndim not in allowed:
            where = "first" if i == 0 else "last" if i == len(tensors) - 1 else None
            if where:
                raise RuntimeError(f"multi_dot(): the {where} tensor must be 1D or 2D but got {t.ndim}D")
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    if first_vector:
        tensors[0] = tensors[0].unsqueeze(0)
    if last_vector:
        tensors[-1] = tensors[-1].unsqueeze(-1)
    for i in range(len(tensors) - 1):
        if tensors[i].shape[-1] != tensors[i + 1].shape[0]:
            a, b = tensors[i].shape, tensors[i + 1].shape
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {tuple(a)} and {tuple(b)} cannot be multiplied"
            )
    result = _chain(tensors)
    if first_vector:
        result = result.squeeze(0)
    if last_vector:
        result = result.squeeze(-1)
    return write_out(result, out)


def _chain(tensors: list) -> Tensor:
    """The product in the order of fewest multiplications (the matrix-chain order)."""
    dims = [t.shape[0] for t in tensors] + [tensors[-1].shape[1]]
    count = len(tensors)
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def product(i: int, j: int) -> Tensor:
        if i == j:
            return tensors[i]
        return product(i, split[i][j]).mm(product(split[i][j] + 1, j))

    return product(0, count - 1)


# -- tensor forms ---------------------------------------------------------------------------------


def tensorinv(A: Tensor, ind: int = 2, *, out=None) -> Tensor:
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if math.prod(rows) != math.prod(cols):
        raise RuntimeError(
            f"Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), but got "
            f"{math.prod(cols)} != {math.prod(rows)}"
        )
    inverse = F.inv_ex(A.reshape((math.prod(rows), math.prod(cols))), check_errors=True)[0]
    return write_out(inverse.reshape((*cols, *rows)), out)


def tensorsolve(A: Tensor, B: Tensor, dims=None, *, out=None) -> Tensor:
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = A.movedim(dims, list(range(A.ndim - len(dims), A.ndim)))
    result_shape = tuple(A.shape[B.ndim :])
    rows = math.prod(tuple(B.shape))
    cols = math.prod(result_shape)
    if rows != cols:
        raise RuntimeError(
            f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
            f"but got {cols} != {rows}"
        )
    x = S.solve_ex(A.reshape((rows, cols)), B.reshape((rows,)), check_errors=True)[0]
    return write_out(x.reshape(result_shape), out)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    return A.diagonal(offset, dim1, dim2)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    if x.dtype is D.bool_:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    n = x.shape[-1] if N is None else N
    if N is not None and n < 1:
        raise RuntimeError("N must be greater than 1.")
    ones = x.new_ones((*x.shape, 1))
    if n <= 1:
        return ones[..., :n]
    powers = x.unsqueeze(-1).expand((*x.shape, n - 1)).cumprod(-1)
    from ember.core.aten.shape.joining import cat

    return cat([ones.to(powers.dtype), powers], -1)
