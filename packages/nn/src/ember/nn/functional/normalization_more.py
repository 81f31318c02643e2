"""``instance_norm`` and ``local_response_norm``, composed from ``batch_norm`` and ``avg_pool``.

Instance norm is batch norm over a ``(1, N C, *)`` view: each (sample, channel) plane becomes one
channel, so its statistics are the plane's; per-channel weights and running statistics are
repeated ``N`` times, and the running statistics the batch norm updated are averaged back over the
samples, as PyTorch does.
"""

from __future__ import annotations

from ember.autograd import no_grad
from ember.core.functional import avg_pool2d, batch_norm
from ember.core.functional import pad as _pad
from ember.core.tensor import Tensor

__all__ = ["instance_norm", "local_response_norm"]


def instance_norm(
    input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None, weight: Tensor | None = None,
    bias: Tensor | None = None, use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5,
) -> Tensor:  # fmt: skip
    """Normalize each channel of each sample over its spatial dimensions."""
    if use_input_stats:
        spatial = 1
        for n in input.shape[2:]:
            spatial *= n
        if spatial == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.size()}")
    n, c = input.shape[0], input.shape[1]
    x = input.reshape(1, n * c, *input.shape[2:])
    repeat = lambda t: None if t is None else t.repeat(n)  # noqa: E731
    mean, var = repeat(running_mean), repeat(running_var)
    if not use_input_stats and (mean is None or var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    out = batch_norm(x, mean, var, repeat(weight), repeat(bias), use_input_stats, momentum, eps)
    if use_input_stats:
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(mean.reshape(n, c).mean(0))
            if running_var is not None:
                running_var.copy_(var.reshape(n, c).mean(0))
    return out.reshape(input.shape)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Divide by ``(k + alpha * mean of squares over `size` neighbouring channels) ** beta``."""
    dim = input.dim()
    if dim < 3:
        # PyTorch's message, with the run of spaces its source line break leaves in it.
        raise ValueError(f"Expected 3D or higher dimensionality{' ' * 26}input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input * input
    if dim == 3:
        div = _pad(div.unsqueeze(1), [0, 0, size // 2, (size - 1) // 2])
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        from ember.nn.functional.pooling_nd import avg_pool3d

        sizes = tuple(input.shape)
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = _pad(div, [0, 0, 0, 0, size // 2, (size - 1) // 2])
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).reshape(sizes)
    div = (div * alpha + k).pow(beta)
    return input / div
