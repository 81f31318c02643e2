"""KL rules between different families (and the remaining same-family pairs); imported by ``kl``, which
registers them. Where q's support does not cover p's, the divergence is infinite."""

from __future__ import annotations

import math

from ._ember import ember
from .bernoulli import Bernoulli
from .beta import Beta
from .continuous_bernoulli import ContinuousBernoulli
from .exponential import Exponential
from .gamma import Gamma
from .gumbel import Gumbel
from .kl import _infinite_like, register_kl
from .normal import Normal
from .pareto import Pareto
from .poisson import Poisson
from .uniform import Uniform
from .utils import digamma, lgamma


def _inf_where(mask, result):
    return ember.where(mask, ember.full_like(result, math.inf), result)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + ember.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - ember.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(p.scale < q.scale, result)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_cb(p, q):
    return -p.entropy() - p.mean * q.logits - ember.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(Beta, Pareto)
def _kl_beta_infinity(p, q):
    return _infinite_like(p.concentration1)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0))


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    total = p.concentration1 + p.concentration0
    t2 = lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (q.concentration - 1) * (digamma(p.concentration1) - digamma(total))
    return -p.entropy() + t2 - t3 + q.rate * p.concentration1 / total


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    total = p.concentration1 + p.concentration0
    e_beta = p.concentration1 / total
    var_normal = q.scale.pow(2)
    second_moment = e_beta * (1 - e_beta) / (total + 1) + e_beta.pow(2)
    t2 = 0.5 * (var_normal * 2 * math.pi).log()
    return -p.entropy() + t2 + (0.5 * second_moment - q.loc * e_beta + 0.5 * q.loc.pow(2)) / var_normal


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _inf_where((q.low > 0) | (q.high < 1), result)


@register_kl(ContinuousBernoulli, Pareto)
def _kl_cb_infinity(p, q):
    return _infinite_like(p.probs)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p, q):
    return -p.entropy() - ember.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p, q):
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale) ** 2) + ember.log(q.scale)
    t3 = (p.variance + p.mean**2 - 2.0 * q.loc * p.mean) / (2.0 * q.scale**2)
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    # as PyTorch: infinite unless q's interval strictly contains [0, 1]
    return _inf_where((q.low >= 0) | (q.high <= 1), result)


@register_kl(Exponential, Beta)
@register_kl(Exponential, ContinuousBernoulli)
@register_kl(Exponential, Pareto)
@register_kl(Exponential, Uniform)
def _kl_exponential_infinity(p, q):
    return _infinite_like(p.rate)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    prod = p.rate * q.scale
    ratio = q.loc / q.scale
    return prod.log() - 1 - ratio + ember.exp(ratio) * prod / (prod + 1) + prod.reciprocal()


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    var_normal = q.scale.pow(2)
    rate_sq = p.rate.pow(2)
    t1 = 0.5 * ember.log(rate_sq * var_normal * 2 * math.pi)
    return t1 - 1 + (rate_sq.reciprocal() - q.loc / p.rate + q.loc.pow(2) * 0.5) / var_normal


@register_kl(Gamma, Beta)
@register_kl(Gamma, ContinuousBernoulli)
@register_kl(Gamma, Pareto)
@register_kl(Gamma, Uniform)
def _kl_gamma_infinity(p, q):
    return _infinite_like(p.concentration)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    a = p.concentration
    prod = p.rate * q.scale
    ratio = q.loc / q.scale
    t1 = (a - 1) * digamma(a) - lgamma(a) - a
    t2 = prod.log() + a / prod
    t3 = ember.exp(ratio) * (1 + prod.reciprocal()).pow(-a) - ratio
    return t1 + t2 + t3


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    a = p.concentration
    var_normal = q.scale.pow(2)
    rate_sq = p.rate.pow(2)
    t1 = 0.5 * ember.log(rate_sq * var_normal * 2 * math.pi) - a - lgamma(a)
    t2 = 0.5 * (a.pow(2) + a) / rate_sq
    return t1 + (a - 1) * digamma(a) + (t2 - q.loc * a / p.rate + 0.5 * q.loc.pow(2)) / var_normal
