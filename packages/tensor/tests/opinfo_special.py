"""Samples for the special functions (``ember.core.aten.pointwise.special`` and ``ember.special``):
each over its domain (positive arguments for the gamma family, (0, 1) for ``ndtri`` and ``logit``),
with integer inputs where PyTorch promotes them, in float32 and float64.

PyTorch's own float64 kernels are less accurate than ours in places (Bessel J and Y near x = 5 by up
to 2e-7 absolute, ``ndtr`` flushed to 0 below -8, ``gammainc`` for large ``a``): the samples keep to
ranges where both are accurate, and ``test_special.py`` checks ours against mpmath elsewhere.
"""

from __future__ import annotations

import numpy as np
from opinfo import ErrorSample, OpInfo, Sample, T

FLOATS = ("float32", "float64")
TOL = {"float32": (2e-5, 1e-5), "float64": (1e-9, 1e-9)}
BESSEL_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-6, 1e-6)}


def _uniform(low, high, shape=(3, 5)):
    def samples(dtype, rng):
        values = rng.uniform(low, high, size=shape).astype(dtype)
        out = [Sample((T(values),)), Sample((T(values.T.copy(), "transposed"),))]
        out.append(Sample((T(np.linspace(low, high, 7).astype(dtype)),), name="grid"))
        return out

    return samples


def _special(name):
    return lambda lib, *args, **kwargs: getattr(lib.special, name)(*args, **kwargs)


def _top(name):
    return lambda lib, *args, **kwargs: getattr(lib, name)(*args, **kwargs)


def _binary(low_a, high_a, low_b, high_b):
    def samples(dtype, rng):
        a = rng.uniform(low_a, high_a, size=(3, 4)).astype(dtype)
        b = rng.uniform(low_b, high_b, size=(3, 4)).astype(dtype)
        return [
            Sample((T(a), T(b))),
            Sample((T(a[:1]), T(b)), name="broadcast"),
            Sample((T(np.array([0.0, 1.0, 2.0], dtype)), T(np.array([0.5, 1.5, 3.0], dtype))), name="zeros"),
        ]

    return samples


def _polynomial_samples(low, high):
    def samples(dtype, rng):
        x = rng.uniform(low, high, size=(2, 5)).astype(dtype)
        n = np.array([[0.0], [3.0]]).astype(dtype)
        return [
            Sample((T(x), T(np.arange(-1, 9).reshape(2, 5).astype(dtype)))),
            Sample((T(x), T(n)), name="broadcast n"),
            Sample((T(x), 4), name="scalar n"),
        ]

    return samples


def _errors():
    return [
        ErrorSample(Sample((T(np.ones(2, np.complex64)),)), NotImplementedError, "not implemented for"),
    ]


UNARY = [
    ("lgamma", _top("lgamma"), _uniform(0.1, 8), TOL),
    ("special.gammaln", _special("gammaln"), _uniform(-3.7, 8), TOL),
    ("digamma", _top("digamma"), _uniform(0.1, 8), TOL),
    ("special.psi", _special("psi"), _uniform(-2.5, -0.5), {"float32": (1e-4, 1e-4), "float64": (1e-9, 1e-9)}),
    ("erfc", _top("erfc"), _uniform(-4, 6), TOL),
    ("special.erfcx", _special("erfcx"), _uniform(-3, 30), TOL),
    ("special.ndtr", _special("ndtr"), _uniform(-5, 5), TOL),
    ("special.ndtri", _special("ndtri"), _uniform(0.001, 0.999), {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-9)}),
    ("special.log_ndtr", _special("log_ndtr"), _uniform(-30, 6), TOL),
    ("special.entr", _special("entr"), _uniform(0, 3), TOL),
    ("i0", _top("i0"), _uniform(-10, 10), TOL),
    ("special.i0e", _special("i0e"), _uniform(-40, 40), TOL),
    ("special.i1", _special("i1"), _uniform(-10, 10), TOL),
    ("special.i1e", _special("i1e"), _uniform(-40, 40), TOL),
    ("sinc", _top("sinc"), _uniform(-3, 3), TOL),
    ("special.logit", _special("logit"), _uniform(0.05, 0.95), TOL),
    ("special.expit", _special("expit"), _uniform(-5, 5), TOL),
    ("special.bessel_j0", _special("bessel_j0"), _uniform(-60, 60), BESSEL_TOL),
    ("special.bessel_j1", _special("bessel_j1"), _uniform(-60, 60), BESSEL_TOL),
    ("special.bessel_y0", _special("bessel_y0"), _uniform(0.1, 60), BESSEL_TOL),
    ("special.bessel_y1", _special("bessel_y1"), _uniform(0.1, 60), BESSEL_TOL),
    ("special.modified_bessel_i0", _special("modified_bessel_i0"), _uniform(-20, 20), TOL),
    ("special.modified_bessel_i1", _special("modified_bessel_i1"), _uniform(-20, 20), TOL),
    ("special.modified_bessel_k0", _special("modified_bessel_k0"), _uniform(0.01, 50), TOL),
    ("special.modified_bessel_k1", _special("modified_bessel_k1"), _uniform(0.01, 50), TOL),
    ("special.scaled_modified_bessel_k0", _special("scaled_modified_bessel_k0"), _uniform(0.01, 500), TOL),
    ("special.scaled_modified_bessel_k1", _special("scaled_modified_bessel_k1"), _uniform(0.01, 500), TOL),
    ("special.spherical_bessel_j0", _special("spherical_bessel_j0"), _uniform(-10, 10), TOL),
]

