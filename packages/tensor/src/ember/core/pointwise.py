"""Pointwise ops as data: one ``define_pointwise`` call gives an op its functional, in-place and
``out=`` overloads, with meta and CPU kernels that share one plan (shape, dtypes, strides).

A plan promotes the inputs (tensors and Python scalars) by PyTorch's rules and then applies the op's
dtype rule:

- ``promote``: the promoted dtype (add, mul, maximum);
- ``int_to_float``: integral and bool results become the default float dtype (exp, sin, true div);
- ``bool``: inputs compare in the promoted dtype, the result is bool (eq, isnan, logical_and);
- ``complex_to_float``: complex results become their real dtype (abs).

float16 and bfloat16 compute in float32 and round once at the end, as PyTorch's CPU kernels do.
The result is laid out as ``layout.pointwise_strides`` says, which is what makes meta tensors and CPU
results agree on strides.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ember.core import dtypes as D
from ember.core.devices import CPU
from ember.core.dispatch import OpOverload, define
from ember.core.dtypes_extra import CONVERTED, complex32_as_complex64, copy_special, refused_dtypes
from ember.core.fastpath import native
from ember.core.layout import (
    broadcast_shapes,
    contiguous_strides,
    int_contiguous_strides,
    is_non_overlapping_and_dense,
    numel,
    pointwise_strides,
)
from ember.core.promotion import can_cast, get_default_dtype, result_type
from ember.core.quiet import quiet_contextvar, restore, silence
from ember.core.symbolic import GuardOnDataDependentSymNode
from ember.core.tensor import Tensor, empty, from_array

NUMBERS = (bool, int, float, complex)


@dataclass(frozen=True)
class Plan:
    shape: tuple
    strides: tuple
    result: D.dtype  # the dtype of the output
    compute: D.dtype  # the dtype the arithmetic runs in


def _reduced_precision(d: D.dtype) -> D.dtype:
    if d is D.float16 or d is D.bfloat16:
        return D.float32
    return D.complex64 if d is D.complex32 else d  # complex32's halves are computed in float32


def result_dtypes(rule: str | Callable, inputs: tuple) -> tuple[D.dtype, D.dtype]:
    if callable(rule):  # an op's own rule (where promotes only its values, not its condition)
        return rule(inputs)
    common = result_type(*inputs)
    if rule == "promote":
        return common, _reduced_precision(common)
    if rule == "int_to_float":
        out = common if common.category >= D.FLOATING else get_default_dtype()
        return out, _reduced_precision(out)
    if rule == "bool":
        return D.bool_, _reduced_precision(common)
    if rule == "complex_to_float":
        return common.to_real(), _reduced_precision(common)
    raise ValueError(f"unknown dtype rule {rule!r}")


def plan(rule: str | Callable, inputs: tuple) -> Plan:
    # Plain loops rather than generators: every pointwise call off the fast path plans.
    if None in inputs:
        inputs = tuple(x for x in inputs if x is not None)  # optional operands left out (clamp's min or max)
    tensors = [t for t in inputs if isinstance(t, Tensor)]
    check_same_device(tensors)
    shape = broadcast_shapes(*[t._shape for t in tensors]) if len(tensors) > 1 else tensors[0]._shape
    try:
        contiguous = _contiguous_result(tensors, shape)
    except GuardOnDataDependentSymNode:
        # A size computed from data: shapes are not known equal, so only exactly row-major operands count.
        contiguous = all(t.is_contiguous() and t._stride == contiguous_strides(t._shape) for t in tensors)
    if contiguous:
        strides = contiguous_strides(shape)
    else:
        strides = pointwise_strides(shape, [(t._shape, t._stride) for t in tensors])
    result, compute = result_dtypes(rule, inputs)
    return Plan(shape, strides, result, compute)


def _contiguous_result(tensors: list, shape: tuple) -> bool:
    """Every input contiguous, and either of the result's shape or laid out exactly row-major."""
    same_shape = True
    for t in tensors:
        if not t.is_contiguous():
            return False
        if t._shape != shape:
            same_shape = False
    if same_shape:
        return True
    for t in tensors:  # noqa: SIM110  (a loop: all() over a generator costs a frame per call)
        if t._stride != contiguous_strides(t._shape):
            return False
    return True


