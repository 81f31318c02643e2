from __future__ import annotations

from . import constraints
from ._ember import ember
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, lgamma, logits_to_probs, probs_to_logits

__all__ = ["Binomial"]


def _clamp_by_zero(x):
    # clamp(min=0) with gradient 1/2 at 0, as PyTorch's
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(Distribution):
    """Number of successes in ``total_count`` Bernoulli(probs) trials."""

    arg_constraints = {  # noqa: RUF012 (read-only, as PyTorch declares it)
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = self._param.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(Binomial, batch_shape, _instance, ("total_count", "probs", "logits"))
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            n = self.total_count.expand(shape).detach()
            p = self.probs.expand(shape).detach()
            return _binomial(n, p).to(self.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = lgamma(self.total_count + 1)
        log_factorial_k = lgamma(value + 1)
        log_factorial_nmk = lgamma(self.total_count - value + 1)
        normalize_term = (
            self.total_count * _clamp_by_zero(self.logits)
            + self.total_count * ember.log1p(ember.exp(-ember.abs(self.logits)))
            - log_factorial_n
        )
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total_count = int(self.total_count.max())
        if not bool((self.total_count == total_count).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(ember.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = int(self.total_count.max())
        if not bool((self.total_count == total_count).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = ember.arange(1 + total_count, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


def _binomial(n, p):
    """Binomial draws: inversion of the cdf where n * min(p, 1 - p) < 10, Hormann's BTRS rejection above.
    Both work with q = min(p, 1 - p) and reflect the count when p > 1/2."""
    n = n.to(ember.float64)
    p = p.to(ember.float64)
    flip = p > 0.5
    q = ember.where(flip, 1 - p, p)
    mean = n * q
    small = mean < 10
    out = ember.zeros_like(n)
    # inversion: walk the pmf from k = 0 until the cdf passes u
    qs = ember.where(small, q, ember.zeros_like(q))
    ratio = qs / (1 - qs)
    pmf = ember.exp(n * ember.log1p(-qs))
    cdf = pmf.clone()
    u = ember.rand(n.shape, dtype=ember.float64, device=n.device)
    k = ember.zeros_like(n)
    active = small & (u > cdf) & (k < n)
    while bool(active.any()):
        k = ember.where(active, k + 1, k)
        pmf = ember.where(active, pmf * (n - k + 1) / k * ratio, pmf)
        cdf = ember.where(active, cdf + pmf, cdf)
        active = active & (u > cdf) & (k < n)
    out = ember.where(small, k, out)
    if bool((~small).any()):
        qb = ember.where(small, ember.full_like(q, 0.5), q)
        nb = ember.where(small, ember.full_like(n, 100.0), n)
        spq = (nb * qb * (1 - qb)).sqrt()
        b = 1.15 + 2.53 * spq
        a = -0.0873 + 0.0248 * b + 0.01 * qb
        c = nb * qb + 0.5
        v_r = 0.92 - 4.2 / b
        alpha = (2.83 + 5.1 / b) * spq
        lpq = ember.log(qb / (1 - qb))
        m = ((nb + 1) * qb).floor()
        h = lgamma(m + 1) + lgamma(nb - m + 1)
        done = small.clone()
        while not bool(done.all()):
            uu = ember.rand(n.shape, dtype=ember.float64, device=n.device) - 0.5
            v = ember.rand(n.shape, dtype=ember.float64, device=n.device)
            us = 0.5 - uu.abs()
            kk = ((2 * a / us + b) * uu + c).floor()
            inside = (kk >= 0) & (kk <= nb)
            quick = inside & (us >= 0.07) & (v <= v_r)
            kc = kk.clamp(min=0)
            kc = ember.where(kc > nb, nb, kc)
            log_v = ember.log(v * alpha / (a / (us * us) + b))
            slow = inside & (log_v <= h - lgamma(kc + 1) - lgamma(nb - kc + 1) + (kc - m) * lpq)
            accept = ~done & (quick | slow)
            out = ember.where(accept, kk, out)
            done = done | accept
    return ember.where(flip, n - out, out)
