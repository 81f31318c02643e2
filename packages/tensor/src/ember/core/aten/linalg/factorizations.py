"""Matrix factorizations, by LAPACK through NumPy (or ``lapack.py`` where NumPy has no routine):
``linalg_inv_ex``, ``linalg_cholesky_ex``, ``linalg_qr``, ``_linalg_eigh``, ``linalg_eig`` and
``linalg_lu_factor_ex``. Each factors every matrix of a ``(*, m, n)`` batch on its own.

The ``_ex`` forms report failures in ``info`` (int32, one per matrix, LAPACK's code) and raise
``LinAlgError`` only with ``check_errors=True``; ``ember.linalg``'s plain forms ask for the check.
Results are column-major per matrix, as PyTorch's CPU kernels return them.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core import reduction as R
from ember.core import return_types
from ember.core.aten.linalg import lapack
from ember.core.aten.linalg.checks import check_matrix, column_major, info_tensor, raise_on_info
from ember.core.dispatch import define
from ember.core.tensor import Tensor, empty

inv_ex = define("linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)", ("core",))
cholesky_ex = define(
    "linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)",
    ("core",),
)
qr_op = define("linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)", ("core",))
eigh_op = define(
    "_linalg_eigh(Tensor A, str UPLO='L', bool compute_v=True) -> (Tensor eigenvalues, Tensor eigenvectors)",
    ("core",),
)
eig_op = define("linalg_eig(Tensor self) -> (Tensor eigenvalues, Tensor eigenvectors)", ("core",))
lu_factor_ex = define(
    "linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) "
    "-> (Tensor LU, Tensor pivots, Tensor info)",
    ("core",),
)


def _matrix(shape: tuple, dtype: D.dtype, device) -> Tensor:
    return empty(shape, dtype, device, column_major(shape))


def _singular(code: int) -> str:
    return (
        f"The diagonal element {code} is zero, the inversion could not be completed because the input matrix "
        "is singular."
    )


# -- inverse --------------------------------------------------------------------------------------


@inv_ex.register_meta
def _inv_ex_meta(A: Tensor, *, check_errors: bool = False):
    check_matrix(A, "linalg.inv")
    return return_types.linalg_inv_ex(_matrix(A._shape, A.dtype, A.device), info_tensor(A._shape[:-2], A.device))


def inverse_array(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of each matrix and LAPACK's ``getrf`` info: an invertible matrix's inverse by
    ``gesv``, a singular one's by substitution through its LU (inf and nan, as LAPACK gives)."""
    lu, pivots, info = lapack.lu_factor(a)
    eye = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)
    if not np.any(info):
        return np.linalg.solve(a, eye) if a.size else np.array(eye), info
    return lapack.lu_solve(lu, pivots, eye), info


@inv_ex.register_kernel("cpu")
def _inv_ex_cpu(A: Tensor, *, check_errors: bool = False):
    check_matrix(A, "linalg.inv")
    inverse, info = inverse_array(R.values(A))
    if check_errors:
        raise_on_info(info, "linalg.inv", _singular)
    return return_types.linalg_inv_ex(
        R.computed(A._shape, A.dtype, lambda: inverse, column_major(A._shape)),
        R.computed(A._shape[:-2], D.int32, lambda: info),
    )


# -- Cholesky -------------------------------------------------------------------------------------


def _not_pd(code: int) -> str:
    return (
        "The factorization could not be completed because the input is not positive-definite "
        f"(the leading minor of order {code} is not positive-definite)."
    )


@cholesky_ex.register_meta
def _cholesky_ex_meta(self: Tensor, *, upper: bool = False, check_errors: bool = False):
    check_matrix(self, "linalg.cholesky", half="cholesky")
    return return_types.linalg_cholesky_ex(
        _matrix(self._shape, self.dtype, self.device), info_tensor(self._shape[:-2], self.device)
    )


