"""Linear systems and determinants, by LAPACK through NumPy: ``linalg_solve_ex``,
``linalg_solve_triangular``, ``linalg_lstsq``, ``linalg_det``, ``linalg_slogdet`` and
``linalg_matrix_exp``. Batch dims of the two operands broadcast, as in PyTorch.

``B`` of ``solve`` is a batch of vectors (``*, n``) rather than of matrices where PyTorch reads it so:
when it has one dim, or one dim fewer than ``A`` with ``A``'s shape less its last dim.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core import reduction as R
from ember.core import return_types
from ember.core.aten.linalg import lapack
from ember.core.aten.linalg.checks import (
    batch_shape,
    check_float,
    check_matrix,
    check_same_dtype,
    column_major,
    raise_on_info,
)
from ember.core.dispatch import define
from ember.core.pointwise import unsupported
from ember.core.tensor import Tensor, empty

solve_ex = define(
    "linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> (Tensor result, Tensor info)",
    ("core",),
)
solve_triangular = define(
    "linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False) -> Tensor",
    ("core",),
)
lstsq_op = define(
    "linalg_lstsq(Tensor self, Tensor b, float? rcond=None, *, str? driver=None) "
    "-> (Tensor solution, Tensor residuals, Tensor rank, Tensor singular_values)",
    ("core",),
)
det_op = define("linalg_det(Tensor A) -> Tensor", ("core",))
slogdet_op = define("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)", ("core",))
matrix_exp_op = define("linalg_matrix_exp(Tensor self) -> Tensor", ("core",))


def is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B._shape) == tuple(A._shape[:-1]))


# -- solve ----------------------------------------------------------------------------------------


def _solve_plan(A: Tensor, B: Tensor, left: bool) -> tuple[bool, tuple, tuple]:
    """(vector, result shape, result strides)."""
    check_matrix(A, "linalg.solve", half="lu")
    check_same_dtype("linalg.solve", A, B)
    vector = is_vector_rhs(A, B)
    n = A._shape[-1]
    if vector:
        if B._shape[-1] != n or (not left and n != 1):
            raise RuntimeError(
                f"linalg.solve: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'} "
                f"({A._shape[-2]}x{n} and {B._shape[-1]}x1)"
            )
        batch = batch_shape("linalg.solve", A._shape[:-2], B._shape[:-1])
        shape = (*batch, n)
        return True, shape, column_major(shape) if len(shape) >= 2 else None
    if B.ndim < 2:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    rows = B._shape[-2] if left else B._shape[-1]
    if rows != n:
        shape_b = f"{B._shape[-2]}x{B._shape[-1]}"
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'} "
            f"({A._shape[-2]}x{n} and {shape_b})"
        )
    batch = batch_shape("linalg.solve", A._shape[:-2], B._shape[:-2])
    shape = (*batch, *B._shape[-2:])
    stride = column_major(shape) if left else _row_major_rows(shape)
    return False, shape, stride


def _row_major_rows(shape: tuple) -> tuple:
    """``XA = B`` is solved as ``A^T X^T = B^T``: the result is the transpose of a column-major one."""
    swapped = column_major((*shape[:-2], shape[-1], shape[-2]))
    return (*swapped[:-2], swapped[-1], swapped[-2])


@solve_ex.register_meta
def _solve_ex_meta(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False):
    _, shape, stride = _solve_plan(A, B, left)
    return return_types.linalg_solve_ex(
        empty(shape, A.dtype, A.device, stride), empty(A._shape[:-2], D.int32, A.device)
    )


def _singular(code: int) -> str:
    return "The solver failed because the input matrix is singular."


@solve_ex.register_kernel("cpu")
def _solve_ex_cpu(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False):
    vector, shape, stride = _solve_plan(A, B, left)
    a, b = R.values(A), R.values(B)
    if vector:
        b = b[..., None]
    if not left:
        a, b = np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2) if not vector else b
    batch = batch_shape("linalg.solve", a.shape[:-2], b.shape[:-2])
    lu, pivots, info = lapack.lu_factor(a)
    if not np.any(info) and a.size and b.size:
        x = np.linalg.solve(np.broadcast_to(a, (*batch, *a.shape[-2:])), np.broadcast_to(b, (*batch, *b.shape[-2:])))
    elif a.size and b.size:
        x = lapack.lu_solve(lu, pivots, b)
    else:
        x = np.zeros((*batch, *b.shape[-2:]), np.result_type(a, b))
    if check_errors:
        raise_on_info(info, "torch.linalg.solve", _singular)
    if vector:
        x = x[..., 0]
    elif not left:
        x = np.swapaxes(x, -1, -2)
    return return_types.linalg_solve_ex(
        R.computed(shape, A.dtype, lambda: x, stride), R.computed(A._shape[:-2], D.int32, lambda: info)
    )


# -- triangular solve -----------------------------------------------------------------------------


def _triangular_plan(A: Tensor, B: Tensor, left: bool) -> tuple:
    if A.ndim >= 2 and A.dtype.category < D.FLOATING:
        raise unsupported("triangular_solve", A.dtype)
    check_matrix(A, "linalg.solve_triangular", half="triangular_solve")
    if B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    check_same_dtype("linalg.solve_triangular", A, B)
    n = A._shape[-1]
    if (B._shape[-2] if left else B._shape[-1]) != n:
        raise RuntimeError(
            f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({A._shape[-2]}x{n} and {B._shape[-2]}x{B._shape[-1]})"
        )
    batch = batch_shape("linalg.solve_triangular", A._shape[:-2], B._shape[:-2])
    return (*batch, *B._shape[-2:])


@solve_triangular.register_meta
def _solve_triangular_meta(self: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False):
    shape = _triangular_plan(self, B, left)
    return empty(shape, self.dtype, self.device, column_major(shape))


@solve_triangular.register_kernel("cpu")
def _solve_triangular_cpu(self: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False):
    shape = _triangular_plan(self, B, left)
    a, b = R.values(self), R.values(B)

    def compute():
        if not a.size or not b.size:
            return np.zeros(shape, a.dtype)
        return lapack.triangular_solve(a, b, bool(upper), bool(left), bool(unitriangular))

    return R.computed(shape, self.dtype, compute, column_major(shape))


# -- least squares --------------------------------------------------------------------------------

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _lstsq_plan(A: Tensor, B: Tensor, driver) -> tuple:
    check_matrix(A, "torch.linalg.lstsq", square=False, arg="A")
    check_float(B, "torch.linalg.lstsq")
    check_same_dtype("torch.linalg.lstsq", A, B)
    if driver is not None and driver not in _DRIVERS:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of {_DRIVERS}")
    vector = B.ndim == A.ndim - 1
    if not vector and B.ndim < 2:
        raise RuntimeError(
            "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1"
        )
    m, n = A._shape[-2], A._shape[-1]
    rows = B._shape[-1] if vector else B._shape[-2]
    if rows != m:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size({-1 if vector else -2})")
    batch = batch_shape("torch.linalg.lstsq", A._shape[:-2], B._shape[:-1] if vector else B._shape[:-2])
    k = None if vector else B._shape[-1]
    return vector, batch, m, n, k, driver or "gelsy"


def _lstsq_shapes(vector, batch, m, n, k, driver):
    solution = (*batch, n) if vector else (*batch, n, k)
    singular = (*batch, min(m, n)) if driver in ("gelsd", "gelss") else (0,)
    rank = tuple(batch) if driver != "gels" else (0,)
    return solution, rank, singular


def _lstsq_stride(vector, batch, m, n, k):
    """LAPACK writes the solution into the rows of a column-major (*, max(m, n), k) buffer."""
    if vector:
        return None
    rows = column_major((*batch, max(m, n), k))
    return rows


@lstsq_op.register_meta
def _lstsq_meta(self: Tensor, b: Tensor, rcond=None, *, driver=None):
    vector, batch, m, n, k, driver = _lstsq_plan(self, b, driver)
    solution, rank, singular = _lstsq_shapes(vector, batch, m, n, k, driver)
    real = self.dtype.to_real()
    stride = _lstsq_stride(vector, batch, m, n, k)
    # Residuals are computed for tall matrices except by gelsy; the CPU kernel leaves them empty
    # where a matrix is rank-deficient, which only the data tells.
    residuals = (*batch, *(() if vector else (k,))) if m > n and driver != "gelsy" else (0,)
    return return_types.linalg_lstsq(
        empty(solution, self.dtype, self.device, stride),
        empty(residuals, real, self.device),
        empty(rank, D.int64, self.device),
        empty(singular, real, self.device),
    )


@lstsq_op.register_kernel("cpu")
def _lstsq_cpu(self: Tensor, b: Tensor, rcond=None, *, driver=None):
    vector, batch, m, n, k, driver = _lstsq_plan(self, b, driver)
    solution_shape, rank_shape, singular_shape = _lstsq_shapes(vector, batch, m, n, k, driver)
    a, rhs = R.values(self), R.values(b)
    if vector:
        rhs = rhs[..., None]
    a = np.broadcast_to(a, (*batch, m, n))
    rhs = np.broadcast_to(rhs, (*batch, m, rhs.shape[-1]))
    eps = np.finfo(a.dtype).eps
    cutoff = rcond if rcond is not None else eps * max(m, n)
    flat_a, flat_b = a.reshape((-1, m, n)), rhs.reshape((-1, m, rhs.shape[-1]))
    xs, ranks, svals = [], [], []
    for matrix, right in zip(flat_a, flat_b, strict=True):
        x, _, rank, s = np.linalg.lstsq(matrix, right, rcond=cutoff)
        xs.append(x)
        ranks.append(rank)
        svals.append(s)
    x = np.stack(xs).reshape((*batch, n, rhs.shape[-1])) if xs else np.zeros((*batch, n, rhs.shape[-1]), a.dtype)
    real = self.dtype.to_real()
    full_rank = all(r == min(m, n) for r in ranks)
    if m > n and driver != "gelsy" and full_rank and flat_a.shape[0]:
        residuals = np.sum(np.abs(np.einsum("...ij,...jk->...ik", a, x) - rhs) ** 2, axis=-2)
        if vector:
            residuals = residuals[..., 0]
    else:
        residuals = np.zeros((0,))
    if vector:
        x = x[..., 0]
    rank = np.array(ranks, np.int64).reshape(rank_shape) if driver != "gels" else np.zeros(0, np.int64)
    singular = (
        np.stack(svals).reshape(singular_shape) if driver in ("gelsd", "gelss") and svals else np.zeros(singular_shape)
    )
    return return_types.linalg_lstsq(
        R.computed(solution_shape, self.dtype, lambda: x, _lstsq_stride(vector, batch, m, n, k)),
        R.computed(residuals.shape, real, lambda: residuals),
        R.computed(rank.shape, D.int64, lambda: rank),
        R.computed(singular.shape, real, lambda: singular),
    )


# -- determinants ---------------------------------------------------------------------------------


@det_op.register_meta
def _det_meta(A: Tensor):
    check_matrix(A, "linalg.det", half="lu")
    return empty(A._shape[:-2], A.dtype, A.device)


@det_op.register_kernel("cpu")
def _det_cpu(A: Tensor):
    check_matrix(A, "linalg.det", half="lu")
    a = R.values(A)
    return R.computed(A._shape[:-2], A.dtype, lambda: np.linalg.det(a) if a.size else np.ones(A._shape[:-2]))


@slogdet_op.register_meta
def _slogdet_meta(A: Tensor):
    check_matrix(A, "linalg.slogdet")
    batch = A._shape[:-2]
    return return_types.linalg_slogdet(empty(batch, A.dtype, A.device), empty(batch, A.dtype.to_real(), A.device))


@slogdet_op.register_kernel("cpu")
def _slogdet_cpu(A: Tensor):
    check_matrix(A, "linalg.slogdet")
    a = R.values(A)
    batch = A._shape[:-2]
    sign, logabs = np.linalg.slogdet(a) if a.size else (np.ones(batch), np.zeros(batch))
    return return_types.linalg_slogdet(
        R.computed(batch, A.dtype, lambda: sign), R.computed(batch, A.dtype.to_real(), lambda: logabs)
    )


# -- matrix exponential ---------------------------------------------------------------------------


@matrix_exp_op.register_meta
def _matrix_exp_meta(self: Tensor):
    check_matrix(self, "linalg.matrix_exp", half=None)
    return empty(self._shape, self.dtype, self.device)


@matrix_exp_op.register_kernel("cpu")
def _matrix_exp_cpu(self: Tensor):
    check_matrix(self, "linalg.matrix_exp", half=None)
    a = R.values(self)
    return R.computed(self._shape, self.dtype, lambda: lapack.expm(a) if a.size else a.copy())
