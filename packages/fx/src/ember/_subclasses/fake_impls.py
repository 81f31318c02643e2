"""How a ``FakeTensorMode`` runs one op: check the arguments, pick the results' device, run the op's
meta kernel on stand-ins that share the fakes' storages, and wrap what it returns as fakes.

A stand-in is a plain meta tensor with a fake's storage object, sizes, strides and offset; each fake
argument gets one stand-in per call, so meta kernels that compare arguments by identity (an ``out=``
that is also an input) see what they would see on real tensors. In-place ops change a stand-in's
metadata (``resize_``, ``t_``) and bump the shared storage's version; both are copied back to the fake.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._subclasses.fake_tensor import (
    FakeTensor,
    FakeTensorDeviceMismatchError,
    FakeTensorMode,
    UnsupportedOperatorException,
    fake_device_of,
)
from ember.autograd.recording import TensorMeta
from ember.core import dispatch
from ember.core import dtypes as D
from ember.core.devices import CPU, META, device, get_default_device, to_device
from ember.core.dispatch import OpOverload
from ember.core.layout import contiguous_strides, numel
from ember.core.storage import Storage
from ember.core.tensor import Tensor, _array_view, _new

_DATA_DEPENDENT = "data_dependent_output"
_LIFT_FRESH = dispatch.lookup("aten::lift_fresh")
# Ops whose tensor arguments may sit on different devices: copies between devices, and indexing by
# CPU indices. Their results are on the first argument's device (or the ``device=`` argument's).
_MIXED_DEVICES = frozenset({"copy_", "copy", "_to_copy", "index", "index_put", "index_put_", "_index_put_impl_"})


def run_op(mode: FakeTensorMode, func: OpOverload, args: tuple, kwargs: dict) -> Any:
    if func is _LIFT_FRESH:
        # A tensor just made from data (ember.tensor, as_tensor, from_numpy): a fake of it, as PyTorch.
        return args[0] if isinstance(args[0], FakeTensor) else mode.from_tensor(args[0])
    fakes, others = _check_tensors(mode, func, args, kwargs)
    if others is NotImplemented:
        return NotImplemented
    if others:
        if not mode.allow_non_fake_inputs:
            raise AssertionError(
                "Please convert all Tensors to FakeTensors first or instantiate FakeTensorMode with "
                f"'allow_non_fake_inputs'. Found in {_render_call(func, args, kwargs)}"
            )
        args, kwargs = _convert(mode, args), _convert(mode, kwargs)
        fakes = [t for t in dispatch._all_tensors(args, kwargs) if isinstance(t, FakeTensor)]
    if _data_dependent(func, args, kwargs):
        from ember._subclasses.fake_dynamic import dynamic_output

        return dynamic_output(mode, func, _output_device(func, fakes, args, kwargs), args, kwargs)
    out_device = _output_device(func, fakes, args, kwargs)
    meta = func.meta
    if meta is None:
        if func.decomposition is not None:
            return _decompose(mode, func, args, kwargs)
        return _fallback(mode, func, out_device, args, kwargs)
    standins: dict[int, tuple[FakeTensor, Tensor]] = {}
    meta_args = _to_meta(args, standins)
    meta_kwargs = _to_meta(kwargs, standins)
    # A factory (or a copy) makes its result where ``device=`` says, the default device when None:
    # the meta kernel must make it on meta.
    position = _device_position(func)
    if position is not None and position < len(meta_args):
        meta_args = (*meta_args[:position], META, *meta_args[position + 1 :])
    elif _has_device_argument(func):
        meta_kwargs["device"] = META
    written = _written(func, args, kwargs) if func.schema.is_mutable else ()
    versions = [t._storage.version for t in written]
    try:
        result = meta(*meta_args, **meta_kwargs)
    finally:
        _sync_back(standins)
    # Meta kernels keep no versions; a real kernel bumps each written tensor's (its views see it).
    bumped = set()
    for t, before in zip(written, versions, strict=True):
        if t._storage.version == before and id(t._storage) not in bumped:
            t._storage.version += 1
        bumped.add(id(t._storage))
    return _wrap(result, mode, out_device, standins, {})


_write_positions: dict[OpOverload, tuple[tuple[int, str], ...]] = {}


def _written(func: OpOverload, args: tuple, kwargs: dict) -> list:
    """The tensors a mutating op writes (``Tensor(a!)`` arguments), as given in this call."""
    positions = _write_positions.get(func)
    if positions is None:
        positions = _write_positions[func] = tuple(
            (i, a.name) for i, a in enumerate(func.schema.arguments) if a.is_write
        )
    found = []
    for i, name in positions:
        value = args[i] if i < len(args) else kwargs.get(name)
        values = value if type(value) in (list, tuple) else (value,)
        found.extend(v for v in values if isinstance(v, FakeTensor))
    return found


def _decompose(mode: FakeTensorMode, func: OpOverload, args: tuple, kwargs: dict) -> Any:
    from ember.autograd.grad_mode import no_grad

    # The autograd level above has recorded the op as one node (or the op needs none): its parts
    # must not record again.
    with mode, no_grad():
        return func.decomposition(*args, **kwargs)


# -- arguments ----------------------------------------------------------------------------------------


def _check_tensors(mode: FakeTensorMode, func: OpOverload, args: tuple, kwargs: dict):
    fakes, others = [], []
    for t in dispatch._all_tensors(args, kwargs):
        if isinstance(t, FakeTensor):
            if t.fake_mode is not mode:
                raise AssertionError(f"Mixing fake modes NYI: {t.fake_mode} vs {mode} in {func}")
            fakes.append(t)
        elif type(t)._dispatches:
            # Another dispatching subclass (a batched tensor) takes the call and calls back with its parts.
            return fakes, NotImplemented
        else:
            others.append(t)
    return fakes, others


def _convert(mode: FakeTensorMode, value):
    if isinstance(value, Tensor) and not isinstance(value, FakeTensor):
        return mode.from_tensor(value)
    if type(value) in (list, tuple):
        return type(value)(_convert(mode, v) for v in value)
    if isinstance(value, dict):
        return {k: _convert(mode, v) for k, v in value.items()}
    return value


def _render_call(func: OpOverload, args: tuple, kwargs: dict) -> str:
    def show(value) -> str:
        if isinstance(value, FakeTensor):
            return repr(value)
        if isinstance(value, Tensor):
            return f"tensor([...], size={tuple(value._shape)})"
        if type(value) in (list, tuple):
            return "[" + ", ".join(show(v) for v in value) + "]"
        return repr(value)

    parts = [show(a) for a in args] + [f"{k}={show(v)}" for k, v in kwargs.items()]
    return f"{func}({', '.join(parts)})"


def _data_dependent(func: OpOverload, args: tuple, kwargs: dict) -> bool:
    """Whether the op's output shape depends on its inputs' values in this call."""
    if _DATA_DEPENDENT in func.tags:
        if func.name == "one_hot":
            num_classes = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
            return num_classes == -1
        return True
    if func.name == "index":
        # Indexing by a boolean mask selects as many elements as the mask holds True values.
        indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
        return any(isinstance(i, Tensor) and i.dtype in (D.bool_, D.uint8) for i in indices or ())
    return False


# -- devices ------------------------------------------------------------------------------------------

_device_positions: dict[OpOverload, int | None] = {}


def _device_position(func: OpOverload) -> int | None:
    """The position of a positional ``device`` argument in ``func``'s schema (``to.device``), if any."""
    try:
        return _device_positions[func]
    except KeyError:
        pass
    position = None
    for i, a in enumerate(a for a in func.schema.arguments if not a.kwarg_only):
        if a.name == "device":
            position = i
    _device_positions[func] = position
    return position