def check_same_device(tensors) -> None:
    first = tensors[0].device
    for t in tensors[1:]:
        if t.device != first and t.ndim != 0:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, {first} and {t.device}!"
            )


def as_compute(value, compute: D.dtype):
    """A NumPy operand in the compute dtype: a tensor's array (cast if needed) or a NumPy scalar."""
    if isinstance(value, Tensor):
        array = value._require_data("compute")
        if array.dtype == compute.np:
            return array
        if array.dtype.names:  # complex32, a structured pair of halves
            return complex32_as_complex64(array).astype(compute.np)
        return array.astype(compute.np)
    return np.asarray(value).astype(compute.np)[()]


def materialize(array: np.ndarray, p: Plan) -> Tensor:
    """The CPU result tensor for a computed array, in the plan's dtype and strides."""
    if array.dtype != p.result.np:
        if p.result in CONVERTED:  # complex32 and float8: NumPy's casts differ from PyTorch's
            converted = np.empty(array.shape, p.result.np)
            copy_special(converted, array, p.result, D.from_numpy_dtype(array.dtype))
            array = converted
        else:
            with np.errstate(all="ignore"):  # float32 beyond float16's range rounds to inf, silently
                array = array.astype(p.result.np)
    if p.strides == int_contiguous_strides(p.shape):
        return from_array(np.broadcast_to(array, p.shape) if array.shape != p.shape else array, p.result)
    out = empty(p.shape, p.result, CPU, p.strides)
    np.copyto(out._array, array, casting="unsafe")
    return out


def type_name(d: D.dtype) -> str:
    return D.SCALAR_TYPE_NAMES[d]


def check_no_internal_overlap(t: Tensor) -> None:
    """Writing into a tensor whose elements share memory (an expanded one) is refused, as in PyTorch."""
    for size, stride in zip(t._shape, t._stride, strict=True):
        if stride == 0 and size > 1 and 0 not in t._shape:  # an empty tensor has no elements to share memory
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                "location. Please clone() the tensor before performing the operation."
            )


_PARTIAL_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory "
    "location. Please clone() the tensor before performing the operation."
)


def check_no_partial_overlap(target: Tensor, operands) -> None:
    """An operand that shares part of the written tensor's memory, or all of it in another layout
    (``a.sub_(a.t())``), is refused, as PyTorch refuses it: the result would depend on the order of
    the writes. Only dense layouts are compared, as PyTorch does; the same tensor is fine."""
    for x in operands:
        if not isinstance(x, Tensor) or x is target or x._storage is not target._storage:
            continue
        if numel(target._shape) == 0 or numel(x._shape) == 0:
            continue
        if not is_non_overlapping_and_dense(target._shape, target._stride):
            continue
        if not is_non_overlapping_and_dense(x._shape, x._stride):
            continue
        size = target.dtype.itemsize
        a_begin, b_begin = target._offset * size, x._offset * x.dtype.itemsize
        a_end, b_end = a_begin + numel(target._shape) * size, b_begin + numel(x._shape) * x.dtype.itemsize
        if a_begin == b_begin and a_end == b_end:
            if target._stride != x._stride:
                raise RuntimeError(_PARTIAL_OVERLAP)
        elif a_begin < b_end and b_begin < a_end:
            raise RuntimeError(_PARTIAL_OVERLAP)


def check_inplace(self: Tensor, p: Plan, name: str) -> None:
    check_no_internal_overlap(self)
    if p.shape != self._shape:
        raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape {list(p.shape)}")
    if not can_cast(p.result, self.dtype):
        raise RuntimeError(
            f"result type {type_name(p.result)} can't be cast to the desired output type {type_name(self.dtype)}"
        )


