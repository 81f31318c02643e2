"""One Adam/AdamW update of one parameter in NumPy, for the per-tensor path's commonest case.

The per-tensor path dispatches about ten ops per parameter; for a small model that dispatch, not
the arithmetic, is most of the step. Where every tensor involved is a plain dense CPU float32 or
float64 tensor and no mode or switched dispatch level is active (``ember.core.dispatch``'s flags), the
update below writes the same numbers in place: each line is one op of ``_single_tensor_adam``, in
its order, with its Python scalars rounded to the tensor's dtype as that op's kernel rounds them.
Version counters move as the ops would move them. Anything else takes the op-by-op path.
"""

from __future__ import annotations

import numpy as np

from ember.core import dispatch
from ember.core import dtypes as D
from ember.core.tensor import Tensor

_DTYPES = (D.float32, D.float64)


def _dense(t, dtype, shape) -> bool:
    return t._array is not None and t.dtype is dtype and t._shape == shape and t.is_contiguous()


def qualifies(param, grad, exp_avg, exp_avg_sq) -> bool:
    """Whether ``numpy_adam_step`` computes what the dispatched ops would for these tensors."""
    # A mode or a switched dispatch level (autocast, forward AD) must see the ops. A dispatching subclass merely
    # existing somewhere (vmap's) does not matter: these four tensors are checked to be plain.
    if dispatch._flags.slow or not isinstance(param, Tensor) or param._dispatches:
        return False
    if type(grad) is not Tensor or type(exp_avg) is not Tensor or type(exp_avg_sq) is not Tensor:
        return False
    dtype, shape = param.dtype, param._shape
    if dtype not in _DTYPES or param.device.type != "cpu" or grad.requires_grad:
        return False
    return (
        _dense(param, dtype, shape)
        and _dense(grad, dtype, shape)
        and _dense(exp_avg, dtype, shape)
        and (_dense(exp_avg_sq, dtype, shape))
    )


def numpy_adam_step(
    param, grad, exp_avg, exp_avg_sq, *, step, beta1, beta2, lr, weight_decay, eps, decoupled_weight_decay
) -> None:
    """The update of ``_single_tensor_adam`` (no amsgrad, no maximize) with ``step`` already counted."""
    p, g, m, v = param._array, grad._array, exp_avg._array, exp_avg_sq._array
    f = p.dtype.type
    with np.errstate(all="ignore"):
        if weight_decay != 0:
            if decoupled_weight_decay:
                np.multiply(p, f(1 - lr * weight_decay), out=p)  # param.mul_(1 - lr * wd)
                param._storage.version += 1
            else:
                g = g + f(weight_decay) * p  # grad.add(param, alpha=wd)
        # exp_avg.lerp_(grad, 1 - beta1): PyTorch's two-sided form, by the weight's side of 0.5.
        w = f(1 - beta1)
        diff = g - m
        if abs(w) < 0.5:
            diff *= w
            np.add(m, diff, out=m)
        else:
            diff *= 1 - w
            np.subtract(g, diff, out=m)
        exp_avg._storage.version += 1
        np.multiply(v, f(beta2), out=v)  # exp_avg_sq.mul_(beta2)
        square = f(1 - beta2) * g  # .addcmul_(grad, grad, value=1 - beta2)
        square *= g
        np.add(v, square, out=v)
        exp_avg_sq._storage.version += 2
        bias_correction1 = 1 - beta1**step
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        step_size = lr / bias_correction1
        denom = np.sqrt(v)  # (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        denom /= f(bias_correction2_sqrt)
        denom += f(eps)
        update = f(-step_size) * m  # param.addcdiv_(exp_avg, denom, value=-step_size)
        update /= denom
        np.add(p, update, out=p)
        param._storage.version += 1