def _cholesky_array(a: np.ndarray, upper: bool) -> tuple[np.ndarray, np.ndarray]:
    info = lapack.cholesky_info(a)
    lower = np.tril(a)
    hermitian = lower + np.conj(np.swapaxes(np.tril(a, -1), -1, -2))
    flat = hermitian.reshape((-1, *a.shape[-2:]))
    codes = info.reshape(-1)
    out = np.zeros_like(flat)
    good = codes == 0
    if good.any():
        out[good] = np.linalg.cholesky(flat[good])
    for i in np.flatnonzero(~good):
        # LAPACK stops at the failing minor: the factor of the minor before it, zeros after.
        order = int(codes[i]) - 1
        if order:
            out[i, :order, :order] = np.linalg.cholesky(flat[i, :order, :order])
    out = out.reshape(a.shape)
    return (np.conj(np.swapaxes(out, -1, -2)) if upper else out), info


@cholesky_ex.register_kernel("cpu")
def _cholesky_ex_cpu(self: Tensor, *, upper: bool = False, check_errors: bool = False):
    check_matrix(self, "linalg.cholesky", half="cholesky")
    factor, info = _cholesky_array(R.values(self), upper)
    if check_errors:
        raise_on_info(info, "linalg.cholesky", _not_pd)
    return return_types.linalg_cholesky_ex(
        R.computed(self._shape, self.dtype, lambda: factor, column_major(self._shape)),
        R.computed(self._shape[:-2], D.int32, lambda: info),
    )


# -- QR -------------------------------------------------------------------------------------------


def _qr_shapes(A: Tensor, mode: str) -> tuple[tuple, tuple]:
    check_matrix(A, "linalg.qr", square=False, half="geqrf")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"
        )
    *batch, m, n = A._shape
    k = min(m, n)
    if mode == "r":
        return (0,), (*batch, k, n)
    if mode == "complete":
        return (*batch, m, m), (*batch, m, n)
    return (*batch, m, k), (*batch, k, n)


@qr_op.register_meta
def _qr_meta(A: Tensor, mode: str = "reduced"):
    q_shape, r_shape = _qr_shapes(A, mode)
    q = empty(q_shape, A.dtype, A.device) if mode == "r" else _matrix(q_shape, A.dtype, A.device)
    return return_types.linalg_qr(q, _matrix(r_shape, A.dtype, A.device))


@qr_op.register_kernel("cpu")
def _qr_cpu(A: Tensor, mode: str = "reduced"):
    q_shape, r_shape = _qr_shapes(A, mode)
    a = R.values(A)
    if mode == "r":
        r = np.linalg.qr(a, mode="r") if a.size else np.zeros(r_shape, a.dtype)
        q = np.zeros((0,), a.dtype)
    elif a.size:
        q, r = np.linalg.qr(a, mode=mode)
    else:
        m = A._shape[-2]
        q = np.broadcast_to(np.eye(m, q_shape[-1], dtype=a.dtype), q_shape)
        r = np.zeros(r_shape, a.dtype)
    q_stride = None if mode == "r" else column_major(q_shape)
    return return_types.linalg_qr(
        R.computed(q_shape, A.dtype, lambda: q, q_stride),
        R.computed(r_shape, A.dtype, lambda: r, column_major(r_shape)),
    )


# -- Hermitian eigendecomposition -----------------------------------------------------------------


def _eigh_check(A: Tensor, UPLO: str) -> None:
    check_matrix(A, "linalg.eigh", half="linalg_eigh")
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


@eigh_op.register_meta
def _eigh_meta(A: Tensor, UPLO: str = "L", compute_v: bool = True):
    _eigh_check(A, UPLO)
    vectors = _matrix(A._shape, A.dtype, A.device) if compute_v else empty((0,), A.dtype, A.device)
    return return_types.linalg_eigh(empty(A._shape[:-1], A.dtype.to_real(), A.device), vectors)


@eigh_op.register_kernel("cpu")
def _eigh_cpu(A: Tensor, UPLO: str = "L", compute_v: bool = True):
    _eigh_check(A, UPLO)
    a = R.values(A)
    if a.size and not np.all(np.isfinite(a)):
        raise RuntimeError(
            "linalg.eigh: The algorithm failed to converge because the input matrix contained non-finite values."
        )
    uplo = UPLO.upper()
    if compute_v:
        w, v = np.linalg.eigh(a, UPLO=uplo) if a.size else (np.zeros(A._shape[:-1]), np.zeros(A._shape, a.dtype))
        vectors = R.computed(A._shape, A.dtype, lambda: v, column_major(A._shape))
    else:
        w = np.linalg.eigvalsh(a, UPLO=uplo) if a.size else np.zeros(A._shape[:-1])
        vectors = R.computed((0,), A.dtype, lambda: np.zeros(0, a.dtype))
    return return_types.linalg_eigh(R.computed(A._shape[:-1], A.dtype.to_real(), lambda: w), vectors)


