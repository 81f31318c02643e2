"""``kl_divergence(p, q)``: KL(p || q) by a table of pairwise rules keyed by the two distributions' types.

``register_kl(TypeP, TypeQ)`` adds a rule; a lookup takes the most specific registered pair for
``(type(p), type(q))`` by their method resolution orders (ambiguous matches warn, as PyTorch's)."""

from __future__ import annotations

import math
import warnings
from functools import total_ordering

from ember.core.tensor import Tensor

from ._ember import ember
from ._linalg import solve_triangular_lower
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis, _half_log_det
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _sum_rightmost, digamma, euler_constant, lgamma

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}
_KL_MEMOIZE: dict = {}


def register_kl(type_p: type, type_q: type):
    """Decorator registering ``fn(p, q)`` as KL(p || q) for the pair of types."""
    if not isinstance(type_p, type) and issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) and issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


@total_ordering
class _Match:
    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types, strict=False):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [
        (super_p, super_q)
        for super_p, super_q in _KL_REGISTRY
        if issubclass(type_p, super_p) and issubclass(type_q, super_q)
    ]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
            f"Please register_kl({left_p.__name__}, {right_q.__name__})",
            RuntimeWarning,
            stacklevel=2,
        )
    return left_fun


def _infinite_like(tensor):
    return ember.full_like(tensor, math.inf)


def _x_log_x(tensor):
    return tensor * tensor.log()


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q), batched over ``batch_shape``."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type {q.__class__.__name__}"
        )
    return fun(p, q)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    import ember.nn.functional as F

    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = ember.where(q.probs == 0, ember.full_like(t1, math.inf), t1)
    t1 = ember.where(p.probs == 0, ember.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = ember.where(q.probs == 1, ember.full_like(t2, math.inf), t2)
    t2 = ember.where(p.probs == 1, ember.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_params_p = p.concentration1 + p.concentration0
    sum_params_q = q.concentration1 + q.concentration0
    t1 = lgamma(q.concentration1) + lgamma(q.concentration0) + lgamma(sum_params_p)
    t2 = lgamma(p.concentration1) + lgamma(p.concentration0) + lgamma(sum_params_q)
    t3 = (p.concentration1 - q.concentration1) * digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * digamma(p.concentration0)
    t5 = (sum_params_q - sum_params_p) * digamma(sum_params_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    import ember.nn.functional as F

    # log(1 - p) - log(1 - q) = -softplus(logit_p) + softplus(logit_q); written with the identity above
    kl = p.total_count * (p.probs * (p.logits - q.logits) - F.softplus(p.logits) + F.softplus(q.logits))
    inf_idxs = p.total_count > q.total_count
    return ember.where(inf_idxs, ember.full_like(kl, math.inf), kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = ember.where(q.probs == 0, ember.full_like(t, math.inf), t)
    t = ember.where(p.probs == 0, ember.zeros_like(t), t)
    return t.sum(-1)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p_concentration = p.concentration.sum(-1)
    sum_q_concentration = q.concentration.sum(-1)
    t1 = lgamma(sum_p_concentration) - lgamma(sum_q_concentration)
    t2 = (lgamma(p.concentration) - lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = digamma(p.concentration) - digamma(sum_p_concentration).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    t1 = -rate_ratio.log()
    return t1 + rate_ratio - 1


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    if type(p) is not type(q):
        raise NotImplementedError(
            "The cross KL-divergence between different exponential families cannot be computed using Bregman divergences"
        )
    p_nparams = [np_.detach().requires_grad_() for np_ in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = ember.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients, strict=False):
        term = (qnp - pnp) * g
        result = result - _sum_rightmost(term, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * ember.log(p.rate / q.rate)
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * euler_constant
    t3 = ember.exp(ct2 + lgamma(1 + ct1) - ct3)
    return t1 + t2 + t3 - (1 + euler_constant)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - ember.log1p(-q.probs) / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * ember.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    result = ember.where((q.low > p.low) | (q.high < p.high), ember.full_like(result, math.inf), result)
    return result


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    t2 = (4 * p.scale * q.scale).log()
    return t1 - t2


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    common_term = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / common_term).log()
    t2 = (common_term).pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    t1 = -q.concentration * ember.log(ratio)
    return t1 + ratio + lgamma(q.concentration) + q.concentration * euler_constant - (1 + euler_constant)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    loc_diff = p.loc - q.loc
    scale_ratio = p.scale / q.scale
    loc_diff_scale_ratio = loc_diff / p.scale
    t1 = ember.log(scale_ratio)
    t2 = math.sqrt(2 / math.pi) * p.scale * ember.exp(-0.5 * loc_diff_scale_ratio.pow(2))
    t3 = loc_diff * ember.erf(math.sqrt(0.5) * loc_diff_scale_ratio)
    return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError(
            "KL-divergence between two Multivariate Normals with different event shapes cannot be computed"
        )
    half_term1 = _half_log_det(q._unbroadcasted_scale_tril) - _half_log_det(p._unbroadcasted_scale_tril)
    n = p.event_shape[0]
    batch = ember.broadcast_shapes(q._unbroadcasted_scale_tril.shape[:-2], p._unbroadcasted_scale_tril.shape[:-2])
    q_tril = q._unbroadcasted_scale_tril.expand(batch + (n, n))
    p_tril = p._unbroadcasted_scale_tril.expand(batch + (n, n))
    term2 = solve_triangular_lower(q_tril, p_tril).pow(2).flatten(-2).sum(-1)  # tr(Q^-1 P)
    term3 = _batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


from . import _kl_mixed  # noqa: E402, F401  (registers the cross-family rules)