INPLACE = {"lgamma", "digamma", "erfc", "i0", "sinc"}
OPS = [
    OpInfo(
        name,
        call,
        FLOATS,
        samples,
        tolerances=tol,
        errors=_errors if name == "lgamma" else (lambda: []),
        out=name not in ("special.expit",),
        inplace=(lambda lib, x, _n=name: getattr(x, f"{_n}_")()) if name in INPLACE else None,
    )
    for name, call, samples, tol in UNARY
]
OPS += [
    OpInfo("lgamma int", _top("lgamma"), ("int64",), lambda d, r: [Sample((T(np.arange(1, 7)),))], tolerances=TOL),
    OpInfo(
        "special.logit eps",
        lambda lib, x, **k: lib.special.logit(x, eps=0.2, **k),
        FLOATS,
        _uniform(0.0, 1.0),
        tolerances=TOL,
        inplace=lambda lib, x: x.logit_(eps=0.2),
        out=True,
    ),
    OpInfo(
        "xlogy",
        _top("xlogy"),
        FLOATS,
        _binary(-2, 2, 0.1, 4),
        tolerances=TOL,
        out=True,
        inplace=lambda lib, x, y: x.xlogy_(y),
    ),
    OpInfo("special.xlog1py", _special("xlog1py"), FLOATS, out=True, samples=_binary(-2, 2, -0.9, 4), tolerances=TOL),
    OpInfo("special.zeta", _special("zeta"), FLOATS, out=True, samples=_binary(1.5, 6, 0.2, 5), tolerances=TOL),
    OpInfo(
        "special.gammainc", _special("gammainc"), FLOATS, out=True, samples=_binary(0.5, 8, 0.1, 10), tolerances=TOL
    ),
    OpInfo(
        "special.gammaincc", _special("gammaincc"), FLOATS, out=True, samples=_binary(0.5, 8, 0.1, 10), tolerances=TOL
    ),
    OpInfo(
        "polygamma",
        lambda lib, x, n: lib.polygamma(n, x),
        FLOATS,
        lambda d, r: [Sample((T(r.uniform(0.2, 6, (2, 4)).astype(d)), n)) for n in (0, 1, 2, 3)],
        tolerances={"float32": (1e-4, 1e-4), "float64": (1e-8, 1e-8)},
    ),
    OpInfo(
        "special.multigammaln",
        lambda lib, x, p: lib.special.multigammaln(x, p),
        FLOATS,
        lambda d, r: [Sample((T(r.uniform(2.0, 6, (2, 4)).astype(d)), p)) for p in (1, 3)],
        tolerances=TOL,
    ),
    OpInfo(
        "igamma",
        _top("igamma"),
        FLOATS,
        _binary(0.5, 8, 0.1, 10),
        tolerances=TOL,
        inplace=lambda lib, a, x: a.igamma_(x),
    ),
    OpInfo(
        "igammac",
        _top("igammac"),
        FLOATS,
        _binary(0.5, 8, 0.1, 10),
        tolerances=TOL,
        inplace=lambda lib, a, x: a.igammac_(x),
    ),
    OpInfo(
        "polygamma_",
        lambda lib, x, n: x.clone().polygamma_(n),
        FLOATS,
        lambda d, r: [Sample((T(r.uniform(0.2, 6, (2, 4)).astype(d)), n)) for n in (0, 2)],
        tolerances={"float32": (1e-4, 1e-4), "float64": (1e-8, 1e-8)},
    ),
    OpInfo("special.softmax", lambda lib, x: lib.special.softmax(x, 1), FLOATS, _uniform(-3, 3)),
    OpInfo("special.log_softmax", lambda lib, x: lib.special.log_softmax(x, 0), FLOATS, _uniform(-3, 3)),
    OpInfo("special.logsumexp", lambda lib, x: lib.special.logsumexp(x, 1), FLOATS, _uniform(-3, 3)),
]
for _name in (
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "legendre_polynomial_p",
):
    OPS.append(
        OpInfo(f"special.{_name}", _special(_name), FLOATS, _polynomial_samples(-1, 1), tolerances=TOL, out=True)
    )
for _name in (
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "laguerre_polynomial_l",
):
    OPS.append(OpInfo(f"special.{_name}", _special(_name), FLOATS, _polynomial_samples(0, 1), tolerances=TOL, out=True))
for _name in ("hermite_polynomial_h", "hermite_polynomial_he"):
    OPS.append(
        OpInfo(
            f"special.{_name}",
            _special(_name),
            FLOATS,
            _polynomial_samples(-2, 2),
            tolerances={"float32": (1e-4, 1e-3), "float64": (1e-9, 1e-9)},
            out=True,
        )
    )