def prepare_out(out: Tensor, p: Plan) -> None:
    if not isinstance(out, Tensor):
        raise TypeError(f"out must be a Tensor, not {type(out).__name__}")
    if not can_cast(p.result, out.dtype):
        raise RuntimeError(
            f"result type {type_name(p.result)} can't be cast to the desired output type {type_name(out.dtype)}"
        )
    if out._shape != p.shape:
        resize_out(out, p.shape, p.strides)
    check_no_internal_overlap(out)


def resize_out(out: Tensor, shape: tuple, strides: tuple | None = None) -> None:
    """Resize an ``out=`` tensor to ``shape`` in place, as PyTorch does (warning if it held data)."""
    from ember.core.layout import numel
    from ember.core.tensor import _array_view

    if numel(out._shape) != 0:
        warnings.warn(
            f"An output with one or more elements was resized since it had shape {list(out._shape)}, which does not "
            f"match the required output shape {list(shape)}. This behavior is deprecated; pass an out tensor of the "
            "right shape or of zero elements.",
            UserWarning,
            stacklevel=4,
        )
    strides = contiguous_strides(shape) if strides is None else strides
    needed = (out._offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))) * out.dtype.itemsize
    storage = out._storage
    if needed > storage.nbytes:
        if isinstance(storage.data, np.ndarray):
            grown = np.zeros(needed, np.uint8)
            grown[: storage.nbytes] = storage.bytes()
            storage.data = grown
        storage.nbytes = needed
    out._shape, out._stride, out._contig = tuple(shape), tuple(strides), None
    out._array = _array_view(storage, out._shape, out._stride, out._offset, out.dtype)


def write_into(target: Tensor, array: np.ndarray) -> Tensor:
    if target.dtype in CONVERTED:  # complex32 and float8: NumPy's casts differ from PyTorch's
        copy_special(
            target._array, np.broadcast_to(array, target._shape), target.dtype, D.from_numpy_dtype(array.dtype)
        )
        target._storage.version += 1
        return target
    with np.errstate(all="ignore"):  # float32 beyond float16's range rounds to inf, silently
        np.copyto(target._array, array, casting="unsafe")
    target._storage.version += 1
    return target


# -- defining pointwise ops -------------------------------------------------------------------------


def _inplace_schema(schema: str) -> str:
    name, rest = schema.split("(", 1)
    base, _, overload = name.partition(".")
    args, _ret = rest.rsplit(") ->", 1)
    first, _, others = args.partition(",")
    first = first.replace("Tensor self", "Tensor(a!) self", 1)
    args = first + ("," + others if others else "")
    return f"{base}_{'.' + overload if overload else ''}({args}) -> Tensor(a!)"


def _out_schema(schema: str, out_overload: str) -> str:
    name, rest = schema.split("(", 1)
    base = name.partition(".")[0]
    args, _ = rest.rsplit(") ->", 1)
    sep = ", " if "*" in args else ", *, "
    return f"{base}.{out_overload}({args}{sep}Tensor(a!) out) -> Tensor(a!)"


@dataclass
class PointwiseOps:
    functional: OpOverload
    inplace: OpOverload | None
    out: OpOverload | None
    # ``check(args, kwargs)``: the op's argument checks on metadata alone (what its meta kernel runs
    # before allocating), for a decomposition to refuse what the kernel refuses.
    check: Callable[[tuple, dict], object] | None = None


