"""In-place samplers PyTorch offers that are transforms of a uniform or normal draw: ``cauchy_``
(the inverse CDF ``median + sigma * tan(pi * (u - 1/2))``), ``geometric_`` (the number of Bernoulli
trials to the first success, ``ceil(log(1 - u) / log(1 - p))``) and ``log_normal_`` (``exp`` of a
normal draw). Each draws from the generator as the sampler it builds on does, so
``ember.manual_seed`` replays it; the values are not PyTorch's draws.
"""

from __future__ import annotations

import math

from ember.core import dtypes as D
from ember.core.api import method
from ember.core.tensor import Tensor


def _floating(name: str, self: Tensor) -> None:
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {self.dtype}")


@method("cauchy_")
def cauchy_(self: Tensor, median: float = 0, sigma: float = 1, *, generator=None) -> Tensor:
    _floating("cauchy_", self)
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    u = self.new_empty(tuple(self.shape), dtype=D.float64).uniform_(generator=generator)
    return self.copy_((u - 0.5).mul_(math.pi).tan_().mul_(sigma).add_(median))


@method("geometric_")
def geometric_(self: Tensor, p: float, *, generator=None) -> Tensor:
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = self.new_empty(tuple(self.shape), dtype=D.float64).uniform_(generator=generator)
    return self.copy_((1 - u).log_().div_(math.log1p(-p)).ceil_().clamp_(min=1))


@method("log_normal_")
def log_normal_(self: Tensor, mean: float = 1, std: float = 2, *, generator=None) -> Tensor:
    _floating("log_normal_", self)
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return self.normal_(mean, std, generator=generator).exp_()
