"""``BatchNorm1d``, ``BatchNorm2d`` and ``BatchNorm3d``: normalize over every dimension but the channels.

In training the batch statistics normalize and the running statistics move towards them by
``momentum`` (a cumulative average when ``momentum=None``); in eval the running statistics
normalize, unless the module does not track them.
"""

from __future__ import annotations

import sys

from ember.autograd import no_grad
from ember.core import dtypes as D
from ember.core.aten.factories.factories import empty_function, ones_function, zeros_function
from ember.core.creation import tensor as make_tensor
from ember.core.tensor import Tensor
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.lazy import LazyModuleMixin
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter, UninitializedBuffer, UninitializedParameter

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "SyncBatchNorm",
]


class _BatchNorm(Module):
    _version = 2

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(empty_function(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty_function(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros_function(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones_function(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", make_tensor(0, dtype=D.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ) -> None:
        version = local_metadata.get("version", None)
        # Checkpoints from before num_batches_tracked existed load with a count of zero.
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = make_tensor(0, dtype=D.int64)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        keep_running = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if keep_running else None,
            self.running_var if keep_running else None,
            self.weight,
            self.bias,
            use_batch_stats,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _LazyNormBase(LazyModuleMixin):
    """The lazy batch and instance norms: ``num_features`` is read from the first input's dim 1."""

    def __init__(
        self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True, track_running_stats: bool = True,
        device=None, dtype=None,
    ) -> None:  # fmt: skip
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = make_tensor(0, dtype=D.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        with no_grad():
            if self.affine:
                self.weight.materialize((self.num_features,))
                self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    cls_to_become = BatchNorm3d


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose statistics would be computed across a process group in training. Within
    one process it is ``BatchNorm``; synchronizing across processes is not implemented and raises."""

    def __init__(
        self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
        track_running_stats: bool = True, process_group=None, device=None, dtype=None,
    ) -> None:  # fmt: skip
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        # ember.distributed sits above this package: ask it only if the program has loaded it.
        distributed = sys.modules.get("ember.distributed")
        if (
            self.training
            and distributed is not None
            and distributed.is_initialized()
            and distributed.get_world_size(self.process_group) > 1
        ):
            raise NotImplementedError("SyncBatchNorm across several processes is not implemented in ember")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """``module`` with every batch norm layer in it replaced by a ``SyncBatchNorm`` holding its state."""
        output = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            output = SyncBatchNorm(
                module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                process_group,
            )  # fmt: skip
            if module.affine:
                with no_grad():
                    output.weight = module.weight
                    output.bias = module.bias
            output.running_mean = module.running_mean
            output.running_var = module.running_var
            output.num_batches_tracked = module.num_batches_tracked
            output.training = module.training
        for name, child in module.named_children():
            output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return output
