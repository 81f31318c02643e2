"""The top-level batch-norm pieces PyTorch exposes for synchronized batch norm and its kernels
(``ember.batch_norm_stats``, ``ember.batch_norm_gather_stats_with_counts``, ...), and the other
normalization functions of ATen's top level (``native_batch_norm``, ``instance_norm``,
``norm_except_dim``, ``native_norm``).

Synchronized batch norm splits one batch norm into steps: each process takes its batch's per-channel
mean and ``1/std`` (``batch_norm_stats``), the processes' statistics are combined by their counts
(``batch_norm_gather_stats_with_counts``), and the input is normalized with the combined ones
(``batch_norm_elemt``); backward goes the same way (``batch_norm_backward_reduce`` sums, then
``batch_norm_backward_elemt``). PyTorch runs these steps only on CUDA; here they are composed of
ordinary ops, so they run on every device and differentiate. Channels are dimension 1; statistics
are over every other dimension. Statistics of half-precision inputs are float32, as PyTorch's.
"""

from __future__ import annotations

from collections.abc import Sequence

import ember
from ember.autograd import no_grad
from ember.core import dtypes as D
from ember.core.tensor import Tensor

__all__ = [
    "batch_norm_backward_elemt",
    "batch_norm_backward_reduce",
    "batch_norm_elemt",
    "batch_norm_gather_stats",
    "batch_norm_gather_stats_with_counts",
    "batch_norm_stats",
    "batch_norm_update_stats",
    "instance_norm",
    "native_batch_norm",
    "native_norm",
    "norm_except_dim",
]


def _reduced_dims(input: Tensor, name: str) -> tuple[int, ...]:
    if input.dim() < 2:
        raise RuntimeError(f"{name}: expected an input of at least 2 dimensions (N, C, ...), got {input.dim()}-D")
    return (0, *range(2, input.dim()))


def _statistics_dtype(input: Tensor) -> D.dtype:
    return D.float32 if input.dtype in (D.float16, D.bfloat16) else input.dtype


def _channel_shape(input: Tensor) -> tuple[int, ...]:
    """The shape that broadcasts a per-channel vector against ``input``."""
    return (1, input.shape[1], *([1] * (input.dim() - 2)))


def batch_norm_stats(input: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """Per-channel ``(mean, 1/sqrt(biased variance + eps))`` of ``input``."""
    dims = _reduced_dims(input, "batch_norm_stats")
    x = input.to(_statistics_dtype(input))
    var, mean = ember.var_mean(x, dims, correction=0)
    return mean, (var + eps).rsqrt()


def batch_norm_elemt(
    input: Tensor, weight: Tensor | None, bias: Tensor | None, mean: Tensor, invstd: Tensor, eps: float
) -> Tensor:
    """``(input - mean) * invstd * weight + bias`` per channel (``eps`` is already in ``invstd``)."""
    shape = _channel_shape(input)
    scale = invstd if weight is None else invstd * weight
    shift = -mean * scale
    if bias is not None:
        shift = shift + bias
    out = input * scale.reshape(shape).to(input.dtype) + shift.reshape(shape).to(input.dtype)
    return out.to(input.dtype)


def batch_norm_gather_stats_with_counts(
    input: Tensor,
    mean: Tensor,
    invstd: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    momentum: float,
    eps: float,
    counts: Tensor,
) -> tuple[Tensor, Tensor]:
    """Combine the per-group statistics ``mean``/``invstd`` ``(G, C)`` of groups of ``counts`` elements
    into the whole batch's; update the running statistics in place (with the unbiased variance)."""
    if mean.dim() != 2 or invstd.shape != mean.shape:
        raise RuntimeError(
            f"batch_norm_gather_stats: expected mean and invstd of the same shape (groups, channels), got "
            f"{list(mean.shape)} and {list(invstd.shape)}"
        )
    n = counts.to(mean.dtype).reshape(-1, 1)
    if n.shape[0] != mean.shape[0]:
        raise RuntimeError(f"batch_norm_gather_stats: expected {mean.shape[0]} counts, got {counts.numel()}")
    total = n.sum(0)
    combined = (n * mean).sum(0) / total
    var = 1 / (invstd * invstd) - eps  # each group's biased variance
    sum_squares = (n * (var + (mean - combined) ** 2)).sum(0)
    new_invstd = (sum_squares / total + eps).rsqrt()
    with no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(combined.to(running_mean.dtype), alpha=momentum)
        if running_var is not None:
            unbiased = sum_squares / (total - 1)
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
    return combined, new_invstd


def batch_norm_gather_stats(
    input: Tensor,
    mean: Tensor,
    invstd: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    momentum: float,
    eps: float,
    count: int,
) -> tuple[Tensor, Tensor]:
    """``batch_norm_gather_stats_with_counts`` where every group has ``count`` elements."""
    counts = ember.full((mean.shape[0],), count, dtype=mean.dtype, device=mean.device)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts)