def define_pointwise(
    schema: str,
    compute: Callable,
    rule: str = "promote",
    n_inputs: int = 1,
    inplace: bool = True,
    out_overload: str | None = "out",
    check: Callable | None = None,
    fast: bool = True,
    tags: tuple[str, ...] = ("pointwise", "core"),
    counts: bool = False,
    contiguous: bool = False,
) -> PointwiseOps:
    """Define an op (and its ``_`` and ``out=`` forms) computed by ``compute(*arrays, **params)``.

    The first ``n_inputs`` arguments are the tensors (or scalars) that broadcast and promote; the
    rest are parameters passed to ``compute`` by keyword. ``check(plan, inputs, params)`` raises
    for inputs the op refuses (a dtype it does not support, a bad parameter); meta kernels run it too.

    ``fast`` allows a shortcut for the commonest call: contiguous float32/float64 tensors of one
    shape and dtype (or one tensor and a Python number), no other arguments. It skips the plan and
    ``check``, so an op whose ``check`` refuses such inputs must pass ``fast=False``. ``counts``
    lets the in-place form take it for an int64 tensor and a Python int too (a counter's ``+= 1``),
    for ops whose result keeps that dtype and whose ``check`` passes such a call. ``contiguous``
    lays the result out row-major whatever the inputs' layout, where PyTorch's kernel does so.
    """
    functional = define(schema, tags)
    names = [a.name for a in functional.schema.arguments]
    input_names, param_names = names[:n_inputs], names[n_inputs:]
    defaults = {a.name: a.default for a in functional.schema.arguments if a.has_default}

    def planned(args: tuple, kwargs: dict) -> tuple[Plan, tuple, dict]:
        values = dict(zip(names, args, strict=False))
        values.update(kwargs)
        inputs = tuple(values[n] if n in values else defaults.get(n) for n in input_names)
        params = {n: values.get(n, defaults.get(n)) for n in param_names}
        p = plan(rule, inputs)
        if contiguous and p.strides != contiguous_strides(p.shape):
            p = Plan(p.shape, contiguous_strides(p.shape), p.result, p.compute)
        if check is not None:
            check(p, inputs, params)
        return p, inputs, params

    # The dtypes of limited support (uint16, float8, complex32) whose kernel PyTorch lacks for this op.
    refused = refused_dtypes(f"{functional.name}.{functional.overload}") if functional.namespace == "aten" else None

    def run(p: Plan, inputs: tuple, params: dict) -> np.ndarray:
        if refused and (p.result in refused or p.compute in refused):
            raise unsupported(functional.name, p.result if p.result in refused else p.compute)
        operands = [None if x is None else as_compute(x, p.compute) for x in inputs]
        token = silence()  # np.errstate(all="ignore"), at a fifth of its cost
        try:
            return compute(*operands, **params)
        finally:
            restore(token)

    bool_result = rule == "bool"
    default_params = {n: defaults.get(n) for n in param_names}
    # Integer and bool tensors may take the shortcut too where their result dtype is theirs (or bool)
    # and no check could refuse them (division by zero, bitwise ops of floats).
    exact = check is None and rule in ("promote", "bool")

    def cpu(*args, **kwargs):
        if fast and not kwargs and len(args) == n_inputs <= 2:
            result = (_fast_path if _native_fast_path is None else _native_fast_path)(
                compute, args, bool_result, default_params, exact
            )
            if result is not None:
                return result
        p, inputs, params = planned(args, kwargs)
        return materialize(run(p, inputs, params), p)

    def meta(*args, **kwargs):
        p, inputs, _ = planned(args, kwargs)
        return empty(p.shape, p.result, _first_device(inputs), p.strides)

    functional.register_kernel("cpu")(cpu)
    functional.register_meta(meta)

    inplace_op = None
    if inplace:
        inplace_op = define(_inplace_schema(schema), (*tags, "inplace"))

        def cpu_inplace(*args, **kwargs):
            if fast and len(args) == n_inputs <= 2 and not bool_result:
                done = _fast_inplace(compute, args, kwargs, default_params, counts)
                if done is not None:
                    return done
            p, inputs, params = planned(args, kwargs)
            check_inplace(inputs[0], p, functional.name)
            check_no_partial_overlap(inputs[0], inputs[1:])
            return write_into(inputs[0], run(p, inputs, params))

        def meta_inplace(*args, **kwargs):
            p, inputs, _ = planned(args, kwargs)
            check_inplace(inputs[0], p, functional.name)
            return inputs[0]

        inplace_op.register_kernel("cpu")(cpu_inplace)
        inplace_op.register_meta(meta_inplace)

    out_op = None
    if out_overload is not None:
        out_op = define(_out_schema(schema, out_overload), (*tags, "out"))

        def cpu_out(*args, out, **kwargs):
            p, inputs, params = planned(args, kwargs)
            prepare_out(out, p)
            check_no_partial_overlap(out, inputs)
            return write_into(out, run(p, inputs, params))

        def meta_out(*args, out, **kwargs):
            p, _, _ = planned(args, kwargs)
            prepare_out(out, p)
            return out

        out_op.register_kernel("cpu")(cpu_out)
        out_op.register_meta(meta_out)

    return PointwiseOps(functional, inplace_op, out_op, planned)


