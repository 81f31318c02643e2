"""Matrix products: ``mm``, ``bmm``, ``addmm``, ``baddbmm``, ``dot``, ``vdot``, ``mv``, ``outer``, and the
composites ``matmul`` (``@``) and ``linear``.

The kernels are NumPy's ``matmul`` (BLAS for the float types). float16 and bfloat16 operands are
multiplied in float32 and the result rounded once, as PyTorch's CPU kernels accumulate in float;
integer products wrap like PyTorch's (the low bits of a sum do not depend on the accumulator's width).
The operands must share a dtype (no promotion), and bool is refused with PyTorch's error. Every
result is contiguous, as PyTorch allocates it.

``matmul`` is PyTorch's decomposition into these ops: 1-D operands are unsqueezed and squeezed back,
a batched operand against a matrix folds its batch into rows (one ``mm``), and other batched cases
broadcast the batch dimensions and call ``bmm``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.aten.pointwise import binary
from ember.core.aten.shape import copying, views
from ember.core.dispatch import OpOverload, define
from ember.core.layout import broadcast_shapes, numel
from ember.core.pointwise import resize_out, type_name
from ember.core.quiet import restore, silence
from ember.core.tensor import Tensor, empty, from_array

_HALF = (D.float16, D.bfloat16)


def compute_array(t: Tensor) -> np.ndarray:
    """A tensor's values in the dtype its product is computed in (float32 for the half types)."""
    array = t._array
    return array.astype(np.float32) if t.dtype in _HALF else array


def finish(array: np.ndarray, dtype: D.dtype) -> Tensor:
    """The result tensor of a product computed in ``compute_array``'s dtype."""
    if array.dtype != dtype.np:
        token = silence()  # float32 beyond float16's range rounds to inf, as in PyTorch
        try:
            array = array.astype(dtype.np)
        finally:
            restore(token)
    return from_array(np.asarray(array), dtype)


def _refuse_bool(kernel: str, t: Tensor, shape: tuple | None = None, inner: int = 1, adds: bool = False) -> None:
    """PyTorch's error for bool operands, raised where its kernel runs: not for an empty result, and
    for an empty inner dimension only by the ``add`` forms (their ``beta * self`` makes a Long)."""
    if t.dtype is not D.bool_ or (shape is not None and numel(shape) == 0):
        return
    if inner == 0:
        if adds:
            raise RuntimeError("result type Long can't be cast to the desired output type Bool")
        return
    raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _scalar_in(value, dtype: D.dtype):
    """``alpha``/``beta`` as the result dtype holds them (PyTorch converts the Scalar to it)."""
    if isinstance(value, Tensor):
        value = value.item()
    if isinstance(value, complex) and dtype.category != D.COMPLEX:
        if value.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {lower_type_name(dtype)} without overflow")
        value = value.real
    if dtype.category <= D.INTEGRAL:
        return int(value)
    return value


def lower_type_name(d: D.dtype) -> str:
    """PyTorch's lower-case C++ type names, used by a few messages (``float != double``)."""
    return {D.float32: "float", D.float64: "double", D.float16: "c10::Half", D.bfloat16: "c10::BFloat16"}.get(
        d, type_name(d).lower()
    )


# -- mm and bmm ----------------------------------------------------------------------------------------

mm = define("mm(Tensor self, Tensor mat2) -> Tensor", ("core",))
mm_out = define("mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)", ("out",))
bmm = define("bmm(Tensor self, Tensor mat2) -> Tensor", ("core",))
bmm_out = define("bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)", ("out",))


def _mm_shape(self: Tensor, mat2: Tensor, mat2_suffix: str = "") -> tuple:
    if self.ndim != 2:
        raise RuntimeError(f"self must be a matrix{mat2_suffix and f', got {self.ndim}-D tensor'}")
    if mat2.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix{mat2_suffix and f', got {mat2.ndim}-D tensor'}")
    (n, k), (k2, p) = self._shape, mat2._shape
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{p})")
    return (n, p)


def _mm_plan(self: Tensor, mat2: Tensor) -> tuple:
    shape = _mm_shape(self, mat2)
    if self.dtype is not mat2.dtype:
        raise RuntimeError(
            "expected m1 and m2 to have the same dtype, but got: "
            f"{lower_type_name(self.dtype)} != {lower_type_name(mat2.dtype)}"
        )
    _refuse_bool("addmm_impl_cpu_", self, shape, self._shape[1])
    return shape


