"""``torch.nn.functional``'s normalizations: layer_norm, rms_norm, group_norm, batch_norm (with
``_verify_batch_size``'s ValueError in training) and normalize (``x / max(||x||_p, eps)``)."""

from __future__ import annotations

from ember.core.aten.nn import normalization as N
from ember.core.aten.pointwise.binary import div_function

__all__ = ["batch_norm", "group_norm", "layer_norm", "normalize", "rms_norm"]


def _verify_batch_size(size) -> None:
    values = size[0]
    for n in size[2:]:
        values *= n
    if values == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalize over the last ``len(normalized_shape)`` dimensions, then scale and shift."""
    return N.layer_norm(input, normalized_shape, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Divide by the root mean square over the last dimensions; ``eps=None`` is the dtype's epsilon."""
    return N.rms_norm(input, normalized_shape, weight, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Normalize each group of channels of each sample (input ``(N, C, *)``)."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    # As PyTorch: checked before the divisibility of the channels (num_groups=0 divides by zero here too).
    _verify_batch_size([input.shape[0] * input.shape[1] // num_groups, num_groups, *input.shape[2:]])
    return N.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    """Normalize over every dimension but dim 1; in training, update the running statistics in place."""
    if training:
        _verify_batch_size(input.shape)
    return N.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, True)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom
    return div_function(input, denom, out=out)