def batch_norm_backward_reduce(
    grad_out: Tensor,
    input: Tensor,
    mean: Tensor,
    invstd: Tensor,
    weight: Tensor | None,
    input_g: bool,
    weight_g: bool,
    bias_g: bool,
) -> tuple[Tensor | None, Tensor | None, Tensor | None, Tensor | None]:
    """Per-channel ``(sum(grad_out), sum(grad_out * (input - mean)), grad_weight, grad_bias)``; the sums
    only with ``input_g``, the gradients only with ``weight_g``/``bias_g`` (None otherwise)."""
    dims = _reduced_dims(input, "batch_norm_backward_reduce")
    dtype = _statistics_dtype(input)
    dy = grad_out.to(dtype)
    centred = input.to(dtype) - mean.reshape(_channel_shape(input)).to(dtype)
    sum_dy = dy.sum(dims)
    sum_dy_xmu = (dy * centred).sum(dims)
    grad_weight = grad_bias = None
    if weight_g:
        grad_weight = sum_dy_xmu * invstd
        if weight is not None:
            grad_weight = grad_weight.to(weight.dtype)
    if bias_g:
        grad_bias = sum_dy if weight is None else sum_dy.to(weight.dtype)
    if not input_g:
        sum_dy = sum_dy_xmu = None
    return sum_dy, sum_dy_xmu, grad_weight, grad_bias


def batch_norm_backward_elemt(
    grad_out: Tensor,
    input: Tensor,
    mean: Tensor,
    invstd: Tensor,
    weight: Tensor | None,
    sum_dy: Tensor,
    sum_dy_xmu: Tensor,
    count: Tensor,
) -> Tensor:
    """The input's gradient from the (all-reduced) sums of ``batch_norm_backward_reduce`` and the
    groups' element ``count``."""
    shape = _channel_shape(input)
    total = count.to(sum_dy.dtype).sum()
    mean_dy = (sum_dy / total).reshape(shape)
    mean_dy_xmu = (sum_dy_xmu / total).reshape(shape)
    inv = invstd.reshape(shape)
    scale = inv if weight is None else inv * weight.reshape(shape)
    centred = input - mean.reshape(shape)
    grad = (grad_out - mean_dy - centred * inv * inv * mean_dy_xmu) * scale
    return grad.to(input.dtype)


def batch_norm_update_stats(
    input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, momentum: float
) -> tuple[Tensor, Tensor]:
    """Per-channel ``(mean, biased variance)``; the running statistics move towards the mean and the
    unbiased variance by ``momentum``, in place."""
    dims = _reduced_dims(input, "batch_norm_update_stats")
    x = input.to(_statistics_dtype(input))
    var, mean = ember.var_mean(x, dims, correction=0)
    count = x.numel() // max(x.shape[1], 1)
    with no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
        if running_var is not None:
            unbiased = var * (count / (count - 1)) if count > 1 else var * float("inf")
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
    return mean, var


def native_batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """``(output, save_mean, save_invstd)``: batch norm with its saved statistics (empty in evaluation)."""
    if running_mean is None or running_var is None:
        if not training:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        return ember._native_batch_norm_legit(input, weight, bias, training, momentum, eps)
    return ember._native_batch_norm_legit(input, weight, bias, running_mean, running_var, training, momentum, eps)


def instance_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    use_input_stats: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    """Normalize each (sample, channel) plane over its other dimensions, with ATen's argument order
    (``cudnn_enabled`` changes nothing). It is batch norm over a ``(1, N*C, ...)`` view; the running
    statistics it updates are averaged back over the samples."""
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    n, c = input.shape[0], input.shape[1]
    repeat = lambda t: None if t is None else t.repeat(n)  # noqa: E731
    mean, var = repeat(running_mean), repeat(running_var)
    x = input.reshape(1, n * c, *input.shape[2:])
    out = ember.batch_norm(x, repeat(weight), repeat(bias), mean, var, use_input_stats, momentum, eps, False)
    if use_input_stats:
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(mean.reshape(n, c).mean(0))
            if running_var is not None:
                running_var.copy_(var.reshape(n, c).mean(0))
    return out.reshape(input.shape)


def norm_except_dim(v: Tensor, pow: int = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm over every dimension but ``dim``, keeping the dimensions (size 1); ``dim=-1``
    takes the norm of the whole tensor (a scalar), as weight normalization uses it."""
    if dim == -1:
        return ember.linalg.vector_norm(v, pow)
    ndim = v.dim()
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    dim %= ndim
    others = tuple(d for d in range(ndim) if d != dim)
    return ember.linalg.vector_norm(v, pow, dim=others, keepdim=True)


def native_norm(
    input: Tensor,
    p: float | None = 2,
    dim: Sequence[int] | int | None = None,
    keepdim: bool = False,
    dtype: D.dtype | None = None,
) -> Tensor:
    """The ``p``-norm of ``input`` (a sparse COO tensor: of its values; PyTorch's kernel is sparse only,
    this one takes dense tensors too). The second form reduces over ``dim`` (all of it, for sparse)."""
    order = 2 if p is None else p
    if input.is_sparse:
        dims = [] if dim is None else ([dim] if isinstance(dim, int) else list(dim))
        if dims and sorted(d % input.dim() for d in dims) != list(range(input.dim())):
            raise RuntimeError(
                "norm_sparse currently only supports full reductions, so 'dim' must either be empty or contain all "
                "dimensions of the input"
            )
        values = input.coalesce().values()
        return ember.linalg.vector_norm(values, order, dtype=dtype)
    if dim is None:
        return ember.linalg.vector_norm(input, order, dtype=dtype)
    return ember.linalg.vector_norm(input, order, dim=dim, keepdim=keepdim, dtype=dtype)