@mm.register_kernel("cpu")
def _mm_cpu(self: Tensor, mat2: Tensor) -> Tensor:
    _mm_plan(self, mat2)
    return finish(np.matmul(compute_array(self), compute_array(mat2)), self.dtype)


@mm.register_meta
def _mm_meta(self: Tensor, mat2: Tensor) -> Tensor:
    return empty(_mm_plan(self, mat2), self.dtype, self.device)


def _bmm_plan(self: Tensor, mat2: Tensor) -> tuple:
    if self.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    b, n, k = self._shape
    if mat2._shape[:2] != (b, k):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {k}] but got: "
            f"[{mat2._shape[0]}, {mat2._shape[1]}]."
        )
    if self.dtype is not mat2.dtype:
        raise RuntimeError(f"expected scalar type {type_name(self.dtype)} but found {type_name(mat2.dtype)}")
    shape = (b, n, mat2._shape[2])
    _refuse_bool("bmm", self, shape, k)
    return shape


@bmm.register_kernel("cpu")
def _bmm_cpu(self: Tensor, mat2: Tensor) -> Tensor:
    _bmm_plan(self, mat2)
    return finish(np.matmul(compute_array(self), compute_array(mat2)), self.dtype)


@bmm.register_meta
def _bmm_meta(self: Tensor, mat2: Tensor) -> Tensor:
    return empty(_bmm_plan(self, mat2), self.dtype, self.device)


# -- addmm and baddbmm: beta * self + alpha * product ---------------------------------------------------

addmm = define("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", ("core",))
addmm_ = define(
    "addmm_(Tensor(a!) self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor(a!)", ("inplace",)
)
addmm_out = define(
    "addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    ("out",),
)
baddbmm = define(
    "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", ("core",)
)
baddbmm_ = define(
    "baddbmm_(Tensor(a!) self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor(a!)",
    ("inplace",),
)
baddbmm_out = define(
    "baddbmm.out(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out) "
    "-> Tensor(a!)",
    ("out",),
)


def _addmm_plan(self: Tensor, mat1: Tensor, mat2: Tensor) -> tuple:
    shape = _mm_shape(mat1, mat2, mat2_suffix="got")
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(
            "expected m1 and m2 to have the same dtype, but got: "
            f"{lower_type_name(mat1.dtype)} != {lower_type_name(mat2.dtype)}"
        )
    if self.dtype is not mat2.dtype:
        raise RuntimeError(
            f"self and mat2 must have the same dtype, but got {type_name(self.dtype)} and {type_name(mat2.dtype)}"
        )
    views.expand.kernel("*")(self, shape)  # PyTorch's error for a self that does not broadcast
    _refuse_bool("addmm_impl_cpu_", mat1, shape, mat1._shape[1], adds=True)
    return shape


def _baddbmm_plan(self: Tensor, batch1: Tensor, batch2: Tensor) -> tuple:
    if batch1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    b, n, k = batch1._shape
    if batch2._shape[:2] != (b, k):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {k}] but got: "
            f"[{batch2._shape[0]}, {batch2._shape[1]}]."
        )
    shape = (b, n, batch2._shape[2])
    if not (self.dtype is batch1.dtype is batch2.dtype):
        raise RuntimeError(
            f"Input dtypes must be the same, got: input {lower_type_name(self.dtype)}, "
            f"batch1: {lower_type_name(batch1.dtype)}, batch2: {lower_type_name(batch2.dtype)}"
        )
    views.expand.kernel("*")(self, shape)
    _refuse_bool("baddbmm", batch1, shape, k, adds=True)
    return shape


def _add_product(self: Tensor, a: Tensor, b: Tensor, beta, alpha) -> np.ndarray:
    """``beta * self + alpha * (a @ b)`` in the compute dtype; beta 0 ignores self (nan included)."""
    dtype = a.dtype
    beta, alpha = _scalar_in(beta, dtype), _scalar_in(alpha, dtype)
    product = np.matmul(compute_array(a), compute_array(b))
    token = silence()
    try:
        if alpha != 1:
            product = np.multiply(product, np.asarray(alpha).astype(product.dtype))
        if beta == 0:
            return np.broadcast_to(product, product.shape)
        base = compute_array(self)
        if beta != 1:
            base = np.multiply(base, np.asarray(beta).astype(product.dtype))
        return np.add(product, base, dtype=product.dtype)
    finally:
        restore(token)


