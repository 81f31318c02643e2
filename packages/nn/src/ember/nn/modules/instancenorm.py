"""``InstanceNorm1d/2d/3d``: normalize each channel of each sample over its spatial dimensions.

They share batch norm's parameters and buffers (without either by default: ``affine=False``,
``track_running_stats=False``); the batch statistics are used in training and whenever running
statistics are not tracked.
"""

from __future__ import annotations

import warnings

from ember.core.tensor import Tensor
from ember.nn import functional as F
from ember.nn.modules.batchnorm import _BatchNorm, _LazyNormBase

__all__ = [
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
]


class _InstanceNorm(_BatchNorm):
    _spatial = 0

    def __init__(
        self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
        track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True,
    ) -> None:  # fmt: skip
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input: Tensor) -> None:
        n = self._spatial
        if input.dim() not in (n + 1, n + 2):
            raise ValueError(f"expected {n + 1}D or {n + 2}D input (got {input.dim()}D input)")

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ) -> None:
        # Checkpoints older than 0.4 carried running statistics an untracked layer has no buffer for.
        if local_metadata.get("version", None) is None and not self.track_running_stats:
            keys = [prefix + name for name in ("running_mean", "running_var") if prefix + name in state_dict]
            if keys:
                name = type(self).__name__
                names = " and ".join('"' + k + '"' for k in keys)
                error_msgs.append(
                    f"Unexpected running stats buffer(s) {names} "
                    f"for {name} with track_running_stats=False. If state_dict is a checkpoint saved before 0.4.0, "
                    f"this may be expected because {name} does not track running stats by default since 0.4.0. "
                    "Please remove these keys from state_dict. If the running stats are actually needed, instead set "
                    f"track_running_stats=True in {name} to enable them. See the documentation of {name} for details."
                )
                for key in keys:
                    state_dict.pop(key)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def _normalize(self, input: Tensor) -> Tensor:
        return F.instance_norm(
            input, self.running_mean, self.running_var, self.weight, self.bias,
            self.training or not self.track_running_stats, self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        feature_dim = input.dim() - (self._spatial + 1)
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match num_features ({self.num_features}), "
                    f"but got: {input.size(feature_dim)}."
                )
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. You can silence this warning by "
                "not passing in num_features, which is not used because affine=False",
                stacklevel=2,
            )
        if input.dim() == self._spatial + 1:
            return self._normalize(input.unsqueeze(0)).squeeze(0)
        return self._normalize(input)


class InstanceNorm1d(_InstanceNorm):
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    _spatial = 3


class LazyInstanceNorm1d(_LazyNormBase, InstanceNorm1d):
    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormBase, InstanceNorm2d):
    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNormBase, InstanceNorm3d):
    cls_to_become = InstanceNorm3d