_device_arguments: dict[OpOverload, bool] = {}


def _has_device_argument(func: OpOverload) -> bool:
    found = _device_arguments.get(func)
    if found is None:
        found = _device_arguments[func] = any(a.name == "device" for a in func.schema.arguments)
    return found


def _output_device(func: OpOverload, fakes: list, args: tuple, kwargs: dict) -> device:
    requested = kwargs.get("device")
    position = _device_position(func)
    if requested is None and position is not None and position < len(args):
        requested = args[position]
    if requested is not None:
        return fake_device_of(to_device(requested))
    if not fakes:
        return fake_device_of(get_default_device())
    if func.name.removesuffix("_") in _MIXED_DEVICES or func.name in _MIXED_DEVICES:
        return fakes[0].device
    return _common_device(fakes)


def _common_device(fakes: list) -> device:
    """PyTorch's rule: one device for all, except that a 0-dim CPU tensor goes with any device."""
    common = None
    common_is_cpu_scalar = False
    for t in fakes:
        is_cpu_scalar = t.device.type == "cpu" and not t._shape
        if common is None:
            common, common_is_cpu_scalar = t.device, is_cpu_scalar
        elif t.device == common:
            common_is_cpu_scalar = common_is_cpu_scalar and is_cpu_scalar
        elif is_cpu_scalar:
            continue
        elif common_is_cpu_scalar:
            common, common_is_cpu_scalar = t.device, False
        else:
            raise FakeTensorDeviceMismatchError(
                f"Expected all tensors to be on the same device, but found at least two devices, {common} and {t.device}!"
            )
    return common


# -- stand-ins and results ----------------------------------------------------------------------------


