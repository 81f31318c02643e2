"""Fake tensors: tensors with every piece of metadata and no data, for tracing and shape propagation.

A ``FakeTensor`` is a ``Tensor`` subclass whose storage is meta storage (a byte count and no bytes)
while its ``device`` is the device it stands for (``cpu``, ``cuda:0``): no plugin or GPU is needed for
a fake ``cuda`` tensor. Inside a ``FakeTensorMode`` (or whenever an op gets a fake argument) every op
runs its meta kernel on *stand-ins*: plain meta tensors that share the fakes' ``Storage`` objects. A
view computed by a meta kernel therefore shares the input's storage, and wrapping it again as a fake
keeps aliasing exact: ``a.view(6).untyped_storage() is a.untyped_storage()``, and an in-place op on a
view bumps the version counter the base reads. The results' device follows PyTorch's rule (the
common device of the tensor arguments, a 0-dim CPU tensor mixing with any device), or the op's
``device=`` argument for factories and copies.

Autograd sits above the python dispatch level, so ops on fakes that require grad record nodes as on
real tensors, and ``backward()`` computes fake gradients. ``nn.Parameter(fake)`` is a fake that is a
Parameter, so modules built under the mode have fake parameters; tensors made from data under the
mode (``ember.tensor``, ``as_tensor``, ``from_numpy``) reach it through ``aten.lift_fresh`` and
become fakes too.

An op without a meta kernel runs its decomposition under the mode; without either, a CPU kernel
runs on zero-filled real inputs when ``allow_fallback_kernels`` (and the results become fakes);
otherwise ``UnsupportedOperatorException``. Ops whose output shape depends on the data raise
``DynamicOutputShapeException`` unless the mode's ``shape_env`` allows unbacked sizes
(``fake_impls``); reading values (``item``, ``tolist``, ``bool``) raises ``DataDependentOutputException``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ember.core import dispatch
from ember.core import dtypes as D
from ember.core.devices import device, to_device
from ember.core.dispatch import DispatchMode, OpOverload
from ember.core.layout import numel
from ember.core.storage import Storage
from ember.core.tensor import Tensor, _new
from ember.nn.parameter import Parameter
from ember.ops import aten

__all__ = [
    "DataDependentOutputException",
    "DynamicOutputShapeException",
    "FakeTensor",
    "FakeTensorDeviceMismatchError",
    "FakeTensorMode",
    "UnsupportedFakeTensorException",
    "UnsupportedOperatorException",
    "is_fake",
    "maybe_get_fake_mode",
    "unset_fake_temporarily",
]


# -- errors -----------------------------------------------------------------------------------------


class UnsupportedFakeTensorException(RuntimeError):
    """A tensor cannot be made fake (``reason`` says why)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _OpError(RuntimeError):
    _why = ""

    def __init__(self, func: OpOverload | str) -> None:
        super().__init__(func)
        self.func = func

    def __str__(self) -> str:
        return f"{self.func}: {self._why}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(func={self.func!r})"


class DynamicOutputShapeException(_OpError):
    """The op's output shape depends on its input's values (nonzero, unique, masked_select)."""

    _why = "the output's shape depends on the input's values, which a fake tensor does not have"


class DataDependentOutputException(_OpError):
    """The call reads a fake tensor's values (``item()``, ``tolist()``, ``bool(t)``)."""

    _why = "the result depends on the tensor's values, which a fake tensor does not have"


class UnsupportedOperatorException(_OpError):
    """The op has no meta kernel, no decomposition and no kernel fake tensors can fall back on."""

    _why = "the op has no meta kernel and no decomposition, so fake tensors cannot run it"


class FakeTensorDeviceMismatchError(RuntimeError):
    """Tensor arguments on two different devices (PyTorch's words)."""


# -- the tensor -------------------------------------------------------------------------------------


def fake_device_of(d: device) -> device:
    """The device a fake reports: an accelerator without an index is its device 0, as PyTorch."""
    if d.index is None and d.type not in ("cpu", "meta"):
        return device(d.type, 0)
    return d