@addmm.register_kernel("cpu")
def _addmm_cpu(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    _addmm_plan(self, mat1, mat2)
    return finish(_add_product(self, mat1, mat2, beta, alpha), mat1.dtype)


@addmm.register_meta
def _addmm_meta(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    return empty(_addmm_plan(self, mat1, mat2), mat1.dtype, mat1.device)


@baddbmm.register_kernel("cpu")
def _baddbmm_cpu(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    _baddbmm_plan(self, batch1, batch2)
    return finish(_add_product(self, batch1, batch2, beta, alpha), batch1.dtype)


@baddbmm.register_meta
def _baddbmm_meta(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    return empty(_baddbmm_plan(self, batch1, batch2), batch1.dtype, batch1.device)


def _check_inplace_shape(self: Tensor, shape: tuple) -> None:
    """``self.addmm_(...)``: the result must have self's shape (self does not broadcast up)."""
    if shape != self._shape:
        raise RuntimeError(
            f"Bad in-place call: input tensor size {list(self._shape)} and output tensor size "
            f"{list(shape)} should match"
        )


def _write_inplace(self: Tensor, result: Tensor) -> Tensor:
    _check_inplace_shape(self, result._shape)
    np.copyto(self._array, result._array)
    self._storage.version += 1
    return self


@addmm_.register_kernel("cpu")
def _addmm_inplace(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    return _write_inplace(self, addmm(self, mat1, mat2, beta=beta, alpha=alpha))


@addmm_.register_meta
def _addmm_inplace_meta(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    _check_inplace_shape(self, _addmm_meta(self, mat1, mat2, beta=beta, alpha=alpha)._shape)
    return self


@baddbmm_.register_kernel("cpu")
def _baddbmm_inplace(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    return _write_inplace(self, baddbmm(self, batch1, batch2, beta=beta, alpha=alpha))


@baddbmm_.register_meta
def _baddbmm_inplace_meta(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    _check_inplace_shape(self, _baddbmm_meta(self, batch1, batch2, beta=beta, alpha=alpha)._shape)
    return self


# -- vectors: dot, vdot, mv, outer -------------------------------------------------------------------

dot = define("dot(Tensor self, Tensor tensor) -> Tensor")
dot_out = define("dot.out(Tensor self, Tensor tensor, *, Tensor(a!) out) -> Tensor(a!)", ("out",))
vdot = define("vdot(Tensor self, Tensor other) -> Tensor")
vdot_out = define("vdot.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", ("out",))
mv = define("mv(Tensor self, Tensor vec) -> Tensor")
mv_out = define("mv.out(Tensor self, Tensor vec, *, Tensor(a!) out) -> Tensor(a!)", ("out",))
outer = define("outer(Tensor self, Tensor vec2) -> Tensor")
outer_out = define("outer.out(Tensor self, Tensor vec2, *, Tensor(a!) out) -> Tensor(a!)", ("out",))


def _dot_plan(self: Tensor, other: Tensor, name: str) -> None:
    if self.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {self.ndim}D and {other.ndim}D tensors")
    if self.dtype is not other.dtype:
        raise RuntimeError(
            f"{name} : expected both vectors to have same dtype, but found {type_name(self.dtype)} and "
            f"{type_name(other.dtype)}"
        )
    n, m = self._shape[0], other._shape[0]
    if n != m:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number of elements, "
            f"but got {n} and {m} elements respectively"
        )
    _refuse_bool(name, self)


@dot.register_kernel("cpu")
def _dot_cpu(self: Tensor, tensor: Tensor) -> Tensor:
    _dot_plan(self, tensor, "dot")
    return finish(np.dot(compute_array(self), compute_array(tensor)), self.dtype)


@dot.register_meta
def _dot_meta(self: Tensor, tensor: Tensor) -> Tensor:
    _dot_plan(self, tensor, "dot")
    return empty((), self.dtype, self.device)


@vdot.register_kernel("cpu")
def _vdot_cpu(self: Tensor, other: Tensor) -> Tensor:
    _dot_plan(self, other, "vdot")
    return finish(np.vdot(compute_array(self), compute_array(other)), self.dtype)


@vdot.register_meta
def _vdot_meta(self: Tensor, other: Tensor) -> Tensor:
    _dot_plan(self, other, "vdot")
    return empty((), self.dtype, self.device)


def _mv_plan(self: Tensor, vec: Tensor) -> tuple:
    if self.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {self.ndim}, {vec.ndim}")
    n, k = self._shape
    if vec._shape[0] != k:
        raise RuntimeError(f"size mismatch, got input ({n}), mat ({n}x{k}), vec ({vec._shape[0]})")
    if self.dtype is not vec.dtype:
        raise RuntimeError(
            f"addmv input tensors must have the same dtype, but got {type_name(vec.dtype)}, {type_name(self.dtype)}, "
            f"and {type_name(vec.dtype)}"
        )
    _refuse_bool("addmv_impl_cpu", self, (n,), k)
    return (n,)


@mv.register_kernel("cpu")
def _mv_cpu(self: Tensor, vec: Tensor) -> Tensor:
    _mv_plan(self, vec)
    return finish(np.matmul(compute_array(self), compute_array(vec)), self.dtype)


@mv.register_meta
def _mv_meta(self: Tensor, vec: Tensor) -> Tensor:
    return empty(_mv_plan(self, vec), self.dtype, self.device)


@outer.register_decomposition
def _outer(self: Tensor, vec2: Tensor) -> Tensor:
    # PyTorch's own composite: a column times a row, so dtypes promote as ``mul`` does.
    if self.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {self.ndim}-D")
    if vec2.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    return binary.mul.functional(views.reshape(self, (self._shape[0], 1)), vec2)


# -- matmul ---------------------------------------------------------------------------------------------

matmul = define("matmul(Tensor self, Tensor other) -> Tensor")
matmul_out = define("matmul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", ("out",))


def _folds(t1: Tensor, t2: Tensor) -> bool:
    """PyTorch's ``should_fold``: one operand of 3+ dims whose batch flattens into rows without a copy."""
    big, small = (t1, t2) if t1.ndim >= t2.ndim else (views.transpose(t2, -1, -2), t1)
    if not (big.ndim >= 3 and small.ndim <= 2):
        return False
    if t1.ndim == 2:
        return False
    if numel(big._shape) == 0:
        return True
    shape, stride = big._shape, big._stride
    return all(stride[i] == stride[i + 1] * shape[i + 1] for i in range(big.ndim - 2))


@matmul.register_decomposition
def _matmul(self: Tensor, other: Tensor) -> Tensor:
    n1, n2 = self.ndim, other.ndim
    if n1 == 0 or n2 == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {n1}D and {n2}D")
    if n1 == 1 and n2 == 1:
        return dot(self, other)
    if n1 == 2 and n2 == 1:
        return mv(self, other)
    if n1 == 1 and n2 == 2:
        return views.squeeze_dims(mm(views.unsqueeze(self, 0), other), (0,))
    if n1 == 2 and n2 == 2:
        return mm(self, other)
    if _folds(self, other):
        transpose = n2 > n1
        t1 = views.transpose(other, -1, -2) if transpose else self
        t2 = (views.t(self) if n1 == 2 else self) if transpose else other
        rows = t1._shape[:-1]
        folded = views.reshape(t1, (numel(rows), t1._shape[-1]))
        if t2.ndim == 2:
            output = views.view(mm(folded, t2), (*rows, t2._shape[1]))
            if transpose:
                return copying.clone(views.transpose(output, -1, -2), memory_format="contiguous_format")
            return output
        return views.view(mv(folded, t2), rows)
    # Broadcast the batch dimensions and multiply with bmm.
    n = self._shape[-2] if n1 > 1 else 1
    m1 = self._shape[-1]
    m2 = other._shape[-2] if n2 > 1 else other._shape[0]
    p = other._shape[-1] if n2 > 1 else 1
    batch = broadcast_shapes(self._shape[: max(n1 - 2, 0)], other._shape[: max(n2 - 2, 0)])
    count = numel(batch)
    left = views.reshape(views.expand(self, (*batch, n, m1)), (count, n, m1))
    if n2 == 1:
        right = views.unsqueeze(views.reshape(views.expand(other, (*batch, m2)), (count, m2)), 2)
    else:
        right = views.reshape(views.expand(other, (*batch, m2, p)), (count, m2, p))
    shape = batch + ((n,) if n1 > 1 else ()) + ((p,) if n2 > 1 else ())
    product = bmm(left, right)
    if n2 == 1:
        product = views.squeeze_dims(product, (-1,))
    return views.view(product, shape)


@matmul.register_kernel("cpu")
def _matmul_cpu(self: Tensor, other: Tensor) -> Tensor:
    # The commonest call, two float matrices of one dtype, straight to BLAS; the rest decomposes.
    if (
        self.ndim == 2
        and other.ndim == 2
        and self.dtype is other.dtype
        and (self.dtype is D.float32 or self.dtype is D.float64)
        and self._shape[1] == other._shape[0]
        and type(other) is Tensor
    ):
        return from_array(np.matmul(self._array, other._array), self.dtype)
    return _matmul(self, other)


# -- out= forms -------------------------------------------------------------------------------------------


def _out_form(out_op: OpOverload, functional: OpOverload) -> None:
    """The ``out=`` kernel: the functional result, checked against ``out``'s dtype and written into it."""

    def check(out, result: Tensor) -> None:
        if result.dtype is not out.dtype:
            raise RuntimeError(
                f"Expected out tensor to have dtype {lower_type_name(result.dtype)}, but got "
                f"{lower_type_name(out.dtype)} instead"
            )
        if out._shape != result._shape:
            resize_out(out, result._shape)

    def check_type(out) -> None:
        if not isinstance(out, Tensor):
            raise TypeError(f"{functional.name}(): argument 'out' must be Tensor, not {type(out).__name__}")

    def kernel(*args, out: Tensor, **kwargs) -> Tensor:
        check_type(out)
        result = functional(*args, **kwargs)
        check(out, result)
        np.copyto(out._array, result._array)
        out._storage.version += 1
        return out

    def meta(*args, out: Tensor, **kwargs) -> Tensor:
        check_type(out)
        check(out, functional(*args, **kwargs))
        return out

    out_op.register_kernel("cpu")(kernel)
    out_op.register_meta(meta)


for _out, _functional in [
    (mm_out, mm),
    (bmm_out, bmm),
    (addmm_out, addmm),
    (baddbmm_out, baddbmm),
    (dot_out, dot),
    (vdot_out, vdot),
    (mv_out, mv),
    (outer_out, outer),
    (matmul_out, matmul),
]:
    _out_form(_out, _functional)


# -- the Python surface ----------------------------------------------------------------------------------


def _expose(name: str, functional: OpOverload, out_op: OpOverload, arg_names: tuple[str, str]) -> Callable:
    def function(input, other, *, out=None):
        for position, (arg, value) in enumerate(zip(arg_names, (input, other), strict=True), start=1):
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"{name}(): argument '{arg}' (position {position}) must be Tensor, not {type(value).__name__}"
                )
        return functional(input, other) if out is None else out_op(input, other, out=out)

    def tensor_method(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(
                f"{name}(): argument '{arg_names[1]}' (position 1) must be Tensor, not {type(other).__name__}"
            )
        return functional(self, other)

    function.__name__ = tensor_method.__name__ = name
    function.__doc__ = f"``{functional.schema}``"
    public(name)(function)
    method(name)(tensor_method)
    return function


_expose("mm", mm, mm_out, ("input", "mat2"))
_expose("bmm", bmm, bmm_out, ("input", "mat2"))
_expose("dot", dot, dot_out, ("input", "tensor"))
_expose("vdot", vdot, vdot_out, ("input", "other"))
_expose("mv", mv, mv_out, ("input", "vec"))
_expose("outer", outer, outer_out, ("input", "vec2"))
_expose("ger", outer, outer_out, ("input", "vec2"))
matmul_function = _expose("matmul", matmul, matmul_out, ("input", "other"))


def _expose_add(name: str, functional: OpOverload, inplace: OpOverload, out_op: OpOverload) -> None:
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
    function.__doc__ = f"``{functional.schema}``"
    public(name)(function)
    method(name)(tensor_method)
    method(name + "_")(tensor_inplace)


_expose_add("addmm", addmm, addmm_, addmm_out)
_expose_add("baddbmm", baddbmm, baddbmm_, baddbmm_out)


@method("__matmul__")
def _matmul_operator(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(self, other)


@method("__rmatmul__")
def _rmatmul_operator(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(other, self)


# -- linear ------------------------------------------------------------------------------------------------

linear = define("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor")


@linear.register_decomposition
def _linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    # PyTorch's composite: a fused addmm where the input is (or flattens without a copy to) a matrix.
    if input.ndim == 0 or weight.ndim == 0:
        raise RuntimeError(
            f"both arguments to linear need to be at least 1D, but they are {input.ndim}D and {weight.ndim}D"
        )
    weight_t = views.t(weight)
    if bias is not None and input.ndim == 2:
        return addmm(bias, input, weight_t)
    if bias is not None and input.is_contiguous() and (input.ndim == 3 or bias.ndim == 1):
        rows = input._shape[:-1]
        flat = views.reshape(input, (numel(rows), input._shape[-1]))
        result = addmm(bias, flat, weight_t)
        return views.view(result, (*rows, result._shape[1]))
    output = matmul(input, weight_t)
    if bias is not None:
        output = binary.add.inplace(output, bias)
    return output
