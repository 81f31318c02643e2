"""Products built from the matrix products: ``addmv``, ``addr``, ``addbmm`` and ``kron``; and ``vander``
(running products of a column).

Each is a composite, as in PyTorch: ``beta * self + alpha * product``, where ``beta == 0`` ignores
``self`` (nan and inf included) and a factor of 1 is not multiplied in, so bool and integer tensors
keep their dtype. ``kron`` multiplies interleaved broadcast views and merges each pair of dims.
Autograd and vmap reach the parts.
"""

from __future__ import annotations

import functools

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.aten.linalg import matmul
from ember.core.aten.shape.joining import cat
from ember.core.dispatch import define
from ember.core.pointwise import type_name
from ember.core.reduction import fit_out
from ember.core.tensor import Tensor


def _scalar_checks(name: str, dtype: D.dtype, beta, alpha) -> None:
    for arg, value in (("beta", beta), ("alpha", alpha)):
        if dtype.category <= D.INTEGRAL and dtype is not D.bool_ and isinstance(value, float):
            raise RuntimeError(f"For integral input tensors, argument {arg} must not be a floating point number.")
        if dtype is D.bool_ and not isinstance(value, bool) and value not in (0, 1):
            raise RuntimeError(f"Boolean {arg} only supported for Boolean results.")


def _scaled(t: Tensor, factor) -> Tensor:
    if t.dtype is D.bool_:
        return t if factor else t.logical_and(False)
    return t if factor == 1 else t * factor


def _combine(self: Tensor, product: Tensor, beta, alpha) -> Tensor:
    product = _scaled(product, alpha)
    if beta == 0:
        return product
    scaled = _scaled(self, beta)
    if product.dtype is D.bool_:
        return scaled.logical_or(product)
    return scaled + product


def _wide(fn):
    """float16 and bfloat16 compute in float32 and round once, as PyTorch's kernels accumulate."""

    @functools.wraps(fn)  # the schema's argument names, for the signature check and for keywords
    def run(self: Tensor, a: Tensor, b: Tensor, *, beta=1, alpha=1) -> Tensor:
        if self.dtype in (D.float16, D.bfloat16) and a.dtype is self.dtype and b.dtype is self.dtype:
            wide = fn(self.float(), a.float(), b.float(), beta=beta, alpha=alpha)
            return wide.to(self.dtype)
        return fn(self, a, b, beta=beta, alpha=alpha)

    return run


def _same_dtype(name: str, *tensors: Tensor) -> None:
    first = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype is not first:
            names = ", ".join(type_name(x.dtype) for x in tensors)
            raise RuntimeError(f"{name} input tensors must have the same dtype, but got {names}")


def _check_inplace_shape(self: Tensor, result: Tensor, name: str) -> None:
    if tuple(self._shape) != tuple(result._shape):
        raise RuntimeError(
            f"{name}: output with shape {list(self._shape)} doesn't match the broadcast shape {list(result._shape)}"
        )


def _write(out: Tensor, result: Tensor) -> Tensor:
    if isinstance(out, Tensor) and out.dtype is not result.dtype:
        raise RuntimeError(
            f"Expected out tensor to have dtype {type_name(result.dtype).lower()}, but got "
            f"{type_name(out.dtype).lower()} instead"
        )
    fit_out(out, result)
    return out.copy_(result)


# -- addmv ---------------------------------------------------------------------------------------------------

addmv = define("addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor")
addmv_ = define(
    "addmv_(Tensor(a!) self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor(a!)", ("inplace",)
)
addmv_out = define(
    "addmv.out(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    ("out",),
)


