"""``AdaptiveLogSoftmaxWithLoss``: the efficient softmax of Grave et al. for large vocabularies.

The head scores the frequent classes (the shortlist, below ``cutoffs[0]``) and one entry per
tail cluster; each tail cluster projects the input down (by ``div_value`` per cluster) and scores
its own classes. A target's log-probability is the head's for a shortlist class, or the head's for
its cluster plus the cluster's own. Layout, names and initialization are PyTorch's.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence

import numpy as np

from ember.core import dtypes as D
from ember.core.aten.shape.joining import cat
from ember.core.creation import tensor as make_tensor
from ember.core.tensor import Tensor
from ember.nn import functional as F
from ember.nn.modules.container import ModuleList, Sequential
from ember.nn.modules.linear import Linear
from ember.nn.modules.module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(
        self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
        head_bias: bool = False, device=None, dtype=None,
    ) -> None:  # fmt: skip
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > (n_classes - 1)
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where "
                "each value is between 1 and n_classes-1"
            )
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(self.in_features, self.head_size, bias=self.head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(self.in_features // (self.div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(self.in_features, hidden, bias=False, device=device, dtype=dtype),
                    Linear(hidden, size, bias=False, device=device, dtype=dtype),
                )
            )

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        dim = target_.dim()
        if dim == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(
                    f"1D target tensor expects 2D input tensors, but found inputs with size {input_.size()}"
                )
        elif dim == 0:
            if input_.dim() != 1:
                raise RuntimeError(
                    f"0D target tensor expects 1D input tensors, but found inputs with size {input_.size()}"
                )
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = dim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        labels = np.asarray(target.numpy(), dtype=np.int64).reshape(-1)
        batch = labels.size
        output = input.new_zeros(batch)
        head_index = np.zeros(batch, dtype=np.int64)
        bounds = [0, *self.cutoffs]
        used = 0
        for i in range(len(bounds) - 1):
            low, high = bounds[i], bounds[i + 1]
            rows = np.nonzero((labels >= low) & (labels < high))[0]
            if rows.size == 0:
                continue
            if i == 0:
                head_index[rows] = labels[rows]
            else:
                row_index = make_tensor(rows, dtype=D.int64, device=input.device)
                cluster = self.tail[i - 1](input.index_select(0, row_index))
                head_index[rows] = self.shortlist_size + i - 1
                local = F.log_softmax(cluster, dim=1).gather(
                    1, make_tensor(labels[rows] - low, dtype=D.int64, device=input.device).unsqueeze(1)
                )
                output = output.index_add(0, row_index, local.squeeze(1))
            used += rows.size
        if used != batch:
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range [{labels.min()}, "
                f"{labels.max()}] were found. "
            )
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(
            1, make_tensor(head_index, dtype=D.int64, device=input.device).unsqueeze(1)
        ).squeeze(1)
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """The log-probability of every class, ``(N, n_classes)``."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class of each example (``log_prob(input).argmax(1)``)."""
        return self.log_prob(input).argmax(-1)
