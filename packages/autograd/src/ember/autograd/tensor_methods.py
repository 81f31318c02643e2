"""The autograd methods of ``Tensor``: backward, hooks, retain_grad, and ``.grad`` checks."""

from __future__ import annotations

import weakref

from ember.autograd import views
from ember.autograd.graph import AccumulateGrad, RemovableHandle, _HookDict, grad_accumulator
from ember.core import dtypes as D
from ember.core.tensor import Tensor, install_autograd_attributes


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    from ember.autograd.functional_api import backward as _backward

    _backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def register_hook(self, hook) -> RemovableHandle:
    """``hook(grad)`` when the gradient of this tensor is computed; a non-None result replaces it."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is None:
        hooks = self.__dict__.get("_tensor_hooks")
        if hooks is None:
            hooks = self._tensor_hooks = _HookDict()
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle
    node, nr = views.edge(self)
    return node._register_output_hook(nr, hook)


def register_post_accumulate_grad_hook(self, hook) -> RemovableHandle:
    """``hook(tensor)`` after a gradient is accumulated into this leaf's ``.grad``."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    node = grad_accumulator(self)
    self._grad_acc_keep = node  # the hook lives as long as the tensor, graph or not
    if node._post_acc_hooks is None:
        node._post_acc_hooks = _HookDict()
    handle = RemovableHandle(node._post_acc_hooks)
    node._post_acc_hooks[handle.id] = hook
    return handle


def retain_grad(self) -> None:
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.grad_fn is None:
        return  # leaves keep their gradient anyway
    node, nr = views.edge(self)
    node.metadata.setdefault("_retains_grad", {})[nr] = weakref.ref(self)


def _retains_grad(self) -> bool:
    if self.grad_fn is None:
        return False
    meta = self.grad_fn.metadata_
    refs = meta.get("_retains_grad") if meta else None
    ref = refs.get(self._output_nr) if refs else None
    return ref is not None and ref() is self


def _grad_get(self):
    return self.__dict__.get("_grad")


def _grad_set(self, value) -> None:
    if value is not None:
        if not isinstance(value, Tensor):
            raise TypeError(
                f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}"
            )
        allowed = self.__dict__.get("_grad_dtype", self.dtype)
        if allowed is not None and value.dtype is not allowed:
            raise RuntimeError(
                f"attempting to assign a gradient with dtype '{D.CPP_TYPE_NAMES[value.dtype]}' to a tensor with "
                f"grad_dtype '{D.SCALAR_TYPE_NAMES[allowed]}'. The gradient must match the tensor's grad_dtype "
                "(defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a specific "
                "dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor "
                "and its gradient may break downstream systems that assume they match."
            )
        if value._shape != self._shape:
            raise RuntimeError(
                f"attempting to assign a gradient of size '{list(value._shape)}' to a tensor of size "
                f"'{list(self._shape)}'. Please ensure that the gradient and the tensor are the same size"
            )
        if value.device != self.device:
            raise RuntimeError("attempting to assign a gradient to a tensor that has data of a different type")
    self.__dict__["_grad"] = value


def _grad_dtype_get(self):
    """The dtype ``.grad`` must have (the tensor's own by default; None allows any); leaves only."""
    if self.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    return self.__dict__.get("_grad_dtype", self.dtype)


def _grad_dtype_set(self, value) -> None:
    if self.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None and not isinstance(value, D.dtype):
        raise RuntimeError(f"grad_dtype must be an ember.dtype or None, but got {type(value).__name__}")
    grad = self.__dict__.get("_grad")
    if grad is not None and value is not None and grad.dtype is not value:
        raise RuntimeError(
            f"Cannot set grad_dtype to '{D.SCALAR_TYPE_NAMES[value]}' because there is already a gradient with dtype "
            f"'{D.CPP_TYPE_NAMES[grad.dtype]}'. Please clear the gradient (.grad = None) before changing grad_dtype, "
            "or ensure the new grad_dtype matches the existing gradient's dtype."
        )
    self.__dict__["_grad_dtype"] = value


def _grad_del(self) -> None:
    self.__dict__["_grad"] = None


def _is_leaf(self) -> bool:
    return self.grad_fn is None


_SHALLOW_FIELDS = ("_storage", "_shape", "_stride", "_offset", "dtype", "device", "_contig", "_array")


def _data_get(self):
    """The same bytes as a tensor outside autograd, with a version counter of its own.

    Changes made through it are invisible to autograd's checks of saved tensors, as in PyTorch:
    that is what ``.data`` is for (and why ``detach()`` is the safer spelling).
    """
    from ember.core.storage import Storage

    out = self.detach()
    shared = self._storage
    out._storage = Storage(shared.data, shared.nbytes, shared.device)
    return out


def _data_set(self, value) -> None:
    from ember.core import dtypes as D

    if not isinstance(value, Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
    if self.requires_grad and value.dtype.category not in (D.FLOATING, D.COMPLEX):
        raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
    for field in _SHALLOW_FIELDS:
        if hasattr(value, field):  # _array is unset on storage without bytes (meta)
            object.__setattr__(self, field, getattr(value, field))


def attach() -> None:
    install_autograd_attributes(
        {
            "backward": backward,
            "register_hook": register_hook,
            "register_post_accumulate_grad_hook": register_post_accumulate_grad_hook,
            "retain_grad": retain_grad,
            "retains_grad": property(_retains_grad),
            "grad": property(_grad_get, _grad_set, _grad_del),
            "grad_dtype": property(_grad_dtype_get, _grad_dtype_set),
            "data": property(_data_get, _data_set),
            "_grad_accumulator_cls": AccumulateGrad,
            # Defaults read by the recorder on every tensor, set on the few tensors that differ.
            "_output_nr": 0,
            "_inference": False,
        }
    )
