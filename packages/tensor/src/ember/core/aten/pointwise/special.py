"""The special functions as pointwise ops (``lgamma``, ``digamma``, ``erfc``, ``i0``, ``sinc``,
``xlogy``, ``logit`` and aten's ``special_*`` ops), each computed in float64 by the kernels of
``ember.core.special_gamma``, ``special_bessel`` and ``special_normal`` and rounded once to the
result dtype. Integer and bool inputs give the default float dtype; complex ones are refused.
"""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtypes as D
from ember.core import special_bessel as B
from ember.core import special_gamma as G
from ember.core import special_normal as N
from ember.core.api import method, public
from ember.core.pointwise import define_pointwise, expose, type_name
from ember.core.special import erfc as _erfc


def _real_only(name: str):
    def check(p, inputs, params) -> None:
        for x in inputs:
            dtype = getattr(x, "dtype", None)
            if dtype is not None and dtype.category == D.COMPLEX:
                raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{type_name(dtype)}'")

    return check


def _in_float64(fn):
    def compute(*arrays, **params):
        dtype = np.result_type(*arrays)
        result = fn(*(np.asarray(a, np.float64) for a in arrays), **params)
        return np.asarray(result).astype(dtype if dtype.kind == "f" else np.float64, copy=False)

    return compute


def _unary(name: str, fn, schema_name: str | None = None, arg: str = "self"):
    # aten's special_* ops have functional and out= forms only, as in PyTorch.
    return define_pointwise(
        f"{schema_name or name}(Tensor {arg}) -> Tensor",
        _in_float64(fn),
        "int_to_float",
        check=_real_only(name),
        fast=False,
        inplace=not name.startswith("special_"),
    )


def _binary(name: str, fn, args: tuple[str, str] = ("self", "other")):
    return define_pointwise(
        f"{name}(Tensor {args[0]}, Tensor {args[1]}) -> Tensor",
        _in_float64(fn),
        "int_to_float",
        n_inputs=2,
        check=_real_only(name),
        fast=False,
        inplace=not name.startswith("special_"),
    )


OPS = {
    "lgamma": _unary("lgamma", G.lgamma),
    "digamma": _unary("digamma", G.digamma),
    "erfc": _unary("erfc", lambda x: _erfc(x)),
    "i0": _unary("i0", B.i0),
    "sinc": _unary("sinc", N.sinc),
    "special_erfcx": _unary("special_erfcx", N.erfcx),
    "special_ndtr": _unary("special_ndtr", N.ndtr),
    "special_ndtri": _unary("special_ndtri", N.ndtri),
    "special_log_ndtr": _unary("special_log_ndtr", N.log_ndtr),
    "special_entr": _unary("special_entr", N.entr),
    "special_i0e": _unary("special_i0e", B.i0e),
    "special_i1": _unary("special_i1", B.i1),
    "special_i1e": _unary("special_i1e", B.i1e),
    "special_bessel_j0": _unary("special_bessel_j0", B.j0),
    "special_bessel_j1": _unary("special_bessel_j1", B.j1),
    "special_bessel_y0": _unary("special_bessel_y0", B.y0),
    "special_bessel_y1": _unary("special_bessel_y1", B.y1),
    "special_modified_bessel_i0": _unary("special_modified_bessel_i0", B.i0),
    "special_modified_bessel_i1": _unary("special_modified_bessel_i1", B.i1),
    "special_modified_bessel_k0": _unary("special_modified_bessel_k0", B.k0),
    "special_modified_bessel_k1": _unary("special_modified_bessel_k1", B.k1),
    "special_scaled_modified_bessel_k0": _unary("special_scaled_modified_bessel_k0", B.k0e, arg="x"),
    "special_scaled_modified_bessel_k1": _unary("special_scaled_modified_bessel_k1", B.k1e, arg="x"),
    "special_spherical_bessel_j0": _unary(
        "special_spherical_bessel_j0", lambda x: np.where(x == 0, 1.0, np.sin(x) / x), arg="x"
    ),
    "xlogy": _binary("xlogy.Tensor", N.xlogy),
    "special_xlog1py": _binary("special_xlog1py", N.xlog1py),
    "special_zeta": _binary("special_zeta", G.zeta, ("self", "other")),
    "special_gammainc": _binary("special_gammainc", G.gammainc),
    "special_gammaincc": _binary("special_gammaincc", G.gammaincc),
    "logit": define_pointwise(
        "logit(Tensor self, float? eps=None) -> Tensor",
        _in_float64(N.logit),
        "int_to_float",
        check=_real_only("logit"),
        fast=False,
    ),
}
_POLYNOMIALS = {
    "chebyshev_polynomial_t": N.chebyshev_t,
    "chebyshev_polynomial_u": N.chebyshev_u,
    "chebyshev_polynomial_v": N.chebyshev_v,
    "chebyshev_polynomial_w": N.chebyshev_w,
    "shifted_chebyshev_polynomial_t": N.shifted(N.chebyshev_t),
    "shifted_chebyshev_polynomial_u": N.shifted(N.chebyshev_u),
    "shifted_chebyshev_polynomial_v": N.shifted(N.chebyshev_v),
    "shifted_chebyshev_polynomial_w": N.shifted(N.chebyshev_w),
    "hermite_polynomial_h": N.hermite_h,
    "hermite_polynomial_he": N.hermite_he,
    "laguerre_polynomial_l": N.laguerre_l,
    "legendre_polynomial_p": N.legendre_p,
}
for _name, _fn in _POLYNOMIALS.items():
    OPS[f"special_{_name}"] = define_pointwise(
        f"special_{_name}(Tensor x, Tensor n) -> Tensor",
        _in_float64(_fn),
        "int_to_float",
        n_inputs=2,
        check=_real_only(f"special_{_name}"),
        fast=False,
        inplace=False,
    )