# -- general eigendecomposition -------------------------------------------------------------------


@eig_op.register_meta
def _eig_meta(self: Tensor):
    check_matrix(self, "linalg.eig", half="linalg_eig_out")
    complex_dtype = self.dtype.to_complex()
    return return_types.linalg_eig(
        empty(self._shape[:-1], complex_dtype, self.device), _matrix(self._shape, complex_dtype, self.device)
    )


@eig_op.register_kernel("cpu")
def _eig_cpu(self: Tensor):
    check_matrix(self, "linalg.eig", half="linalg_eig_out")
    a = R.values(self)
    if a.size and not np.all(np.isfinite(a)):
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    complex_dtype = self.dtype.to_complex()
    if a.size:
        w, v = np.linalg.eig(a)
    else:
        w, v = np.zeros(self._shape[:-1]), np.zeros(self._shape)
    return return_types.linalg_eig(
        R.computed(self._shape[:-1], complex_dtype, lambda: w.astype(complex_dtype.np)),
        R.computed(self._shape, complex_dtype, lambda: v.astype(complex_dtype.np), column_major(self._shape)),
    )


# -- LU -------------------------------------------------------------------------------------------


def _lu_check(A: Tensor, pivot: bool) -> None:
    check_matrix(A, "torch.lu_factor", square=False, half="lu")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


@lu_factor_ex.register_meta
def _lu_factor_ex_meta(A: Tensor, *, pivot: bool = True, check_errors: bool = False):
    _lu_check(A, pivot)
    *batch, m, n = A._shape
    k = min(m, n)
    return return_types.linalg_lu_factor_ex(
        _matrix(A._shape, A.dtype, A.device), empty((*batch, k), D.int32, A.device), info_tensor(tuple(batch), A.device)
    )


@lu_factor_ex.register_kernel("cpu")
def _lu_factor_ex_cpu(A: Tensor, *, pivot: bool = True, check_errors: bool = False):
    _lu_check(A, pivot)
    *batch, m, n = A._shape
    lu, pivots, info = lapack.lu_factor(R.values(A))
    if check_errors:
        raise_on_info(
            info,
            "torch.linalg.lu_factor_ex",
            lambda code: (
                f"U[{code},{code}] is zero and using it on lu_solve would result in a division by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
            ),
        )
    return return_types.linalg_lu_factor_ex(
        R.computed(A._shape, A.dtype, lambda: lu, column_major(A._shape)),
        R.computed((*batch, min(m, n)), D.int32, lambda: pivots),
        R.computed(tuple(batch), D.int32, lambda: info),
    )


# -- Householder QR (LAPACK's raw form) -----------------------------------------------------------

geqrf_op = define("geqrf(Tensor self) -> (Tensor a, Tensor tau)", ("core",))


def _geqrf_check(self: Tensor) -> None:
    if self.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    check_matrix(self, "torch.geqrf", square=False, half="geqrf")


@geqrf_op.register_meta
def _geqrf_meta(self: Tensor):
    _geqrf_check(self)
    *batch, m, n = self._shape
    return return_types.geqrf(
        _matrix(self._shape, self.dtype, self.device), empty((*batch, min(m, n)), self.dtype, self.device)
    )


@geqrf_op.register_kernel("cpu")
def _geqrf_cpu(self: Tensor):
    _geqrf_check(self)
    *batch, m, n = self._shape
    a = R.values(self)
    flat = a.reshape((-1, m, n))
    reflectors = np.zeros_like(flat)
    taus = np.zeros((flat.shape[0], min(m, n)), a.dtype)
    for i, matrix in enumerate(flat):
        if matrix.size:
            h, tau = np.linalg.qr(matrix, mode="raw")  # h is LAPACK's array, transposed
            reflectors[i], taus[i] = h.T, tau
    return return_types.geqrf(
        R.computed(self._shape, self.dtype, lambda: reflectors, column_major(self._shape)),
        R.computed((*batch, min(m, n)), self.dtype, lambda: taus),
    )


# -- LDL^T (Bunch-Kaufman) ------------------------------------------------------------------------

