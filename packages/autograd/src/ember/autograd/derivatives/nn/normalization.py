"""Derivatives of the normalization kernels (``ember.core.aten.nn.normalization``).

All three normalize ``x`` over some set of elements to ``x_hat = (x - mean) * rstd`` with the
statistics the forward returned, then scale by a weight and shift by a bias. Their input gradient is
the one of a normalization with batch statistics::

    dx = rstd * (gw - mean(gw) - x_hat * mean(gw * x_hat)),     gw = grad * weight

(means over the normalized set), and ``dweight = sum(grad * x_hat)``, ``dbias = sum(grad)`` over
everything but the weight's dims. Batch norm in evaluation normalizes with the running statistics,
which are constants: ``dx = grad * weight * rstd``; its three gradients come from one kernel,
``native_batch_norm_backward``, as in PyTorch. Half inputs compute in float32. When the
backward is itself recorded (double backward), the statistics are recomputed from the input with
core ops, so that their dependence on it is differentiated too.

As in PyTorch, the statistics outputs of layer and batch norm carry no gradient while group norm's
do (``d mean / dx = 1 / D``, ``d rstd / dx = -rstd^2 * x_hat / D`` over a group of ``D`` elements),
and batch norm refuses running statistics that require grad. Batch norm's forward-mode rule is its
own (it differentiates the batch statistics, and treats the running ones as constants).
"""

from __future__ import annotations

from ember.autograd.grad_mode import state
from ember.autograd.registry import derivative, through_decomposition
from ember.core import dtypes as D
from ember.core.dispatch import ops

aten = ops.aten


def _wide(t):
    return t.to(D.float32) if t is not None and t.dtype in (D.float16, D.bfloat16) else t


def _statistics(x, dims, eps: float, mean, rstd):
    """The saved statistics; recomputed from ``x`` when the backward is itself recorded (double
    backward), since the saved ones carry no history of ``x``."""
    if not (state.enabled and x.requires_grad):
        return mean, rstd
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    return mean, ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()


def _normalized_grad(grad, x_hat, rstd, weight_view, dims):
    gw = grad if weight_view is None else grad * weight_view
    mean_gw = gw.mean(dims, keepdim=True)
    mean_proj = (gw * x_hat).mean(dims, keepdim=True)
    return rstd * (gw - mean_gw - x_hat * mean_proj)


@derivative(
    aten.native_layer_norm.default, save=("input", "weight", "result"), output_differentiable=(True, False, False)
)
def _native_layer_norm(grad, input, normalized_shape, weight, bias, eps, result, needs, **_):
    grad = grad[0]
    if grad is None:
        return None, None, None
    axis = input.ndim - len(normalized_shape)
    dims = list(range(axis, input.ndim))
    outer = list(range(axis))
    x, g, w = _wide(input), _wide(grad), _wide(weight)
    mean, rstd = _statistics(x, dims, eps, _wide(result[1]), _wide(result[2]))
    x_hat = (x - mean) * rstd
    g_input = g_weight = g_bias = None
    if needs[0]:
        g_input = _normalized_grad(g, x_hat, rstd, w, dims)
    if needs[1]:
        g_weight = (g * x_hat).sum(outer) if outer else g * x_hat
    if needs[2]:
        g_bias = g.sum(outer) if outer else g
    return g_input, g_weight, g_bias