for _name in ("lgamma", "digamma", "erfc", "i0", "sinc", "logit"):
    expose(OPS[_name], _name)
xlogy = expose(OPS["xlogy"], "xlogy")


# -- composites -----------------------------------------------------------------------------------


@public("polygamma")
def polygamma(n: int, input, *, out=None):
    """``psi^(n)``: digamma for ``n = 0``, else ``(-1)^(n+1) n! zeta(n + 1, input)``."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        result = OPS["digamma"].functional(input)
    else:
        sign = -1.0 if n % 2 == 0 else 1.0
        result = OPS["special_zeta"].functional(float(n + 1), input) * (sign * math.factorial(n))
    return _write(result, out)


@method("polygamma")
def _polygamma_method(self, n: int):
    return polygamma(n, self)


@public("mvlgamma")
def mvlgamma(input, p: int, *, out=None):
    """The multivariate log-gamma of dimension ``p``: ``p (p - 1) / 4 log(pi) + sum_j lgamma(x - j / 2)``."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if input.dtype.category <= D.INTEGRAL:
        raise RuntimeError("mvlgamma is not implemented for integral types")
    if input._array is not None and input.numel() and bool((input <= (p - 1) / 2).any()):
        raise RuntimeError("All elements must be greater than (p-1)/2")
    total = OPS["lgamma"].functional(input)
    for j in range(1, p):
        total = total + OPS["lgamma"].functional(input - j / 2)
    return _write(total + p * (p - 1) / 4 * math.log(math.pi), out)


@method("mvlgamma")
def _mvlgamma_method(self, p: int):
    return mvlgamma(self, p)


def _write(result, out):
    if out is None:
        return result
    from ember.core.reduction import write_out

    return write_out(out, result)


@method("polygamma_")
def _polygamma_inplace(self, n: int):
    # computed from a copy: the derivative reads the values from before the write
    return self.copy_(polygamma(n, self.clone()))


@method("mvlgamma_")
def _mvlgamma_inplace(self, p: int):
    return self.copy_(mvlgamma(self.clone(), p))


# igamma and igammac: PyTorch's top-level names of gammainc and gammaincc.
for _name, _op in (("igamma", "special_gammainc"), ("igammac", "special_gammaincc")):
    _function = expose(OPS[_op], _name)
    method(f"{_name}_")(lambda self, other, _f=_function: self.copy_(_f(self.clone(), other)))


def _inplace_function(name: str):
    def fn(input, *args, **kwargs):
        return getattr(input, f"{name}_")(*args, **kwargs)

    fn.__name__ = f"{name}_"
    public(f"{name}_")(fn)


for _name in ("erfc", "i0", "sinc", "logit", "xlogy"):
    _inplace_function(_name)
