"""``FakeTensorConverter``: real tensors to fakes, remembered so that conversion keeps identity.

The same real tensor always gives the same fake, and real tensors sharing a storage give fakes
sharing one meta storage; a view is converted as a view (``as_strided``) of its base's fake, so
``fake._base`` is the base's fake and in-place ops on either are seen by the other through the
shared version counter. Leaf-ness and ``requires_grad`` are kept: a fake of a non-leaf is a
non-leaf (a clone, as in PyTorch, or the view's ``as_strided``), and a Parameter's fake is a
Parameter. With a ``shape_env`` and not ``static_shapes``, sizes, strides and offset come from
``shape_env.create_symbolic_sizes_strides_storage_offset``.

Memos are keyed by ``id`` with a weak reference, since tensors compare elementwise and cannot be
dictionary keys by value; an entry goes when its real tensor (or storage) does.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

from ember._subclasses.fake_tensor import FakeTensor, FakeTensorMode, UnsupportedFakeTensorException
from ember.core import dispatch
from ember.core.devices import META
from ember.core.storage import Storage
from ember.core.tensor import Tensor
from ember.nn.parameter import Parameter
from ember.ops import aten


class FakeParameter(FakeTensor, Parameter):
    """The fake of a ``Parameter``: a ``FakeTensor`` that is also a ``Parameter``."""


class _IdMemo:
    """``id(obj) -> value`` for objects alive now."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, Any]] = {}

    def get(self, obj: object) -> Any:
        entry = self._entries.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        return None

    def set(self, obj: object, value: Any) -> None:
        key = id(obj)
        entries = self._entries

        def forget(_ref, key=key) -> None:
            entries.pop(key, None)

        entries[key] = (weakref.ref(obj, forget), value)

    def __len__(self) -> int:
        return len(self._entries)


@contextlib.contextmanager
def _no_modes() -> Iterator[None]:
    """The ops a conversion runs are not the user's: no active mode sees them."""
    modes = dispatch._state.modes
    saved = modes[:]
    modes.clear()
    try:
        yield
    finally:
        modes[:] = saved


class FakeTensorConverter:
    def __init__(self) -> None:
        self.tensor_memo = _IdMemo()
        self.storage_memo = _IdMemo()

    def from_real_tensor(
        self,
        fake_mode: FakeTensorMode,
        t: Tensor,
        *,
        static_shapes: bool = True,
        source: Any = None,
        symbolic_context: Any = None,
    ) -> FakeTensor:
        if not isinstance(t, Tensor):
            raise TypeError(f"from_tensor() expects a Tensor, not {type(t).__name__}")
        if isinstance(t, FakeTensor) and t.fake_mode is fake_mode:
            return t
        if type(t)._dispatches and not isinstance(t, FakeTensor):
            raise UnsupportedFakeTensorException(f"cannot make a fake of a {type(t).__name__}, a dispatching subclass")
        fake = self.tensor_memo.get(t)
        if fake is None:
            fake = self._convert(fake_mode, t, static_shapes, source, symbolic_context)
            self.tensor_memo.set(t, fake)
        return fake

    def _geometry(self, fake_mode: FakeTensorMode, t: Tensor, static_shapes: bool, source, symbolic_context):
        env = fake_mode.shape_env
        if env is None or static_shapes:
            return t._shape, t._stride, t._offset
        dynamic_sizes = getattr(symbolic_context, "dynamic_sizes", None)
        if dynamic_sizes is not None:
            # PyTorch's StatelessSymbolicContext: how each size may vary (DimDynamic).
            sizes, strides, offset = env.create_symbolic_sizes_strides_storage_offset(
                t, source, dynamic_dims=dynamic_sizes
            )
        else:
            sizes, strides, offset = env.create_symbolic_sizes_strides_storage_offset(t, source)
        return tuple(sizes), tuple(strides), offset

    def _convert(self, fake_mode: FakeTensorMode, t: Tensor, static_shapes: bool, source, symbolic_context):
        from ember.autograd.grad_mode import enable_grad, no_grad

        shape, stride, offset = self._geometry(fake_mode, t, static_shapes, source, symbolic_context)
        if t._base is not None and t._base is not t:
            base_source = None if source is None else f"{source}._base"
            base = self.from_real_tensor(fake_mode, t._base, static_shapes=static_shapes, source=base_source)
            with _no_modes(), enable_grad() if base.requires_grad else no_grad():
                view = aten.as_strided.default(base, shape, stride, offset)
            if t.requires_grad and not view.requires_grad:
                view.requires_grad = True  # a leaf view of a base that needs no grad
            return view
        storage = self.storage_memo.get(t._storage)
        if storage is None:
            nbytes = t._storage.nbytes
            if not all(isinstance(n, int) for n in (*shape, *stride, offset)):
                # Symbolic sizes: the storage holds what the tensor reaches, in the same symbols, so
                # that its views fit without a guard on the example's byte count.
                nbytes = (offset + 1 + sum((n - 1) * st for n, st in zip(shape, stride, strict=True))) * t.itemsize
            storage = Storage(None, nbytes, META)
            self.storage_memo.set(t._storage, storage)
        cls = FakeParameter if isinstance(t, Parameter) else FakeTensor
        fake = FakeTensor._make(fake_mode, storage, shape, stride, offset, t.dtype, t.device, cls)
        if t.requires_grad:
            fake.requires_grad = True
            if t.grad_fn is not None:
                # A non-leaf's fake is a non-leaf too, as PyTorch makes it: a clone of a fake leaf.
                with _no_modes(), enable_grad():
                    fake = aten.clone.default(fake)
                # Other tensors on the real storage alias the clone, as they alias the real tensor.
                self.storage_memo.set(t._storage, fake._storage)
        return fake