@derivative(aten.native_group_norm.default, save=("input", "weight", "result"))
def _native_group_norm(grads, input, weight, bias, N, C, HxW, group, eps, result, needs, **_):
    grad, grad_mean, grad_rstd = grads
    x = _wide(input).reshape(N, group, (C // group) * HxW)
    mean, rstd = _statistics(x, [2], eps, _wide(result[1]).reshape(N, group, 1), _wide(result[2]).reshape(N, group, 1))
    x_hat = (x - mean) * rstd
    count = (C // group) * HxW
    g_input = g_weight = g_bias = None
    if needs[0]:
        if grad is not None:
            g = _wide(grad).reshape(N, C, HxW)
            gw = g if weight is None else g * _wide(weight).reshape(1, C, 1)
            g_input = _normalized_grad(gw.reshape(N, group, count), x_hat, rstd, None, [2])
        # mean = sum(x) / D and rstd = (var + eps)^(-1/2): d rstd / dx = -rstd^2 * x_hat / D.
        if grad_mean is not None:
            term = _wide(grad_mean).reshape(N, group, 1) / count
            g_input = term if g_input is None else g_input + term
        if grad_rstd is not None:
            term = -_wide(grad_rstd).reshape(N, group, 1) * rstd * rstd * x_hat / count
            g_input = term if g_input is None else g_input + term
        if g_input is not None:
            g_input = g_input.expand(N, group, count).reshape(input.shape)
    if grad is not None and (needs[1] or needs[2]):
        g = _wide(grad).reshape(N, C, HxW)
        if needs[1]:
            # Per (sample, channel) sums first, as PyTorch's kernel: an empty group's NaN statistics
            # make the weight's gradient NaN, not a sum over nothing.
            per_channel = (N, group, C // group)
            mean_c = mean.expand(per_channel).reshape(N, C)
            rstd_c = rstd.expand(per_channel).reshape(N, C)
            x_c = _wide(input).reshape(N, C, HxW)
            g_weight = (((g * x_c).sum([2]) - g.sum([2]) * mean_c) * rstd_c).sum([0])
        if needs[2]:
            g_bias = g.sum([0, 2])
    return g_input, g_weight, g_bias


def _batch_norm_grads(grad, input, weight, running_mean, running_var, training, eps, result, needs):
    """``native_batch_norm_backward``, PyTorch's kernel (whose decomposition autograd records when
    the backward is itself differentiated)."""
    grad = grad[0]
    if grad is None:
        return None, None, None
    save_mean, save_invstd = (result[1], result[2]) if training else (None, None)
    mask = [bool(needs[0]), bool(needs[1]) and weight is not None, bool(needs[2])]
    return aten.native_batch_norm_backward.default(
        grad, input, weight, running_mean, running_var, save_mean, save_invstd, training, eps, mask
    )


def _batch_norm_jvp(tangents, input, weight, running_mean, running_var, training, eps, result):
    """The output's tangent (the statistics outputs have none); running statistics are constants."""
    t_input, t_weight, t_bias = tangents[:3]
    c = input.shape[1]
    view = [1, c] + [1] * (input.ndim - 2)
    dims = [0, *range(2, input.ndim)]
    if training:
        mean, rstd = result[1].reshape(view), result[2].reshape(view)
    else:
        mean = running_mean.reshape(view)
        rstd = (running_var.reshape(view) + eps).rsqrt()
    x_hat = (input - mean) * rstd
    out = None
    if t_input is not None:
        if training:
            # d x_hat = rstd * (dx - mean(dx) - x_hat * mean(x_hat * dx))
            centered = t_input - t_input.mean(dims, keepdim=True)
            out = (centered - x_hat * (x_hat * t_input).mean(dims, keepdim=True)) * rstd
        else:
            out = t_input * rstd
        if weight is not None:
            out = out * weight.reshape(view)
    if t_weight is not None:
        term = x_hat * t_weight.reshape(view)
        out = term if out is None else out + term
    if t_bias is not None:
        term = t_bias.reshape(view).expand(input.shape)
        out = term if out is None else out + term
    return out, None, None


def _batch_norm_stats_jvp(tangents, input, weight, running_mean, running_var, eps, result, training=False, **_):
    return _batch_norm_jvp(tangents, input, weight, running_mean, running_var, training, eps, result)


def _batch_norm_no_stats_jvp(tangents, input, weight, bias, training, momentum, eps, result):
    return _batch_norm_jvp(tangents, input, weight, None, None, training, eps, result)


@derivative(
    aten._native_batch_norm_legit.default,
    aten._native_batch_norm_legit_no_training.default,  # evaluation mode: no ``training`` argument
    save=("input", "weight", "running_mean", "running_var", "result"),
    output_differentiable=(True, False, False),
    refuse=("running_mean", "running_var"),
    jvp=_batch_norm_stats_jvp,
)
def _native_batch_norm_legit(grad, input, weight, running_mean, running_var, eps, result, needs, training=False, **_):
    grads = _batch_norm_grads(grad, input, weight, running_mean, running_var, training, eps, result, needs)
    return (*grads, None, None)


@derivative(
    aten._native_batch_norm_legit.no_stats,
    save=("input", "weight", "result"),
    output_differentiable=(True, False, False),
    jvp=_batch_norm_no_stats_jvp,
)
def _native_batch_norm_no_stats(grad, input, weight, training, eps, result, needs, **_):
    return _batch_norm_grads(grad, input, weight, None, None, training, eps, result, needs)


def _batch_norm_backward_with_history(
    grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask
):
    """The decomposition of ``native_batch_norm_backward`` as double backward records it: in
    training, with the statistics recomputed from the input, so that their dependence on it is
    differentiated too (the saved ones carry no history)."""
    if train and input.requires_grad:
        wide = D.float32 if input.dtype in (D.float16, D.bfloat16) else input.dtype
        dims = [0, *range(2, input.ndim)]
        x = input.to(wide)
        mean = x.mean(dims, keepdim=True)
        deviation = x - mean
        save_invstd = ((deviation * deviation).mean(dims, keepdim=True) + eps).rsqrt().reshape(-1)
        save_mean = mean.reshape(-1)
    return aten.native_batch_norm_backward.default.decomposition(
        grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask
    )


# Double backward records the parts of its decomposition, the statistics with their history.
through_decomposition(aten.native_batch_norm_backward.default, via=_batch_norm_backward_with_history)
