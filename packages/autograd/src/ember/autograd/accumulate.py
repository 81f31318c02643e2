"""Adding a gradient into a leaf's ``.grad``, and fitting a gradient to its input.

A leaf's ``grad_dtype`` (its own dtype unless set; None allows any) is the dtype gradients are cast
to before they are added. The first gradient is copied into a fresh tensor laid out like the leaf (PyTorch's layout contract:
``.grad`` has the parameter's strides when the parameter is dense), so that no two leaves and no
user tensor share a ``.grad``. Later ones add in place, or out of place under ``create_graph``
(then ``.grad`` itself has a history).
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.aten.factories.factories import empty_strided_function
from ember.core.dispatch import active_modes
from ember.core.tensor import Tensor, from_array


def _dense_like(grad: Tensor, like: Tensor) -> Tensor:
    if (
        type(grad) is Tensor
        and grad.dtype is like.dtype
        and grad._shape == like._shape
        and grad._array is not None
        and like.device.type == "cpu"
        and grad._fw_grad is None  # a tangent (forward over reverse) must travel with the copy
        and not active_modes()  # a mode (a tracer) must see the copy
    ):
        # The common case, a contiguous CPU parameter: one NumPy copy instead of two dispatched ops.
        out = from_array(np.array(grad._array, order="C"), like.dtype)
        if out._stride == like._stride:
            return out
    from ember.core.layout import contiguous_strides, is_non_overlapping_and_dense

    stride = (
        like._stride if is_non_overlapping_and_dense(like._shape, like._stride) else contiguous_strides(like._shape)
    )
    if type(like)._dispatches:
        # A dispatching subclass (a fake tensor) must see the allocation: it makes its own kind.
        out = like.new_empty_strided(like._shape, stride, dtype=grad.dtype)
    else:
        out = empty_strided_function(like._shape, stride, dtype=grad.dtype, device=like.device)
    out.copy_(grad)
    return out


def accumulate_into(variable: Tensor, grad: Tensor) -> None:
    from ember.autograd.grad_mode import state

    if grad is None:
        return
    wanted = variable.__dict__.get("_grad_dtype", variable.dtype)
    if wanted is not None and wanted is not grad.dtype:
        grad = grad.to(wanted)  # a leaf whose grad_dtype differs from its dtype: the gradient is cast to it
    old = variable.grad
    if grad.is_sparse or variable.is_sparse or (old is not None and old.is_sparse):
        _accumulate_sparse(variable, old, grad, state.enabled)
        return
    if old is None:
        if state.enabled and grad.requires_grad:
            variable.grad = grad if grad._shape == variable._shape else grad.expand(variable._shape).clone()
        else:
            variable.grad = _dense_like(grad, variable)
    elif state.enabled and (grad.requires_grad or old.requires_grad):
        variable.grad = old + grad
    else:
        old.add_(grad)


def _accumulate_sparse(variable: Tensor, old: Tensor | None, grad: Tensor, grad_mode: bool) -> None:
    """PyTorch's rules where a sparse tensor or gradient is involved: the first gradient is cloned (a
    sparse one stays sparse); a dense one added to a sparse ``.grad`` makes it dense; otherwise the new
    one adds in place."""
    if old is None:
        variable.grad = grad if grad_mode and grad.requires_grad else grad.clone()
    elif old.is_sparse and not grad.is_sparse:
        variable.grad = grad + old
    elif grad_mode and (grad.requires_grad or old.requires_grad):
        variable.grad = old + grad if not old.is_sparse or grad.is_sparse else grad + old
    else:
        old.add_(grad)


_SUMMED_IN_OWN_DTYPE = (D.float32, D.float64)


def fit(grad: Tensor, shape: tuple, dtype: D.dtype) -> Tensor:
    """``grad`` summed down to ``shape`` (where the input was broadcast) and cast to ``dtype``."""
    if grad._shape != shape:
        grad = sum_to(grad, shape)
    if grad.dtype is not dtype:
        if grad.dtype.category == D.COMPLEX and dtype.category != D.COMPLEX:
            grad = grad.real  # a real input's gradient from a complex formula: its real part, as in PyTorch
        grad = grad.to(dtype)
    return grad


def sum_to(grad: Tensor, shape: tuple) -> Tensor:
    lead = grad.ndim - len(shape)
    if lead < 0:
        return grad.reshape(shape)
    dims = list(range(lead))
    dims += [lead + i for i, n in enumerate(shape) if n == 1 and grad._shape[lead + i] != 1]
    fast = dims and type(grad) is Tensor and grad.dtype in _SUMMED_IN_OWN_DTYPE and grad._array is not None
    if fast and not grad.requires_grad and grad._fw_grad is None:
        # A bias's gradient in every step: what ``sum(dims, keepdim=True)`` computes for these
        # dtypes (NumPy's pairwise sum in the tensor's dtype), without two dispatched ops.
        summed = np.add.reduce(grad._array, axis=tuple(dims), keepdims=True)
        return from_array(summed.reshape(shape), grad.dtype)
    if dims:
        grad = grad.sum(dims, keepdim=True)
    if lead:
        grad = grad.reshape(shape)
    return grad
