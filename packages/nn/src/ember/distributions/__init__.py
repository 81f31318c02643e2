"""``ember.distributions``: probability distributions with PyTorch's interface (``torch.distributions``).

Each distribution has ``batch_shape``/``event_shape``, ``sample``/``rsample`` (reparameterized where
``has_rsample``), ``log_prob``, moments and ``entropy``; ``constraints`` say which parameters and values
are valid (checked when ``validate_args``); ``transforms`` with ``biject_to``/``transform_to`` map the
reals onto a constraint; ``kl_divergence`` looks up a rule per pair of types. Samples are drawn with
Ember's generator (``ember.manual_seed``), so they differ from PyTorch's for the same seed; densities,
moments and divergences agree with PyTorch's.
"""

from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .multinomial import Multinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .poisson import Poisson
from .student_t import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F403
from .uniform import Uniform

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "Dirichlet", "Distribution",
    "Exponential", "ExponentialFamily", "Gamma", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal",
    "Independent", "Laplace", "LogNormal", "Multinomial", "Normal", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Poisson", "StudentT", "TransformedDistribution", "Uniform",
    "biject_to", "constraints", "kl_divergence", "register_kl", "transform_to", "transforms",
]  # fmt: skip
__all__.extend(transforms.__all__)