_FAST_DTYPES = (D.float32, D.float64)
_EXACT_DTYPES = (D.int64, D.int32, D.bool_)
# _fast_path in C (ember.core._fastpath): the same checks and call, with NumPy's warnings off as
# ``silence`` does it; None where the extension is absent or NumPy's internals moved.
_native_fast_path = None
if native is not None and quiet_contextvar is not None:
    native.init_pointwise(_FAST_DTYPES, _EXACT_DTYPES, D.bool_, *quiet_contextvar)
    _native_fast_path = native.pointwise


def _fast_path(compute: Callable, args: tuple, bool_result: bool, params: dict, exact: bool) -> Tensor | None:
    """The shortcut of ``define_pointwise``; None when the call does not qualify."""
    a = args[0]
    if type(a) is not Tensor or a._array is None or not a.is_contiguous():
        return None
    # Integer operands only with a tensor of their dtype: a Python number could promote them.
    if a.dtype not in _FAST_DTYPES and (
        not exact or a.dtype not in _EXACT_DTYPES or (len(args) == 2 and type(args[1]) is not Tensor)
    ):
        return None
    if len(args) == 1:
        token = silence()  # log(0), sqrt(-1): PyTorch gives inf and nan without a warning
        try:
            result = compute(a._array, **params)
        finally:
            restore(token)
    else:
        b = args[1]
        if type(b) is Tensor:
            if b.dtype is not a.dtype or b._array is None or not b.is_contiguous():
                return None
            # Operands of other shapes: the result is contiguous when both are laid out row-major
            # (as ``plan`` decides); other layouts take the plan.
            if b._shape != a._shape and (
                a._stride != int_contiguous_strides(a._shape) or b._stride != int_contiguous_strides(b._shape)
            ):
                return None
            b = b._array
        elif type(b) is not float and type(b) is not int:
            return None
        token = silence()  # x / 0 gives inf without a warning, as in PyTorch
        try:
            result = compute(a._array, b, **params)
        except ValueError:
            return None  # shapes that do not broadcast: the plan raises PyTorch's error
        finally:
            restore(token)
    return from_array(result, D.bool_ if bool_result else a.dtype)