ldl_factor_ex = define(
    "linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False, bool check_errors=False) "
    "-> (Tensor LD, Tensor pivots, Tensor info)",
    ("core",),
)
ldl_solve_op = define(
    "linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> Tensor", ("core",)
)


def _ldl_check(A: Tensor, hermitian: bool, name: str) -> None:
    check_matrix(A, name, half="ldl_factor")
    if hermitian and A.dtype.category == D.COMPLEX:
        raise NotImplementedError(f"{name}: hermitian=True for complex inputs needs the complex conjugate")


@ldl_factor_ex.register_meta
def _ldl_factor_ex_meta(self: Tensor, *, hermitian: bool = False, check_errors: bool = False):
    _ldl_check(self, hermitian, "torch.linalg.ldl_factor_ex")
    return return_types.linalg_ldl_factor_ex(
        _matrix(self._shape, self.dtype, self.device),
        empty(self._shape[:-1], D.int32, self.device),
        info_tensor(self._shape[:-2], self.device),
    )


@ldl_factor_ex.register_kernel("cpu")
def _ldl_factor_ex_cpu(self: Tensor, *, hermitian: bool = False, check_errors: bool = False):
    _ldl_check(self, hermitian, "torch.linalg.ldl_factor_ex")
    n = self._shape[-1]
    flat = R.values(self).reshape((-1, n, n))
    factors, pivots, info = np.zeros_like(flat), np.zeros(flat.shape[:2], np.int32), np.zeros(len(flat), np.int32)
    for i, matrix in enumerate(flat):
        factors[i], pivots[i], info[i] = lapack.ldl_factor(matrix)
    batch = self._shape[:-2]
    if check_errors:
        raise_on_info(
            info.reshape(batch),
            "torch.linalg.ldl_factor",
            lambda code: (
                f"The factorization could not be completed because the block diagonal D[{code}, {code}] "
                "is zero: the input is singular."
            ),
        )
    return return_types.linalg_ldl_factor_ex(
        R.computed(self._shape, self.dtype, lambda: factors, column_major(self._shape)),
        R.computed(self._shape[:-1], D.int32, lambda: pivots),
        R.computed(batch, D.int32, lambda: info),
    )


def _ldl_solve_shape(LD: Tensor, pivots: Tensor, B: Tensor, hermitian: bool) -> tuple:
    _ldl_check(LD, hermitian, "torch.linalg.ldl_solve")
    if B.ndim < 2:
        raise RuntimeError(
            "torch.linalg.ldl_solve: Expected B to have at least 2 dimensions, but it has 1 dimensions instead"
        )
    if pivots.dtype is not D.int32:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected pivots to be integers. Got {pivots.dtype}")
    if LD.dtype is not B.dtype:
        raise RuntimeError("torch.linalg.ldl_solve: Expected LD and B to have the same dtype")
    if B._shape[-2] != LD._shape[-1]:
        raise RuntimeError("torch.linalg.ldl_solve: Incompatible shapes of LD and B for the equation LD X = B")
    from ember.core.aten.linalg.checks import batch_shape

    batch = batch_shape("torch.linalg.ldl_solve", LD._shape[:-2], pivots._shape[:-1], B._shape[:-2])
    return (*batch, *B._shape[-2:])


@ldl_solve_op.register_meta
def _ldl_solve_meta(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False):
    shape = _ldl_solve_shape(LD, pivots, B, hermitian)
    return _matrix(shape, LD.dtype, LD.device)


@ldl_solve_op.register_kernel("cpu")
def _ldl_solve_cpu(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False):
    shape = _ldl_solve_shape(LD, pivots, B, hermitian)
    batch = shape[:-2]
    n = LD._shape[-1]
    factors = np.broadcast_to(R.values(LD), (*batch, n, n))
    pivot_rows = np.broadcast_to(
        np.asarray(pivots._array if pivots._array is not None else R.values(pivots)), (*batch, n)
    )
    rhs = np.broadcast_to(R.values(B), shape)
    out = np.zeros(shape, np.result_type(factors, rhs))
    for index in np.ndindex(*batch):
        out[index] = lapack.ldl_solve(factors[index], pivot_rows[index], rhs[index])
    return R.computed(shape, LD.dtype, lambda: out, column_major(shape))
