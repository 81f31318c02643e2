"""Sparse kernels of elementwise arithmetic.

Unary ops that map zero to zero (``neg``, ``abs``, ``sqrt``, ``sin``, ...) run the dense op on the
stored values. A linear one (``neg``, multiplying or dividing by a scalar, a cast) keeps duplicate
entries as they are; any other first coalesces, since ``f(a) + f(b)`` is not ``f(a + b)``. Unary ops
that do not keep zeros (``exp``, ``cos``, ``add`` of a scalar) have no sparse kernel.

Binary ops follow PyTorch: ``sparse + sparse`` is sparse, ``dense + sparse`` is dense (``sparse +
dense`` is refused with PyTorch's error), ``sparse * sparse`` keeps the common indices, ``sparse *
dense`` and ``sparse * scalar`` are sparse.
"""

from __future__ import annotations

import numpy as np

from ember.core.dispatch import ops
from ember.core.promotion import promote_types, result_type
from ember.core.sparse.coo import SparseTensor, coalesced, linear_index, make_sparse
from ember.core.sparse.kernels import check_cpu, idx, is_scalar, new_sparse, sparse_kernel, vals, with_values
from ember.core.tensor import Tensor, from_array

aten = ops.aten

_NONLINEAR_ZERO_KEEPING = (
    "abs",
    "sqrt",
    "sin",
    "tan",
    "tanh",
    "asin",
    "atan",
    "sinh",
    "asinh",
    "atanh",
    "expm1",
    "log1p",
    "sign",
    "sgn",
    "trunc",
    "floor",
    "ceil",
    "round",
    "frac",
    "erf",
    "erfinv",
    "relu",
    "deg2rad",
    "rad2deg",
    "signbit",
    "isnan",
    "isinf",
    "isposinf",
    "isneginf",
    "nan_to_num",
    "square",
    "conj_physical",
    "positive",
)
_LINEAR = ("neg",)


def _overload(name: str, overload: str = "default"):
    packet = getattr(aten, name, None)
    return getattr(packet, overload, None) if packet is not None else None


def _unary(op, nonlinear: bool):
    def kernel(self: SparseTensor, *args, **kwargs) -> SparseTensor:
        check_cpu(self, str(op))
        source = coalesced(self) if nonlinear else self
        return with_values(source, op(source._sp_values, *args, **kwargs))

    return kernel


def _unary_inplace(op, nonlinear: bool):
    def kernel(self: SparseTensor, *args, **kwargs) -> SparseTensor:
        if nonlinear and not self._sp_coalesced:
            merged = coalesced(self)
            self._sp_indices, self._sp_values, self._sp_coalesced = merged._sp_indices, merged._sp_values, True
        op(self._sp_values, *args, **kwargs)
        self._bump_version()
        return self

    return kernel


for _name in (*_NONLINEAR_ZERO_KEEPING, *_LINEAR):
    _nonlinear = _name not in _LINEAR
    _functional = _overload(_name)
    if _functional is not None:
        sparse_kernel(_functional)(_unary(_functional, _nonlinear))
    _inplace = _overload(_name + "_")
    if _inplace is not None:
        sparse_kernel(_inplace)(_unary_inplace(_inplace, _nonlinear))


def _positive_exponent(exponent) -> bool:
    return isinstance(exponent, bool | int | float) and exponent > 0


@sparse_kernel(_overload("pow", "Tensor_Scalar"), _overload("pow", "Tensor_Tensor"))
def _pow(self, exponent) -> Tensor:
    if type(self) is not SparseTensor or not _positive_exponent(exponent):
        raise NotImplementedError(
            "pow on a sparse COO tensor takes a positive number as the exponent (0 ** x must stay 0)"
        )
    source = coalesced(self)
    return with_values(source, aten.pow.Tensor_Tensor(source._sp_values, exponent))


# -- multiplication and division by scalars, and products of tensors --------------------------------


@sparse_kernel(aten.mul.Tensor)
def _mul(self, other) -> Tensor:
    if is_scalar(other) and type(self) is SparseTensor:
        return with_values(self, aten.mul.Tensor(self._sp_values, other))
    if is_scalar(self) and type(other) is SparseTensor:
        return with_values(other, aten.mul.Tensor(self, other._sp_values))
    if type(self) is SparseTensor and type(other) is SparseTensor:
        return _mul_sparse(self, other)
    sparse, dense = (self, other) if type(self) is SparseTensor else (other, self)
    return _mul_dense(sparse, dense)


