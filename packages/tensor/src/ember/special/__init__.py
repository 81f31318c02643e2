"""``ember.special``: special functions, as ``torch.special``. The new ones are pointwise ops in
``ember.core.aten.pointwise.special`` (kernels in ``ember.core.special_*``); the rest are the
top-level functions of the same meaning (``erf``, ``expm1``, ``softmax``, ...).

``airy_ai`` is not available: it raises ``NotImplementedError``.
"""

from __future__ import annotations

from ember.core import functions as _functions
from ember.core.aten.pointwise.special import OPS as _OPS
from ember.core.aten.pointwise.special import mvlgamma as _mvlgamma
from ember.core.aten.pointwise.special import polygamma  # noqa: F401  (listed in __all__)
from ember.core.tensor import Tensor  # noqa: F401  (torch.special names it too)

erf = _functions["erf"]
erfinv = _functions["erfinv"]
exp2 = _functions["exp2"]
expm1 = _functions["expm1"]
log1p = _functions["log1p"]
round = _functions["round"]
logsumexp = _functions["logsumexp"]
expit = _functions["sigmoid"]
erfc = _functions["erfc"]
gammaln = _functions["lgamma"]
digamma = psi = _functions["digamma"]
i0 = _functions["i0"]
sinc = _functions["sinc"]
logit = _functions["logit"]
xlogy = _functions["xlogy"]


def _function(op_name: str, public_name: str):
    ops = _OPS[op_name]

    def fn(*args, out=None):
        if out is None:
            return ops.functional(*args)
        return ops.out(*args, out=out)

    fn.__name__ = fn.__qualname__ = public_name
    fn.__doc__ = f"``ember.special.{public_name}`` (aten ``{op_name}``)."
    return fn


_NAMES = [
    "erfcx",
    "ndtr",
    "ndtri",
    "log_ndtr",
    "entr",
    "i0e",
    "i1",
    "i1e",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "spherical_bessel_j0",
    "xlog1py",
    "zeta",
    "gammainc",
    "gammaincc",
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
]
globals().update({name: _function(f"special_{name}", name) for name in _NAMES})


def multigammaln(input, p: int, *, out=None):
    return _mvlgamma(input, p, out=out)


def softmax(input, dim: int, *, dtype=None):
    return _functions["softmax"](input, dim, dtype=dtype)


def log_softmax(input, dim: int, *, dtype=None):
    return _functions["log_softmax"](input, dim, dtype=dtype)


def airy_ai(input, *, out=None):
    raise NotImplementedError("ember.special.airy_ai is not available")


__all__ = sorted(
    [
        "airy_ai",
        "digamma",
        "erf",
        "erfc",
        "erfinv",
        "exp2",
        "expit",
        "expm1",
        "gammaln",
        "i0",
        "log1p",
        "log_softmax",
        "logit",
        "logsumexp",
        "multigammaln",
        "polygamma",
        "psi",
        "round",
        "sinc",
        "softmax",
        "xlogy",
        *_NAMES,
    ]
)