class FakeTensor(Tensor):
    """A tensor with metadata and no data; see the module docstring.

    ``device`` (``fake_device``) is the device it stands for; ``untyped_storage()`` is meta storage;
    ``fake_mode`` is the mode that made it.
    """

    fake_mode: FakeTensorMode
    # PyTorch's attribute for a fake made from a small constant; Ember makes no such fakes.
    constant = None

    def __new__(cls, fake_mode: FakeTensorMode, elem: Tensor, device, constant: Any = None) -> FakeTensor:
        """``FakeTensor(fake_mode, elem, device)``: the fake over the meta tensor ``elem`` (its storage)."""
        if not isinstance(elem, Tensor) or elem.device.type != "meta" or type(elem)._dispatches:
            raise TypeError(f"FakeTensor(): elem must be a meta tensor, got {elem!r}")
        out = FakeTensor._make(
            fake_mode, elem._storage, elem._shape, elem._stride, elem._offset, elem.dtype, to_device(device), cls
        )
        if elem.requires_grad:
            out.requires_grad = True
        return out

    @staticmethod
    def _make(
        mode: FakeTensorMode,
        storage: Storage,
        shape: tuple,
        stride: tuple,
        offset: int,
        dtype: D.dtype,
        dev: device,
        cls: type | None = None,
    ) -> FakeTensor:
        t = _new(cls or FakeTensor, storage, tuple(shape), tuple(stride), offset, dtype, None)
        t.device = fake_device_of(dev)
        t.fake_mode = mode
        return t

    @property
    def fake_device(self) -> device:
        return self.device

    @classmethod
    def __ember_dispatch__(cls, func: OpOverload, types: tuple, args: tuple, kwargs: dict) -> Any:
        # No FakeTensorMode is active (else it would have taken the call): the fakes' mode runs it.
        from ember._subclasses.fake_impls import run_op

        mode = None
        for t in dispatch._all_tensors(args, kwargs):
            if isinstance(t, FakeTensor):
                if mode is None:
                    mode = t.fake_mode
                elif t.fake_mode is not mode:
                    raise AssertionError(f"Mixing fake modes NYI: {t.fake_mode} vs {mode}")
        return run_op(mode, func, args, kwargs)

    def __ember_shallow__(self) -> FakeTensor:
        """An alias without autograd state (what autograd keeps of a saved output)."""
        alias = FakeTensor._make(
            self.fake_mode, self._storage, self._shape, self._stride, self._offset, self.dtype, self.device, type(self)
        )
        if self._base is not None:
            alias._base = self._base
        return alias

    def __ember_as_parameter__(self, requires_grad: bool) -> FakeTensor:
        """``nn.Parameter(fake)``: a fake that is a Parameter, over the same storage."""
        from ember._subclasses.fake_converter import FakeParameter

        out = FakeTensor._make(
            self.fake_mode,
            self._storage,
            self._shape,
            self._stride,
            self._offset,
            self.dtype,
            self.device,
            FakeParameter,
        )
        if requires_grad:
            out.requires_grad_(True)
        return out

    # -- reading values: a fake has none -------------------------------------------------------------

    def item(self):
        n = numel(self._shape)
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        env = self.fake_mode.shape_env
        if env is not None and getattr(env, "allow_scalar_outputs", False):
            if self.dtype.category in (D.FLOATING, D.COMPLEX):
                return env.create_unbacked_symfloat()
            if self.dtype.category == D.BOOL and hasattr(env, "create_unbacked_symbool"):
                return env.create_unbacked_symbool()
            return env.create_unbacked_symint()
        raise DataDependentOutputException("Tensor.item()")

    def tolist(self):
        raise DataDependentOutputException("Tensor.tolist()")

    def numpy(self, *, force: bool = False):
        raise DataDependentOutputException("Tensor.numpy()")

    def __array__(self, dtype=None, copy=None):
        raise DataDependentOutputException("Tensor.__array__()")

    def __dlpack__(self, *, stream=None, **kwargs):
        raise DataDependentOutputException("Tensor.__dlpack__()")

    def __bool__(self) -> bool:
        n = numel(self._shape)
        if n != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {'no values' if n == 0 else 'more than one value'} is ambiguous"
            )
        raise DataDependentOutputException("bool(Tensor)")

    def __int__(self) -> int:
        if numel(self._shape) != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        raise DataDependentOutputException("int(Tensor)")

    def __float__(self) -> float:
        if numel(self._shape) != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        raise DataDependentOutputException("float(Tensor)")

    def __complex__(self) -> complex:
        raise DataDependentOutputException("complex(Tensor)")

    def __index__(self) -> int:
        if self.dtype.category not in (D.BOOL, D.INTEGRAL) or numel(self._shape) != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        raise DataDependentOutputException("Tensor.__index__()")

    def __deepcopy__(self, memo: dict) -> FakeTensor:
        """A fake of the same mode on new storage (a fake Parameter stays one); no data is copied."""
        if id(self) in memo:
            return memo[id(self)]
        from ember.autograd.grad_mode import no_grad

        with no_grad():
            out = aten.clone.default(self)
        if isinstance(self, Parameter):
            out = out.__ember_as_parameter__(self.requires_grad)
        elif self.requires_grad:
            out.requires_grad_(True)
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol):
        raise DataDependentOutputException("pickling a Tensor")

    def __repr__(self) -> str:
        from ember.core.printing import tensor_repr

        if type(self) is FakeTensor:
            return tensor_repr(self)
        # A fake Parameter prints as PyTorch's does: Parameter(FakeTensor(...)).
        plain = FakeTensor._make(
            self.fake_mode, self._storage, self._shape, self._stride, self._offset, self.dtype, self.device
        )
        plain.requires_grad = self.requires_grad
        plain.grad_fn = self.grad_fn
        return f"Parameter({tensor_repr(plain)})"