@_wide
def _addmv(self: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    if mat.ndim != 2 or vec.ndim != 1 or self.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {self.ndim}, {mat.ndim}, {vec.ndim}")
    if self.ndim == 1 and self._shape[0] not in (1, mat._shape[0]):
        raise RuntimeError(
            f"size mismatch, got input ({self._shape[0]}), mat ({mat._shape[0]}x{mat._shape[1]}), vec ({vec._shape[0]})"
        )
    _same_dtype("addmv", self, mat, vec)
    _scalar_checks("addmv", self.dtype, beta, alpha)
    return _combine(self, matmul.mv(mat, vec), beta, alpha)


addmv.register_decomposition(_addmv)


addmv_.register_decomposition(
    lambda self, mat, vec, *, beta=1, alpha=1: _inplace(self, _addmv(self, mat, vec, beta=beta, alpha=alpha), "addmv_")
)
addmv_out.register_decomposition(
    lambda self, mat, vec, *, beta=1, alpha=1, out: _write(out, _addmv(self, mat, vec, beta=beta, alpha=alpha))
)


def _inplace(self: Tensor, result: Tensor, name: str) -> Tensor:
    _check_inplace_shape(self, result, name)
    return self.copy_(result)


# -- addr --------------------------------------------------------------------------------------------------

addr = define("addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor")
addr_ = define(
    "addr_(Tensor(a!) self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor(a!)", ("inplace",)
)
addr_out = define(
    "addr.out(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    ("out",),
)


@addr.register_decomposition
def _addr(self: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    if vec1.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D")
    if vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    product = matmul.outer(vec1, vec2)
    _scalar_checks("addr", product.dtype, beta, alpha)
    return _combine(self, product, beta, alpha)


addr_.register_decomposition(
    lambda self, vec1, vec2, *, beta=1, alpha=1: _inplace(
        self, _addr(self, vec1, vec2, beta=beta, alpha=alpha), "addr_"
    )
)
addr_out.register_decomposition(
    lambda self, vec1, vec2, *, beta=1, alpha=1, out: _write(out, _addr(self, vec1, vec2, beta=beta, alpha=alpha))
)


# -- addbmm ------------------------------------------------------------------------------------------------

addbmm = define("addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor")
addbmm_ = define(
    "addbmm_(Tensor(a!) self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor(a!)",
    ("inplace",),
)
addbmm_out = define(
    "addbmm.out(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out) "
    "-> Tensor(a!)",
    ("out",),
)


@_wide
def _addbmm(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    if batch1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    _same_dtype("addbmm", self, batch1, batch2)
    _scalar_checks("addbmm", self.dtype, beta, alpha)
    product = matmul.bmm(batch1, batch2).sum(0, dtype=batch1.dtype)
    return _combine(self, product, beta, alpha)


addbmm.register_decomposition(_addbmm)


addbmm_.register_decomposition(
    lambda self, batch1, batch2, *, beta=1, alpha=1: _inplace(
        self, _addbmm(self, batch1, batch2, beta=beta, alpha=alpha), "addbmm_"
    )
)
addbmm_out.register_decomposition(
    lambda self, batch1, batch2, *, beta=1, alpha=1, out: _write(
        out, _addbmm(self, batch1, batch2, beta=beta, alpha=alpha)
    )
)


def _expose_add(name: str, functional, inplace, out_op) -> None:
    def function(input, a, b, *, beta=1, alpha=1, out=None):
        if out is None:
            return functional(input, a, b, beta=beta, alpha=alpha)
        return out_op(input, a, b, beta=beta, alpha=alpha, out=out)

    def tensor_method(self, a, b, *, beta=1, alpha=1):
        return functional(self, a, b, beta=beta, alpha=alpha)

    def tensor_inplace(self, a, b, *, beta=1, alpha=1):
        return inplace(self, a, b, beta=beta, alpha=alpha)

    function.__name__ = tensor_method.__name__ = name
    tensor_inplace.__name__ = name + "_"
    public(name)(function)
    method(name)(tensor_method)
    method(name + "_")(tensor_inplace)


_expose_add("addmv", addmv, addmv_, addmv_out)
_expose_add("addr", addr, addr_, addr_out)
_expose_add("addbmm", addbmm, addbmm_, addbmm_out)


# -- kron --------------------------------------------------------------------------------------------------

kron = define("kron(Tensor self, Tensor other) -> Tensor")
kron_out = define("kron.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", ("out",))


@kron.register_decomposition
def _kron(self: Tensor, other: Tensor) -> Tensor:
    n = max(self.ndim, other.ndim)
    a_shape = (1,) * (n - self.ndim) + tuple(self._shape)
    b_shape = (1,) * (n - other.ndim) + tuple(other._shape)
    # a[i0, 1, i1, 1, ...] * b[1, j0, 1, j1, ...], then each (i_k, j_k) pair merged.
    a = self.reshape(tuple(s for d in a_shape for s in (d, 1)))
    b = other.reshape(tuple(s for d in b_shape for s in (1, d)))
    return (a * b).reshape(tuple(x * y for x, y in zip(a_shape, b_shape, strict=True)))


kron_out.register_decomposition(lambda self, other, *, out: _write(out, _kron(self, other)))


@public("kron")
def _kron_function(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    return kron(input, other) if out is None else kron_out(input, other, out=out)


@method("kron")
def _kron_method(self: Tensor, other: Tensor) -> Tensor:
    return kron(self, other)


# -- vander ------------------------------------------------------------------------------------------------

vander = define("vander(Tensor x, int? N=None, bool increasing=False) -> Tensor")


@vander.register_decomposition
def _vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x._shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    # Integers and bools widen to int64, as PyTorch promotes with long; the powers are running products.
    dtype = x.dtype if x.dtype.category >= D.FLOATING else D.int64
    column = x.to(dtype).unsqueeze(1)
    ones = column.new_ones((x._shape[0], 1 if n > 0 else 0))
    if n > 1:
        result = cat([ones, column.expand((x._shape[0], n - 1))], 1).cumprod(1)
    else:
        result = ones
    return result if increasing else result.flip([1])


@public("vander")
def _vander_function(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    return vander(x, N, increasing)
