"""``Parameter``: a tensor that a ``Module`` registers as one of its parameters, and ``Buffer``, the
marker that registers a tensor as a buffer by assignment.

A Parameter is a ``Tensor`` subclass sharing its storage with the tensor it was made from, so that
``Parameter(t)`` costs no copy, as in PyTorch. Ops on a Parameter return plain tensors (the kernels
build plain ``Tensor`` results), which is what ``param * 2`` gives in PyTorch too.

Converting a module (``to``, ``half``, ...) must keep each Parameter object, since optimizers and
tied modules hold it: ``swap_payload`` moves a new tensor's storage and geometry into it, which is
what ``param.data = new`` does in PyTorch.
"""

from __future__ import annotations

from ember.core.aten.factories.factories import empty_function
from ember.core.function_protocol import _disabled_torch_function_impl
from ember.core.serialization import register_parameter_class
from ember.core.tensor import Tensor, _new

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter", "swap_payload"]


def _plain(data: Tensor) -> Tensor:
    return _new(Tensor, data._storage, data._shape, data._stride, data._offset, data.dtype, data._array)


class Parameter(Tensor):
    """A tensor that is a module parameter; ``requires_grad`` defaults to True."""

    # As in PyTorch, ops on a Parameter give plain tensors: it opts out of __torch_function__.
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty_function(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, not {type(data).__name__}")
        as_parameter = getattr(data, "__ember_as_parameter__", None)
        if as_parameter is not None:
            # A subclass that keeps its own kind (a fake tensor) makes the parameter itself.
            return as_parameter(requires_grad)
        out = _new(cls, data._storage, data._shape, data._stride, data._offset, data.dtype, data._array)
        if requires_grad:
            out.requires_grad_(True)
        return out

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + repr(_with_grad_flag(self))

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(_plain(self).clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (_plain(self), self.requires_grad))


def _with_grad_flag(p: Parameter) -> Tensor:
    plain = _plain(p)
    plain.requires_grad = p.requires_grad
    return plain


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class Buffer:
    """``nn.Buffer(data, persistent=True)``: assigning one to a module attribute registers a buffer.

    As in PyTorch the result is a plain tensor (detached from ``data``) carrying the marker.
    """

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            data = empty_function(0)
        t = data.detach()
        if data.requires_grad:
            t.requires_grad_(True)
        t._is_buffer = True
        t.persistent = persistent
        return t


def clear_grad(p: Tensor, set_to_none: bool = True) -> None:
    """``p.grad`` dropped, or zeroed in place with no history and no grad requirement left on it:
    what ``Module.zero_grad`` and ``Optimizer.zero_grad`` do to each parameter."""
    grad = p.grad
    if grad is None:
        return
    if set_to_none:
        p.grad = None
        return
    if grad.grad_fn is not None:
        grad = grad.detach()
        p.grad = grad
    else:
        grad.requires_grad_(False)
    grad.zero_()


def swap_payload(target: Tensor, source: Tensor) -> None:
    """Make ``target`` hold ``source``'s storage, geometry, dtype and device (``target.data = source``)."""
    target._storage = source._storage
    target._shape = source._shape
    target._stride = source._stride
    target._offset = source._offset
    target.dtype = source.dtype
    target.device = source.device
    target._array = source._array
    target._contig = None


class UninitializedTensorMixin:
    """A parameter or buffer whose shape is not known yet: a lazy module gives it one on its first
    call (``materialize``), and it becomes a plain ``Parameter`` or ``Tensor`` in place."""

    __slots__ = ()
    __torch_function__ = _disabled_torch_function_impl
    cls_to_become: type = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor ``shape`` (uninitialized storage) and its final class."""
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        swap_payload(self, empty_function(*shape, device=device, dtype=dtype))
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol):
        raise RuntimeError(
            f"'{type(self).__name__}' and its subclasses cannot be serialized: call forward once to initialize the "
            "parameters first."
        )


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A ``Parameter`` of a lazy module before its first call."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return Parameter.__new__(cls, empty_function(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of a lazy module before its first call."""

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        data = empty_function(0, device=device, dtype=dtype)
        out = _new(cls, data._storage, data._shape, data._stride, data._offset, data.dtype, data._array)
        if requires_grad:
            out.requires_grad_(True)
        out._is_buffer = True
        out.persistent = persistent
        return out

    def __init__(self, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True) -> None:
        pass


def is_lazy(value: object) -> bool:
    return isinstance(value, UninitializedTensorMixin)


register_parameter_class(Parameter)  # checkpoints save and load it as torch.nn.Parameter