# -- the mode -----------------------------------------------------------------------------------------


class FakeTensorMode(DispatchMode):
    """While active, every op makes fake tensors (factories too) from fake arguments.

    ``allow_non_fake_inputs`` converts real tensor arguments instead of refusing them;
    ``allow_fallback_kernels`` lets an op with only a CPU kernel run it on zero-filled inputs;
    ``shape_env`` (a ``ShapeEnv``) makes ``from_tensor`` give symbolic sizes unless
    ``static_shapes``, and lets data-dependent ops give unbacked sizes.
    """

    def __init__(
        self,
        *,
        allow_fallback_kernels: bool = True,
        allow_non_fake_inputs: bool = False,
        shape_env: Any = None,
        static_shapes: bool | None = None,
        export: bool = False,
    ) -> None:
        from ember._subclasses.fake_converter import FakeTensorConverter

        self.allow_fallback_kernels = allow_fallback_kernels
        self.allow_non_fake_inputs = allow_non_fake_inputs
        self.shape_env = shape_env
        self.static_shapes = shape_env is None if static_shapes is None else static_shapes
        self.export = export
        self.fake_tensor_converter = FakeTensorConverter()

    def __ember_dispatch__(self, func: OpOverload, types: tuple, args: tuple, kwargs: dict) -> Any:
        from ember._subclasses.fake_impls import run_op

        return run_op(self, func, args, kwargs)

    def from_tensor(
        self,
        tensor: Tensor,
        *,
        static_shapes: bool | None = None,
        source: Any = None,
        symbolic_context: Any = None,
        trace: bool = True,
    ) -> FakeTensor:
        """The fake of ``tensor``, the same one each time; views of one base stay views of one fake base."""
        if static_shapes is None:
            static_shapes = self.static_shapes
        return self.fake_tensor_converter.from_real_tensor(
            self, tensor, static_shapes=static_shapes, source=source, symbolic_context=symbolic_context
        )

    def is_our_fake(self, t: object) -> bool:
        return isinstance(t, FakeTensor) and t.fake_mode is self

    @property
    def avoid_device_init(self) -> bool:
        # Fake accelerator tensors never touch a device.
        return True

    def __repr__(self) -> str:
        return f"<FakeTensorMode at {id(self):#x}>"


def _stack() -> list:
    return dispatch._state.modes


@contextlib.contextmanager
def unset_fake_temporarily() -> Iterator[FakeTensorMode | None]:
    """Turn the innermost active ``FakeTensorMode`` off for the block; yields it (or None)."""
    modes = _stack()
    index = next((i for i in range(len(modes) - 1, -1, -1) if isinstance(modes[i], FakeTensorMode)), None)
    if index is None:
        yield None
        return
    mode = modes.pop(index)
    try:
        yield mode
    finally:
        modes.insert(min(index, len(modes)), mode)


def is_fake(x: object) -> bool:
    """Whether ``x`` is a fake tensor."""
    return isinstance(x, FakeTensor)


def maybe_get_fake_mode(x: object) -> FakeTensorMode | None:
    """The mode of a fake tensor, None for anything else."""
    return x.fake_mode if isinstance(x, FakeTensor) else None


def active_fake_mode() -> FakeTensorMode | None:
    """The innermost active ``FakeTensorMode``, if any."""
    for mode in reversed(_stack()):
        if isinstance(mode, FakeTensorMode):
            return mode
    return None


def __getattr__(name: str):
    # The converter lives in its own module (it imports this one); PyTorch's path names it here.
    if name == "FakeTensorConverter":
        from ember._subclasses.fake_converter import FakeTensorConverter

        return FakeTensorConverter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