def _mul_sparse(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    if tuple(a._shape) != tuple(b._shape):
        raise RuntimeError(
            f"mul(sparse, sparse): operands have incompatible sizes; self has size {list(a._shape)} "
            f"but other has size {list(b._shape)}"
        )
    if a.sparse_dim() != b.sparse_dim():
        raise RuntimeError("mul(sparse, sparse): both operands need the same number of sparse dimensions")
    check_cpu(a, "mul")
    a, b = coalesced(a), coalesced(b)
    nd = a.sparse_dim()
    sparse_shape = tuple(a._shape[:nd])
    lin_a, lin_b = linear_index(idx(a), sparse_shape), linear_index(idx(b), sparse_shape)
    _, pos_a, pos_b = np.intersect1d(lin_a, lin_b, assume_unique=True, return_indices=True)
    dtype = promote_types(a.dtype, b.dtype)
    va = from_array(np.array(vals(a)[pos_a]), a.dtype)
    vb = from_array(np.array(vals(b)[pos_b]), b.dtype)
    product = aten.mul.Tensor(va, vb)
    return make_sparse(from_array(np.array(idx(a)[:, pos_a])), product.to(dtype), a._shape, True)


def _mul_dense(sparse: SparseTensor, dense: Tensor) -> SparseTensor:
    if tuple(dense._shape) != tuple(sparse._shape):
        raise RuntimeError(
            f"mul(sparse, dense): the dense operand must have the sparse one's size {list(sparse._shape)}, "
            f"got {list(dense._shape)}"
        )
    check_cpu(dense, "mul")
    nd = sparse.sparse_dim()
    picked = dense._array[tuple(idx(sparse))] if nd else np.broadcast_to(dense._array, vals(sparse).shape)
    product = aten.mul.Tensor(sparse._sp_values, from_array(np.array(picked), dense.dtype))
    return with_values(sparse, product)


@sparse_kernel(aten.mul_.Tensor)
def _mul_(self, other) -> Tensor:
    if type(self) is not SparseTensor:
        raise RuntimeError("mul_(dense, sparse) is not supported; use mul(dense, sparse) instead")
    if is_scalar(other):
        # In place on the values, which a detached alias shares, as PyTorch's sparse mul_ does.
        aten.mul_.Tensor(self._sp_values, other)
        self._bump_version()
        return self
    result = _mul(self, other)
    self._sp_indices, self._sp_values, self._sp_coalesced = result._sp_indices, result._sp_values, result._sp_coalesced
    if self._sp_values.dtype is not self.dtype:
        self._sp_values = self._sp_values.to(self.dtype)
    self._bump_version()
    return self


def _divisor_error(other) -> RuntimeError:
    shape = list(other.shape) if isinstance(other, Tensor) else []
    return RuntimeError(
        f"Sparse division requires a scalar or zero-dim dense tensor divisor (got shape {shape} for divisor)"
    )


@sparse_kernel(aten.div.Tensor)
def _div(self, other) -> Tensor:
    if type(self) is SparseTensor and is_scalar(other):
        return with_values(self, aten.div.Tensor(self._sp_values, other))
    raise _divisor_error(other)


@sparse_kernel(aten.div_.Tensor)
def _div_(self, other) -> Tensor:
    if type(self) is SparseTensor and is_scalar(other):
        aten.div_.Tensor(self._sp_values, other)
        self._bump_version()
        return self
    raise _divisor_error(other)


# -- addition ---------------------------------------------------------------------------------------------


def _check_same_size(self: Tensor, other: Tensor) -> None:
    if tuple(self._shape) != tuple(other._shape):
        raise RuntimeError(
            f"add: expected 'self' and 'other' to have same size, but self has size {list(self._shape)} while "
            f"other has size {list(other._shape)} (FYI: dense-sparse addition does not currently support "
            "broadcasting)"
        )


def _scaled_values(t: SparseTensor, alpha) -> Tensor:
    return t._sp_values if alpha == 1 else aten.mul.Tensor(t._sp_values, alpha)


def _add_sparse(self: SparseTensor, other: SparseTensor, alpha) -> SparseTensor:
    _check_same_size(self, other)
    if self.sparse_dim() != other.sparse_dim():
        raise RuntimeError("add: expected sparse operands to have the same sparse_dim")
    dtype = result_type(self, other)
    values = np.concatenate([vals(self).astype(dtype.np), _scaled_values(other, alpha).to(dtype)._array])
    indices = np.concatenate([idx(self), idx(other)], axis=1)
    out = new_sparse(indices, values, self._shape, False, dtype)
    if self._sp_coalesced and other._sp_coalesced:
        out = coalesced(out)  # PyTorch merges two coalesced operands into a coalesced sum
    return out


def _add_into_dense(out: np.ndarray, other: SparseTensor, alpha) -> None:
    values = _scaled_values(other, alpha)._array.astype(out.dtype)
    if other.sparse_dim():
        np.add.at(out, tuple(idx(other)), values)
    else:
        out += values.sum(axis=0)


@sparse_kernel(aten.add.Tensor)
def _add(self, other, *, alpha=1) -> Tensor:
    if type(self) is SparseTensor and type(other) is SparseTensor:
        return _add_sparse(self, other, alpha)
    if type(self) is SparseTensor:
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    _check_same_size(self, other)
    check_cpu(self, "add")
    dtype = result_type(self, other)
    out = np.array(self._array, dtype=dtype.np, copy=True)
    _add_into_dense(out, other, alpha)
    return from_array(out, dtype)


@sparse_kernel(aten.add_.Tensor)
def _add_(self, other, *, alpha=1) -> Tensor:
    if type(other) is not SparseTensor:
        raise RuntimeError("add_(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if type(self) is SparseTensor:
        total = _add_sparse(self, other, alpha)
        self._sp_indices, self._sp_coalesced = total._sp_indices, total._sp_coalesced
        self._sp_values = total._sp_values if total.dtype is self.dtype else total._sp_values.to(self.dtype)
    else:
        _check_same_size(self, other)
        check_cpu(self, "add_")
        _add_into_dense(self._array, other, alpha)
    self._bump_version()
    return self


@sparse_kernel(aten.sub.Tensor)
def _sub(self, other, *, alpha=1) -> Tensor:
    return _add(self, other, alpha=-alpha)


@sparse_kernel(aten.sub_.Tensor)
def _sub_(self, other, *, alpha=1) -> Tensor:
    return _add_(self, other, alpha=-alpha)
