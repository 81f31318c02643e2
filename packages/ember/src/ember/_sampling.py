"""``ember.poisson`` and ``ember.binomial``: elementwise draws from Ember's default generator.

The samplers are those of ``ember.distributions`` (ember-nn, which the core cannot import), so
``ember`` reaches them here on first use. As in PyTorch the draw has no gradient but takes part in
autograd: the rates' gradient through it is zero.
"""

from __future__ import annotations

from ember.core import dtypes as D
from ember.core.tensor import Tensor

__all__ = ["binomial", "poisson"]


def _no_explicit_generator(name: str, generator) -> None:
    if generator is not None:
        raise NotImplementedError(
            f"ember.{name}: an explicit generator is not supported; it draws from the default one"
        )


def _with_zero_gradient(draw: Tensor, *inputs: Tensor) -> Tensor:
    for t in inputs:
        if t.requires_grad:
            draw = draw + (t - t.detach()) * 0
    return draw


def poisson(input: Tensor, generator=None) -> Tensor:
    """Poisson draws with rates ``input`` (a floating tensor of non-negative rates)."""
    import ember
    from ember.distributions.poisson import _poisson

    _no_explicit_generator("poisson", generator)
    if not input.is_floating_point():
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{D.SCALAR_TYPE_NAMES[input.dtype]}'")
    if bool((input < 0).any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    with ember.no_grad():
        draw = _poisson(input.detach().to(ember.float64)).to(input.dtype)
    return _with_zero_gradient(draw, input)


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """Binomial draws of ``count`` trials with success probabilities ``prob``, in ``count``'s dtype."""
    import ember
    from ember.distributions.binomial import _binomial

    _no_explicit_generator("binomial", generator)
    n, p = ember.broadcast_tensors(count.detach(), prob.detach())
    with ember.no_grad():
        draw = _binomial(n, p).to(count.dtype)
    return _with_zero_gradient(draw, count, prob)
