"""Vector norms: ``ember.linalg.vector_norm`` (aten ``linalg_vector_norm``) and ``ember.norm``.

ord inf/-inf are the max/min of ``|x|``, 0 counts the nonzero elements, any other p is
``sum(|x|**p) ** (1/p)``. Powers are taken in the input's compute dtype (float32 for float32 and the
half types, as PyTorch's kernel does, so squares of 1e30 overflow to inf there too); sums accumulate
in float64. The result dtype is the real dtype of ``dtype=`` (or of the input). ``ember.norm`` is
PyTorch's deprecated front end: 'fro' and numbers go to ``vector_norm``, 'nuc' to ``nuclear_norm``
(the sum of singular values over two dims, by NumPy's SVD); other matrix norms are not here.
"""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtypes as D
from ember.core import reduction as R
from ember.core.api import method, public
from ember.core.dispatch import define
from ember.core.layout import contiguous_strides, normalize_dim
from ember.core.pointwise import type_name
from ember.core.promotion import promote_types
from ember.core.tensor import Tensor, empty

vector_norm_op = define(
    "linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    ("reduction", "core"),
)
vector_norm_out = define(
    "linalg_vector_norm.out(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None, "
    "Tensor(a!) out) -> Tensor(a!)",
    ("reduction", "out"),
)


def _ord(ord) -> float:
    if isinstance(ord, Tensor):
        ord = ord.item()
    if isinstance(ord, complex):
        raise RuntimeError("linalg.vector_norm: Expected a non-complex scalar as the order of norm.")
    if not isinstance(ord, int | float | np.number):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    return float(ord)


def _ord_name(p: float) -> str:
    return str(int(p)) if p.is_integer() else str(p)


def _check(self: Tensor, p: float, dtype, plan) -> D.dtype:
    if self.dtype.category < D.FLOATING:
        raise RuntimeError(
            f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {type_name(self.dtype)}"
        )
    dtype = R.check_dtype_arg(dtype)
    if dtype is not None:
        if dtype.category < D.FLOATING:
            raise RuntimeError(
                f"linalg.vector_norm: dtype should be floating point or complex, but got {type_name(dtype)}"
            )
        if (self.dtype.category == D.COMPLEX) != (dtype.category == D.COMPLEX):
            kind = "complex for complex" if self.dtype.category == D.COMPLEX else "real for real"
            raise RuntimeError(f"linalg.vector_norm: dtype should be {kind} inputs, but got {type_name(dtype)}")
        if promote_types(self.dtype, dtype) is not dtype:
            raise RuntimeError(
                f"linalg.vector_norm: the dtype of the input ({type_name(self.dtype)}) should be convertible without "
                f"narrowing to the specified dtype ({type_name(dtype)})"
            )
    if p < 0 or math.isinf(p):
        name = "inf" if p == math.inf else "-inf" if p == -math.inf else _ord_name(p)
        if self.numel() == 0 and len(plan.axes) == self.ndim:
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {name} norm on an empty tensor because the operation does "
                "not have an identity"
            )
        for axis in plan.axes:
            if self._shape[axis] == 0:
                raise RuntimeError(
                    f"linalg.vector_norm cannot compute the {name} norm on the dimension {axis} because this "
                    "dimension is empty and the operation does not have an identity"
                )
    return dtype or self.dtype


def _vector_norm_plan(self: Tensor, ord, dim, keepdim: bool, dtype) -> tuple[float, R.Plan, D.dtype]:
    """The order, the plan and the dtype the norm is computed in (its result is that dtype's real one)."""
    p = _ord(ord)
    plan = R.plan(self, dim, keepdim)
    return p, plan, _check(self, p, dtype, plan)


def _vector_norm_meta(self: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    _, plan, compute_dtype = _vector_norm_plan(self, ord, dim, keepdim, dtype)
    return empty(plan.shape, compute_dtype.to_real(), self.device)


def _vector_norm(self: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    p, plan, compute_dtype = _vector_norm_plan(self, ord, dim, keepdim, dtype)

    def compute():
        x = np.abs(R.values(self, compute_dtype))  # float32 for the half types, real for complex
        axes = plan.axes
        if p == math.inf:
            return np.max(x, axis=axes) if x.size else np.zeros(plan.shape)
        if p == -math.inf:
            return np.min(x, axis=axes) if x.size else np.zeros(plan.shape)
        if p == 0:
            return np.sum(x != 0, axis=axes, dtype=np.float64)
        if p == 1:
            return np.sum(x, axis=axes, dtype=np.float64)
        powered = x * x if p == 2 else x ** x.dtype.type(p)
        total = np.sum(powered, axis=axes, dtype=np.float64).astype(x.dtype)
        return np.sqrt(total) if p == 2 else total ** x.dtype.type(1.0 / p)

    return R.computed(plan.shape, compute_dtype.to_real(), compute)


def _vector_norm_with_out(functional, write):
    def out_kernel(self: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None, out) -> Tensor:
        result = functional(self, ord, dim, keepdim, dtype=dtype)
        R.check_out_dtype(out, result.dtype)
        return write(out, result)

    return out_kernel


R.register(vector_norm_op, _vector_norm, _vector_norm_meta)
R.register(
    vector_norm_out,
    _vector_norm_with_out(_vector_norm, R.write_out),
    _vector_norm_with_out(_vector_norm_meta, R.fit_out),
)


@R.numpy_names
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """``ember.linalg.vector_norm``: the ``ord``-norm of ``x`` over ``dim`` (every dimension by default)."""
    if isinstance(ord, str):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    R.as_dims(dim)
    if out is not None:
        return vector_norm_out(x, ord, dim, keepdim, dtype=dtype, out=out)
    return vector_norm_op(x, ord, dim, keepdim, dtype=dtype)


@public("norm")
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """``ember.norm``: PyTorch's deprecated norm front end, for vector norms."""
    dims = [dim] if isinstance(dim, int) and not isinstance(dim, bool) else dim
    if isinstance(p, str):
        if p == "fro" and (dims is None or len(dims) <= 2):
            return vector_norm(input, 2, dims, keepdim, dtype=dtype, out=out)
        dims = list(range(input.ndim)) if dims is None else list(dims)
        if len(dims) != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dims))}")
        R.plan(input, dims, keepdim)  # duplicate or out-of-range dims raise as in PyTorch
        if p != "nuc":
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
        return _nuclear_front(input, dims, keepdim, dtype, out)
    return vector_norm(input, 2.0 if p is None else p, dims, keepdim, dtype=dtype, out=out)


