from __future__ import annotations

from numbers import Number

from ember.core.tensor import Size

from . import constraints
from ._ember import ember
from .exp_family import ExponentialFamily
from .utils import broadcast_all, digamma, lgamma, standard_gamma, xlogy

__all__ = ["Gamma"]


class _StandardGammaSample(ember.autograd.Function):
    """Gamma(alpha, 1) draws with the implicit reparameterization gradient dx/dalpha = -(dF/dalpha) / f(x)."""

    @staticmethod
    def forward(ctx, alpha):
        x = standard_gamma(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * _standard_gamma_grad(alpha, x)


def _standard_gamma_grad(alpha, x):
    """d x / d alpha for x ~ Gamma(alpha, 1) with the uniform noise held fixed: -(dP(alpha, x)/dalpha) / p(x; alpha).

    dP/dalpha is taken by a central difference of the regularized lower incomplete gamma P(alpha, x),
    itself summed from its power series (for x < alpha + 1) or its continued fraction (otherwise)."""
    import numpy as np

    a = alpha.detach().to(ember.float64).numpy()
    xs = x.detach().to(ember.float64).numpy()
    a, xs = np.broadcast_arrays(a, xs)
    h = 1e-5 * np.maximum(a, 1.0)
    dp = (_regularized_gamma_p(a + h, xs) - _regularized_gamma_p(a - h, xs)) / (2 * h)
    from math import lgamma as _lg

    lg = np.vectorize(_lg)(a)
    log_pdf = (a - 1) * np.log(xs) - xs - lg
    out = -dp / np.exp(log_pdf)
    return ember.tensor(out, dtype=alpha.dtype)


def _regularized_gamma_p(a, x):
    from math import lgamma as _lg

    import numpy as np

    a = np.asarray(a, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(a)
    for idx in np.ndindex(a.shape):
        ai, xi = float(a[idx]), float(x[idx])
        if xi <= 0:
            out[idx] = 0.0
            continue
        log_front = ai * np.log(xi) - xi - _lg(ai)
        if xi < ai + 1:
            term, total, n = 1.0 / ai, 1.0 / ai, ai
            for _ in range(1000):
                n += 1
                term *= xi / n
                total += term
                if abs(term) < abs(total) * 1e-16:
                    break
            out[idx] = total * np.exp(log_front)
        else:  # Lentz's continued fraction for Q
            tiny = 1e-300
            b = xi + 1 - ai
            c, d = 1 / tiny, 1 / b
            f = d
            for i in range(1, 1000):
                an = -i * (i - ai)
                b += 2
                d = an * d + b
                d = tiny if abs(d) < tiny else d
                c = b + an / c
                c = tiny if abs(c) < tiny else c
                d = 1 / d
                delta = d * c
                f *= delta
                if abs(delta - 1) < 1e-16:
                    break
            out[idx] = 1 - np.exp(log_front) * f
    return out


class _RegularizedGammaP(ember.autograd.Function):
    """P(a, x), the regularized lower incomplete gamma function, with gradients in both arguments
    (dP/dx is the Gamma(a, 1) density; dP/da a central difference of the series)."""

    @staticmethod
    def forward(ctx, a, x):
        import numpy as np

        a64 = a.detach().to(ember.float64).numpy()
        x64 = x.detach().to(ember.float64).numpy()
        a64, x64 = np.broadcast_arrays(a64, x64)
        ctx.save_for_backward(a, x)
        return ember.tensor(_regularized_gamma_p(a64, x64), dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad):
        import numpy as np

        a, x = ctx.saved_tensors
        a64, x64 = np.broadcast_arrays(a.detach().to(ember.float64).numpy(), x.detach().to(ember.float64).numpy())
        h = 1e-5 * np.maximum(a64, 1.0)
        dp_da = (_regularized_gamma_p(a64 + h, x64) - _regularized_gamma_p(a64 - h, x64)) / (2 * h)
        dp_dx = ember.exp(xlogy(a - 1, x) - x - lgamma(a))
        grad_a = _sum_to(grad * ember.tensor(dp_da, dtype=grad.dtype), a.shape)
        grad_x = _sum_to(grad * dp_dx, x.shape)
        return grad_a, grad_x


def _sum_to(t, shape):
    while t.dim() > len(shape):
        t = t.sum(0)
    for i, size in enumerate(shape):
        if size == 1 and t.shape[i] != 1:
            t = t.sum(i, keepdim=True)
    return t


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x) (``torch.special.gammainc``), for a > 0."""
    a, x = broadcast_all(a, x)
    return _RegularizedGammaP.apply(a, x)


def _rsample_standard_gamma(alpha):
    if alpha.requires_grad and ember.is_grad_enabled():
        return _StandardGammaSample.apply(alpha)
    return standard_gamma(alpha)


class Gamma(ExponentialFamily):
    """Gamma distribution with shape ``concentration`` and ``rate``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}  # noqa: RUF012 (read-only, as PyTorch declares it)
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        batch_shape = (
            Size() if isinstance(concentration, Number) and isinstance(rate, Number) else self.concentration.size()
        )
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, ("concentration", "rate"))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = _rsample_standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=ember.finfo(value.dtype).tiny)

    def log_prob(self, value):
        value = ember.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (
            xlogy(self.concentration, self.rate)
            + xlogy(self.concentration - 1, value)
            - self.rate * value
            - lgamma(self.concentration)
        )

    def entropy(self):
        return (
            self.concentration
            - ember.log(self.rate)
            + lgamma(self.concentration)
            + (1.0 - self.concentration) * digamma(self.concentration)
        )

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return lgamma(x + 1) + (x + 1) * ember.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)
