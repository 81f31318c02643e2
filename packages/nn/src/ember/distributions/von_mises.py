"""The von Mises distribution on the circle. log I0 and log I1 use the polynomial approximations of
Abramowitz and Stegun (9.8.1-9.8.4), the same ones PyTorch uses, so densities agree to its digits."""

from __future__ import annotations

import math

from . import constraints
from ._ember import ember
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

# Abramowitz and Stegun 9.8.1-9.8.4: I0 and I1 below 3.75 (in (x / 3.75)^2) and above (in 3.75 / x)
_SMALL = (
    (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2),
    (0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3),
)
_LARGE = (
    (0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1, -0.1647633e-1, 0.392377e-2),
    (0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1, -0.2895312e-1, 0.1787654e-1, -0.420059e-2),
)  # fmt: skip


def _horner(y, coefs):
    result = coefs[-1]
    for c in reversed(coefs[:-1]):
        result = c + y * result
    return result


def _log_modified_bessel_fn(x, order: int = 0):
    """log I_order(x) for x > 0 and order 0 or 1."""
    if order not in (0, 1):
        raise AssertionError(f"order must be 0 or 1, got {order}")
    y = (x / 3.75) ** 2
    small = _horner(y, _SMALL[order])
    if order == 1:
        small = x.abs() * small
    small = small.log()
    large = x - 0.5 * x.log() + _horner(3.75 / x, _LARGE[order]).log()
    return ember.where(x < 3.75, small, large)


class VonMises(Distribution):
    """Circular von Mises distribution with mean angle ``loc`` and ``concentration``."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}  # noqa: RUF012 (read-only, as PyTorch declares it)
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(VonMises, batch_shape, _instance, ("loc", "concentration"))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * ember.cos(value - self.loc)
        return log_prob - math.log(2 * math.pi) - _log_modified_bessel_fn(self.concentration, order=0)

    def sample(self, sample_shape=()):
        """Best and Fisher's rejection sampler (Applied Statistics, 1979), in float64 as small
        concentrations need it."""
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            loc = self.loc.to(ember.float64).expand(shape)
            kappa = self.concentration.to(ember.float64).expand(shape)
            tau = 1 + (1 + 4 * kappa**2).sqrt()
            rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
            r = ember.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho**2) / (2 * rho))
            x = ember.zeros(shape, dtype=ember.float64)
            done = ember.zeros(shape, dtype=ember.bool)
            while not bool(done.all()):
                u1 = ember.rand(shape, dtype=ember.float64)
                u2 = ember.rand(shape, dtype=ember.float64)
                u3 = ember.rand(shape, dtype=ember.float64)
                z = ember.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                x = ember.where(accept & ~done, (u3 - 0.5).sign() * f.clamp(min=-1, max=1).acos(), x)
                done = done | accept
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance 1 - I1(k) / I0(k)."""
        ratio = (
            _log_modified_bessel_fn(self.concentration, order=1) - _log_modified_bessel_fn(self.concentration, order=0)
        ).exp()
        return 1 - ratio