# -- the nuclear norm ----------------------------------------------------------------------------------

nuclear_norm_op = define("nuclear_norm.dim(Tensor self, int[2] dim, bool keepdim=False) -> Tensor", ("reduction",))
nuclear_norm_out = define(
    "nuclear_norm.dim_out(Tensor self, int[2] dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)",
    ("reduction", "out"),
)


def _check_matrix_input(self: Tensor) -> None:
    if self.dtype.category < D.FLOATING:
        raise RuntimeError(
            f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got {type_name(self.dtype)}"
        )
    if self.dtype.itemsize == 2:
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got {type_name(self.dtype)}")


def _nuclear_norm_plan(self: Tensor, dim, keepdim: bool) -> tuple[int, int, R.Plan, tuple | None]:
    """The two matrix dims, the plan, and the result's strides (None: contiguous)."""
    _check_matrix_input(self)
    dims = R.as_dims(dim)
    if dims is None or len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dims or ()))}")
    first, second = (normalize_dim(d, self.ndim) for d in dims)
    if first == second:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, {dims[1]})")
    plan = R.plan(self, (first, second), keepdim)
    # PyTorch computes the norm without keepdim, then gives the kept size-1 dims stride 1.
    stride = None
    if keepdim:
        inner = iter(contiguous_strides(R.plan(self, (first, second), False).shape))
        stride = tuple(1 if i in (first, second) else next(inner) for i in range(self.ndim))
    return first, second, plan, stride


def _nuclear_norm_meta(self: Tensor, dim, keepdim: bool = False) -> Tensor:
    _, _, plan, stride = _nuclear_norm_plan(self, dim, keepdim)
    return empty(plan.shape, self.dtype.to_real(), self.device, stride)


def _nuclear_norm(self: Tensor, dim, keepdim: bool = False) -> Tensor:
    first, second, plan, stride = _nuclear_norm_plan(self, dim, keepdim)

    def compute():
        matrices = np.moveaxis(self._array, (first, second), (-2, -1))
        if matrices.size == 0:
            return np.zeros(plan.shape)
        if not np.all(np.isfinite(matrices)):
            raise RuntimeError(
                "linalg.svd: The algorithm failed to converge because the input matrix contained non-finite values."
            )
        return np.linalg.svd(matrices, compute_uv=False).sum(-1)

    return R.computed(plan.shape, self.dtype.to_real(), compute, stride)


def _nuclear_norm_with_out(functional, write):
    def out_kernel(self: Tensor, dim, keepdim: bool = False, *, out) -> Tensor:
        result = functional(self, dim, keepdim)
        if isinstance(out, Tensor) and out.dtype is not result.dtype:
            raise RuntimeError(
                f"linalg.matrix_norm expected out tensor dtype {type_name(result.dtype)} but got: "
                f"{type_name(out.dtype)}"
            )
        return write(out, result)

    return out_kernel


R.register(nuclear_norm_op, _nuclear_norm, _nuclear_norm_meta)
R.register(
    nuclear_norm_out,
    _nuclear_norm_with_out(_nuclear_norm, R.write_out),
    _nuclear_norm_with_out(_nuclear_norm_meta, R.fit_out),
)


def _nuclear_front(input: Tensor, dims: list, keepdim: bool, dtype, out):
    """``norm(p='nuc')``: PyTorch's ``linalg.matrix_norm`` checks, then ``nuclear_norm``."""
    _check_matrix_input(input)
    dtype = R.check_dtype_arg(dtype)
    if dtype is not None and dtype is not input.dtype:
        if promote_types(input.dtype, dtype) is not dtype:
            raise RuntimeError(
                f"linalg.matrix_norm: the dtype of the input ({type_name(input.dtype)}) should be convertible without "
                f"narrowing to the specified dtype ({type_name(dtype)})"
            )
        input = input.to(dtype)
    if out is not None:
        return nuclear_norm_out(input, dims, keepdim, out=out)
    return nuclear_norm_op(input, dims, keepdim)


@method("norm")
def _norm_method(self, p="fro", dim=None, keepdim=False, dtype=None):
    return norm(self, p, dim, keepdim, dtype=dtype)