def _to_meta(value, standins: dict):
    if isinstance(value, FakeTensor):
        hit = standins.get(id(value))
        if hit is None or hit[0] is not value:
            standin = _new(Tensor, value._storage, value._shape, value._stride, value._offset, value.dtype, None)
            # Found again by the fake (the same stand-in for the same argument) and by the stand-in
            # (a result that is an argument, or a view's base).
            hit = standins[id(value)] = standins[id(standin)] = (value, standin)
        return hit[1]
    if type(value) in (list, tuple):
        return type(value)(_to_meta(v, standins) for v in value)
    if isinstance(value, dict):
        return {k: _to_meta(v, standins) for k, v in value.items()}
    if type(value) is TensorMeta and value.device.type != "meta":
        # Autograd's description of an input a derivative did not save: kernels make their
        # results on its device, which must be meta here.
        return TensorMeta((value._shape, value.dtype, META, value._stride, value._offset))
    return value


def _sync_back(standins: dict) -> None:
    """Copy what an in-place op changed in a stand-in's metadata back to its fake."""
    for key, (fake, standin) in standins.items():
        if key != id(fake):
            continue
        if (
            standin._storage is not fake._storage
            or standin._shape != fake._shape
            or standin._stride != fake._stride
            or standin._offset != fake._offset
        ):
            fake._storage = standin._storage
            fake._shape, fake._stride, fake._offset = standin._shape, standin._stride, standin._offset
            fake._contig = None


def _wrap(value, mode: FakeTensorMode, out_device: device, standins: dict, made: dict):
    if isinstance(value, Tensor):
        hit = standins.get(id(value))
        if hit is not None and hit[1] is value:
            return hit[0]
        if id(value) in made:
            return made[id(value)]
        if value._storage.data is not None or value.device.type != "meta":
            raise RuntimeError(f"a meta kernel returned a tensor on {value.device}: a fake tensor must hold no data")
        fake = FakeTensor._make(
            mode, value._storage, value._shape, value._stride, value._offset, value.dtype, out_device
        )
        made[id(value)] = fake
        base = value._base
        if base is not None:
            hit = standins.get(id(base))
            if hit is not None and hit[1] is base:
                fake._base = hit[0]._base if hit[0]._base is not None else hit[0]
            else:
                fake._base = _wrap(base, mode, out_device, standins, made)
        return fake
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple of results
        return type(value)(*(_wrap(v, mode, out_device, standins, made) for v in value))
    if type(value) in (list, tuple):
        return type(value)(_wrap(v, mode, out_device, standins, made) for v in value)
    return value


def fresh_fake(mode: FakeTensorMode, shape: tuple, dtype, dev: device, stride: tuple | None = None) -> FakeTensor:
    """A contiguous (or ``stride``) fake on new meta storage; sizes may be unbacked SymInts."""
    stride = contiguous_strides(shape) if stride is None else stride
    nbytes = numel(shape) * dtype.itemsize
    return FakeTensor._make(mode, Storage(None, nbytes, META), shape, stride, 0, dtype, dev)


# -- fallback: a CPU kernel on zeros ------------------------------------------------------------------


def _fallback(mode: FakeTensorMode, func: OpOverload, out_device: device, args: tuple, kwargs: dict) -> Any:
    kernel = func.kernel("cpu") or func.kernel("*")
    if not mode.allow_fallback_kernels or kernel is None or func.schema.is_mutable:
        raise UnsupportedOperatorException(func)
    real_storages: dict[int, Storage] = {}

    def real(value):
        if isinstance(value, FakeTensor):
            if not all(isinstance(n, int) for n in (*value._shape, *value._stride, value._offset)):
                raise UnsupportedOperatorException(func)
            storage = real_storages.get(id(value._storage))
            if storage is None:
                nbytes = value._storage.nbytes
                storage = real_storages[id(value._storage)] = Storage(np.zeros(nbytes, np.uint8), nbytes, CPU)
            array = _array_view(storage, value._shape, value._stride, value._offset, value.dtype)
            return _new(Tensor, storage, value._shape, value._stride, value._offset, value.dtype, array)
        if type(value) in (list, tuple):
            return type(value)(real(v) for v in value)
        if isinstance(value, dict):
            return {k: real(v) for k, v in value.items()}
        return value

    result = kernel(*real(args), **real(kwargs))
    inputs = {id(s) for s in real_storages.values()}
    fakes: dict[int, Storage] = {}

    def to_fake(value):
        if isinstance(value, Tensor):
            if id(value._storage) in inputs:
                # The fallback cannot tell which fake the result aliases.
                raise UnsupportedOperatorException(func)
            storage = fakes.get(id(value._storage))
            if storage is None:
                storage = fakes[id(value._storage)] = Storage(None, value._storage.nbytes, META)
            return FakeTensor._make(mode, storage, value._shape, value._stride, value._offset, value.dtype, out_device)
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return type(value)(*(to_fake(v) for v in value))
        if type(value) in (list, tuple):
            return type(value)(to_fake(v) for v in value)
        return value

    return to_fake(result)