def _fast_inplace(compute: Callable, args: tuple, kwargs: dict, params: dict, counts: bool) -> Tensor | None:
    """``_fast_path`` for the in-place form (an optimizer's ``p.add_(g, alpha=-lr)``); None when it
    does not qualify. The target must be dense (no element written twice), the operand of its shape
    and dtype or a Python number, and the only keyword a numeric ``alpha``: the checks of the ops
    taking one pass for such floating-point inputs. With ``counts``, an int64 target with a Python
    int of int64's range and no keyword qualifies too."""
    a = args[0]
    if type(a) is not Tensor or a._array is None or not a.is_contiguous():
        return None
    if a.dtype not in _FAST_DTYPES and not (
        counts and a.dtype is D.int64 and len(args) == 2 and type(args[1]) is int and not kwargs
    ):
        return None
    if a.dtype is D.int64 and not -(1 << 63) <= args[1] < 1 << 63:
        return None  # the plan raises PyTorch's overflow error
    if kwargs:
        if len(kwargs) != 1 or "alpha" not in params:
            return None
        alpha = kwargs.get("alpha")
        if type(alpha) is not float and type(alpha) is not int:
            return None
        params = {"alpha": alpha}
    out = a._array
    writes_out = getattr(compute, "writes_out", False)
    token = silence()
    try:
        if len(args) == 1:
            out[...] = compute(out, **params)
        else:
            b = args[1]
            if type(b) is Tensor:
                if b.dtype is not a.dtype or b._shape != a._shape or b._array is None:
                    return None
                if b._storage is a._storage and b is not a:
                    return None  # the plan's path checks how the two overlap
                b = b._array
            elif (type(b) is not float and type(b) is not int) or kwargs:
                return None  # (a number scaled by alpha would compute in float64: the plan casts it first)
            if writes_out:
                # Straight into the target: NumPy's ufuncs buffer an operand that overlaps their output,
                # so every operand still reads its old values.
                compute(out, b, out=out, **params)
            else:
                # Computed apart, then written: an operand that overlaps the target reads its old values.
                out[...] = compute(out, b, **params)
    finally:
        restore(token)
    a._storage.version += 1
    return a


def _first_device(inputs):
    for x in inputs:
        if isinstance(x, Tensor):
            return x.device
    raise TypeError("a pointwise op needs at least one tensor argument")


# -- the Python surface of a pointwise op ----------------------------------------------------------


def unsupported(op: str, dtype: D.dtype) -> NotImplementedError:
    """PyTorch's error for a dtype that an op's CPU kernel does not handle."""
    return NotImplementedError(f"\"{op}_cpu\" not implemented for '{type_name(dtype)}'")


def expose(
    ops: PointwiseOps,
    name: str,
    *,
    function: bool = True,
    method: bool = True,
    tensors_only: bool = False,
    out: bool = True,
) -> Callable:
    """``ember.<name>(..., out=None)``, ``Tensor.<name>`` and ``Tensor.<name>_`` for a pointwise op.

    ``tensors_only``: like PyTorch's binding of this op, refuse Python numbers for tensor arguments.
    ``out=False``: the function takes no ``out=`` (where PyTorch's binding has none).
    Returns the function (registered as ``ember.<name>`` unless ``function=False``).
    """
    from ember.core.api import methods, public

    functional, inplace, out_op = ops.functional, ops.inplace, ops.out if out else None
    if tensors_only:
        functional, inplace, out_op = (
            _tensors_only(op, name) if op is not None else None for op in (functional, inplace, out_op)
        )

    def fn(*args, out=None, **kwargs):
        if out is None:
            return functional(*args, **kwargs)
        if out_op is None:
            raise TypeError(f"{name}() got an unexpected keyword argument 'out'")
        return out_op(*args, out=out, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{ops.functional.schema}``"
    if function:
        public(name)(fn)
    if method:
        methods[name] = _method(functional, name)
        if inplace is not None:
            methods[name + "_"] = _method(inplace, name + "_")
    return fn


def _tensors_only(op: OpOverload, name: str):
    names = [a.name for a in op.schema.arguments if a.type.base == "Tensor" and not a.kwarg_only]

    def call(*args, **kwargs):
        for position, (arg_name, value) in enumerate(zip(names, args, strict=False), start=1):
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"{name}(): argument '{arg_name}' (position {position}) must be Tensor, not {type(value).__name__}"
                )
        return op(*args, **kwargs)

    return call


def _method(op: OpOverload, name: str):
    def call(self, *args, **kwargs):
        return op(self, *args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call
