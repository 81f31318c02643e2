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
    """P(a, x) in float64 numpy, vectorized: the power series where x < a + 1, Lentz's continued
    fraction for 1 - P elsewhere (Numerical Recipes' split); each runs until every element converged."""
    from math import lgamma as _lg

    import numpy as np

    a = np.asarray(a, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    a, x = np.broadcast_arrays(a, x)
    out = np.zeros(a.shape)
    positive = x > 0
    xs = np.where(positive, x, 1.0)
    log_front = a * np.log(xs) - xs - np.vectorize(_lg, otypes=[np.float64])(a)
    use_series = positive & (x < a + 1)
    use_cf = positive & ~use_series
    # each branch runs on benign stand-ins where the other branch applies, so nothing overflows
    a_s, x_s = np.where(use_series, a, 1.0), np.where(use_series, xs, 0.5)
    a_c, x_c = np.where(use_cf, a, 1.0), np.where(use_cf, xs, 2.0)
    # series: sum_n x^n / (a (a + 1) ... (a + n))
    term = 1.0 / a_s
    total = term.copy()
    n = a_s.copy()
    for _ in range(2000):
        n = n + 1
        term = term * x_s / n
        total = total + term
        if not np.any(np.abs(term) >= np.abs(total) * 1e-16):
            break
    series = total * np.exp(log_front)
    # continued fraction for Q(a, x) = 1 - P(a, x)
    tiny = 1e-300
    b = x_c + 1 - a_c
    c = np.full(a.shape, 1 / tiny)
    d = 1 / np.where(np.abs(b) < tiny, tiny, b)
    f = d.copy()
    for i in range(1, 2000):
        an = -i * (i - a_c)
        b = b + 2
        d = an * d + b
        d = np.where(np.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = np.where(np.abs(c) < tiny, tiny, c)
        d = 1 / d
        delta = d * c
        f = f * delta
        if not np.any(np.abs(delta - 1) >= 4e-16):
            break
    cf = 1 - np.exp(log_front) * f
    out = np.where(use_series, series, np.where(use_cf, cf, out))
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
