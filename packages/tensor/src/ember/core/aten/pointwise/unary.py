"""Unary pointwise ops: math functions, activations, rounding, tests and predicates.

Every op is one ``define_pointwise`` call (functional, ``_`` and ``out=`` overloads, meta and CPU
kernels) with the dtype rule PyTorch applies: transcendental functions turn integers and bools into
the default float dtype (``int_to_float``); abs, neg, rounding and relu keep the dtype; predicates
give bool. ``check`` functions raise PyTorch's errors for dtypes its kernels refuse; the float fast
path of ``define_pointwise`` skips them, so an op that refuses float32/float64 says ``fast=False``.

Kernels compute on NumPy arrays; erf and erfinv come from ``ember.core.special``, GELU from
``ember.core.aten.pointwise.gelu``. A few follow
PyTorch rather than NumPy: ``sign(nan)`` is 0, ``relu`` keeps -0.0 and nan, ``round`` with
``decimals`` scales in the compute dtype before rounding half to even.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ember.core import dtypes as D
from ember.core.api import method
from ember.core.aten.pointwise import gelu
from ember.core.bitselect import select
from ember.core.dispatch import define
from ember.core.pointwise import define_pointwise, expose, unsupported
from ember.core.promotion import get_default_dtype
from ember.core.special import erf as _erf_f64
from ember.core.special import erfinv as _erfinv_f64
from ember.core.tensor import Tensor


def _angle(x: np.ndarray) -> np.ndarray:
    # A real number's angle is pi below zero and 0 elsewhere (-0.0 included); nan stays nan.
    if np.iscomplexobj(x):
        return np.angle(x)
    return np.where(np.isnan(x), x, np.where(x < 0, np.pi, 0.0)).astype(x.dtype)


def _angle_rule(inputs: tuple) -> tuple[D.dtype, D.dtype]:
    # Complex gives its real dtype, integers and bools the default float dtype, floats their own.
    d = inputs[0].dtype
    out = d.to_real() if d.category == D.COMPLEX else (d if d.category >= D.FLOATING else get_default_dtype())
    compute = D.float32 if out in (D.float16, D.bfloat16) else out
    return out, (d if d.category == D.COMPLEX else compute)


# -- checks ---------------------------------------------------------------------------------------


def _refuse(name: str, *dtypes_or_categories, message: str | None = None, error=NotImplementedError):
    """A check refusing the given dtypes (``D.bool_``) or categories (``D.INTEGRAL``...)."""

    def check(p, inputs, params) -> None:
        d = inputs[0].dtype
        if d in dtypes_or_categories or d.category in dtypes_or_categories:
            if message is not None:
                raise error(message)
            raise unsupported(name, d)

    return check


def _floats_only(name: str, complex_ok: bool = False):
    def check(p, inputs, params) -> None:
        d = inputs[0].dtype
        if d.category < D.FLOATING or (d.category == D.COMPLEX and not complex_ok):
            raise unsupported(name, d)

    return check


def _chain(*checks):
    def check(p, inputs, params) -> None:
        for c in checks:
            c(p, inputs, params)

    return check


def _no_complex(name: str):
    return _refuse(name, D.COMPLEX, message=f"{name} is not supported for complex inputs")


# -- compute functions ----------------------------------------------------------------------------


def _float64_via(fn):
    """Compute a real function in float64 and let the plan round the result to the compute dtype."""

    def compute(a):
        return fn(a).astype(a.dtype, copy=False)

    return compute


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


# ReLU through ``np.maximum(zeros, x)``: its vector loop propagates nan and, where the operands
# compare equal, returns the second one, so -0.0 stays -0.0 as clamp_min(x, 0) keeps it. That runs
# at a third of a compare-and-select's cost, but only array by array (a broadcast 0 takes a slow
# scalar loop), so the input runs in blocks against one block of zeros. Which operand an equal
# comparison returns is NumPy's choice, not its promise: it is checked once per dtype on every
# lane position, and a NumPy that chooses otherwise takes the select.
_RELU_BLOCK = 1 << 14
_relu_zeros: dict = {}


def _maximum_is_relu(dtype: np.dtype) -> bool:
    if dtype not in _relu_zeros:
        x = np.full(67, -0.0, dtype)
        x[5::7] = np.nan
        x[3::11] = -np.inf
        expected = np.where(np.isnan(x), x, np.where(x < 0, 0, x))
        got = np.maximum(np.zeros(67, dtype), x)
        same = np.array_equal(np.signbit(got), np.signbit(expected)) and np.array_equal(got, expected, equal_nan=True)
        _relu_zeros[dtype] = np.zeros(_RELU_BLOCK, dtype) if same else None
    return _relu_zeros[dtype] is not None


def _relu(a):
    # Zeroes what is below 0 and keeps -0.0 and nan, as clamp_min(x, 0) does.
    if a.dtype in (np.float32, np.float64) and a.flags.c_contiguous and a.size > 4096 and _maximum_is_relu(a.dtype):
        zeros, flat = _relu_zeros[a.dtype], a.reshape(-1)
        out = np.empty_like(flat)
        for start in range(0, flat.size, _RELU_BLOCK):
            stop = min(start + _RELU_BLOCK, flat.size)
            np.maximum(zeros[: stop - start], flat[start:stop], out=out[start:stop])
        return out.reshape(a.shape)
    return select(a < 0, np.zeros((), a.dtype), a)


def _reciprocal(a):
    out = np.reciprocal(a)
    if a.dtype.kind == "c":  # PyTorch's complex 1/0 is inf + nan j (NumPy's: nan + nan j)
        out = np.where(a == 0, np.asarray(complex(np.inf, np.nan), a.dtype), out)
    return out


def _log1p(a):
    out = np.log1p(a)
    if a.dtype.kind == "c":  # an infinite part beside a nan one gives nan + nan j in PyTorch (NumPy: inf + nan j)
        odd = np.isinf(a.real) & np.isnan(a.imag) | np.isnan(a.real) & np.isinf(a.imag)
        out = np.where(odd, np.asarray(complex(np.nan, np.nan), a.dtype), out)
    return out


def _rsqrt(a):
    return 1.0 / np.sqrt(a)


def _keep_ints(fn):
    """Rounding ops return integer inputs unchanged (NumPy would give float64)."""

    def compute(a):
        return a.copy() if a.dtype.kind in "iub" else fn(a)

    return compute


def _round(a, *, decimals=0):
    if a.dtype.kind in "iub":
        return a.copy()
    if decimals == 0:
        return np.rint(a)
    # Scale in the compute dtype, as PyTorch's kernel does (its rounding decides ties such as 2.675).
    ten = np.asarray(10.0 ** abs(decimals)).astype(a.dtype)
    if decimals > 0:
        return np.rint(a * ten) / ten
    return np.rint(a / ten) * ten


def _frac(a):
    return a - np.trunc(a)


def _sign(a):
    if a.dtype == np.bool_:
        return a.copy()
    # (0 < x) - (x < 0): sign(nan) and sign(-0.0) are +0, unlike NumPy's.
    return (a > 0).astype(a.dtype) - (a < 0).astype(a.dtype)


def _erf(a):
    return _erf_f64(a, a.dtype)


def _silu(a):
    return a / (1.0 + np.exp(-a))


def _mish(a):
    return a * np.tanh(np.logaddexp(np.zeros((), a.dtype), a))


def _nan_to_num(a, *, nan=None, posinf=None, neginf=None):
    if a.dtype.kind in "iub":
        return a.copy()
    if a.dtype.kind == "c":
        real = _nan_to_num(a.real, nan=nan, posinf=posinf, neginf=neginf)
        imag = _nan_to_num(a.imag, nan=nan, posinf=posinf, neginf=neginf)
        return (real + 1j * imag).astype(a.dtype)
    info = np.finfo(a.dtype)
    out = np.where(np.isnan(a), np.asarray(0.0 if nan is None else nan).astype(a.dtype), a)
    out = np.where(np.isposinf(a), np.asarray(info.max if posinf is None else posinf).astype(a.dtype), out)
    return np.where(np.isneginf(a), np.asarray(info.min if neginf is None else neginf).astype(a.dtype), out)


def _check_nan_to_num(p, inputs, params) -> None:
    # float16 and bfloat16 compute in float32: the default replacements must be the result dtype's
    # largest finite values, so the check resolves them here (the fast path sees only float32/64).
    if p.result.category >= D.FLOATING:
        info = ml_dtypes.finfo(p.result.to_real().np)  # NumPy's finfo does not know bfloat16
        if params.get("posinf") is None:
            params["posinf"] = float(info.max)
        if params.get("neginf") is None:
            params["neginf"] = float(info.min)


def _check_round_decimals(p, inputs, params) -> None:
    decimals = params["decimals"]
    if isinstance(decimals, bool) or not isinstance(decimals, int):
        raise TypeError(f"round(): argument 'decimals' must be int, not {type(decimals).__name__}")
    d = inputs[0].dtype
    if d.category != D.FLOATING:
        # An explicit decimals=0 reaches the float rounding kernel too, which refuses integers.
        raise unsupported("round_vml" if decimals == 0 else "round", d)


# -- the table ------------------------------------------------------------------------------------

_BOOL_NEG = (
    "Negation, the `-` operator, on a bool tensor is not supported. "
    "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
)

# name: (compute, rule, check, fast)
_TABLE = {
    "abs": (np.abs, "complex_to_float", _refuse("abs", D.bool_), True),
    "neg": (np.negative, "promote", _refuse("neg", D.bool_, message=_BOOL_NEG, error=RuntimeError), True),
    "exp": (np.exp, "int_to_float", None, True),
    "exp2": (np.exp2, "int_to_float", None, True),
    "expm1": (np.expm1, "int_to_float", None, True),
    "log": (np.log, "int_to_float", None, True),
    "log2": (np.log2, "int_to_float", None, True),
    "log10": (np.log10, "int_to_float", None, True),
    "log1p": (_log1p, "int_to_float", None, True),
    "sqrt": (np.sqrt, "int_to_float", None, True),
    "rsqrt": (_rsqrt, "int_to_float", None, True),
    "sin": (np.sin, "int_to_float", None, True),
    "cos": (np.cos, "int_to_float", None, True),
    "tan": (np.tan, "int_to_float", None, True),
    "asin": (np.arcsin, "int_to_float", None, True),
    "acos": (np.arccos, "int_to_float", None, True),
    "atan": (np.arctan, "int_to_float", None, True),
    "sinh": (np.sinh, "int_to_float", None, True),
    "cosh": (np.cosh, "int_to_float", None, True),
    "tanh": (np.tanh, "int_to_float", None, True),
    "asinh": (np.arcsinh, "int_to_float", None, True),
    "acosh": (np.arccosh, "int_to_float", None, True),
    "atanh": (np.arctanh, "int_to_float", None, True),
    "sigmoid": (_sigmoid, "int_to_float", None, True),
    "reciprocal": (_reciprocal, "int_to_float", None, True),
    "erf": (_erf, "int_to_float", _refuse("erf_vml", D.COMPLEX), True),
    "erfinv": (_float64_via(_erfinv_f64), "int_to_float", _refuse("erfinv_vml", D.COMPLEX), True),
    "floor": (_keep_ints(np.floor), "promote", _chain(_refuse("floor_vml", D.bool_), _no_complex("floor")), True),
    "ceil": (_keep_ints(np.ceil), "promote", _chain(_refuse("ceil_vml", D.bool_), _no_complex("ceil")), True),
    "trunc": (_keep_ints(np.trunc), "promote", _chain(_refuse("trunc_vml", D.bool_), _no_complex("trunc")), True),
    "frac": (_frac, "promote", _floats_only("frac"), True),
    "sign": (
        _sign,
        "promote",
        _refuse(
            "sign",
            D.COMPLEX,
            message="Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn instead.",
        ),
        True,
    ),
    "logical_not": (np.logical_not, "bool", None, True),
    "bitwise_not": (np.invert, "promote", _refuse("bitwise_not", D.FLOATING, D.COMPLEX), False),
}

OPS = {}
for _name, (_compute, _rule, _check, _fast) in _TABLE.items():
    OPS[_name] = define_pointwise(f"{_name}(Tensor self) -> Tensor", _compute, _rule, check=_check, fast=_fast)

OPS["relu"] = define_pointwise(
    "relu(Tensor self) -> Tensor",
    _relu,
    check=_chain(
        _refuse("relu", D.bool_, message="Boolean inputs not supported for relu", error=RuntimeError),
        _refuse("relu", D.COMPLEX, message="clamp is not supported for complex types"),
    ),
    out_overload=None,
    fast=True,
)
OPS["round"] = define_pointwise(
    "round(Tensor self) -> Tensor",
    _round,
    check=_chain(_refuse("round_vml", D.bool_, D.COMPLEX)),
)
OPS["round_decimals"] = define_pointwise(
    "round.decimals(Tensor self, *, int decimals) -> Tensor",
    _round,
    out_overload="decimals_out",
    check=_check_round_decimals,
)
# isnan and isinf are core, as in PyTorch; isfinite is lowered to them (pointwise/lowerings.py).
_TEST_TAGS = {"isnan": ("pointwise", "core"), "isinf": ("pointwise", "core"), "isfinite": ("pointwise",)}
for _name in ("isnan", "isinf", "isfinite"):
    _fn = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}[_name]
    OPS[_name] = define_pointwise(
        f"{_name}(Tensor self) -> Tensor", _fn, "bool", inplace=False, out_overload=None, tags=_TEST_TAGS[_name]
    )
OPS["nan_to_num"] = define_pointwise(
    "nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor",
    _nan_to_num,
    check=_check_nan_to_num,
    fast=False,
)
OPS["angle"] = define_pointwise("angle(Tensor self) -> Tensor", _angle, _angle_rule, inplace=False, fast=False)
OPS["deg2rad"] = define_pointwise(
    "deg2rad(Tensor self) -> Tensor", lambda x: x * x.dtype.type(np.pi / 180), "int_to_float", tags=("pointwise",)
)
OPS["rad2deg"] = define_pointwise(
    "rad2deg(Tensor self) -> Tensor", lambda x: x * x.dtype.type(180 / np.pi), "int_to_float", tags=("pointwise",)
)
for _name, _fn, _complex_error in [
    ("signbit", np.signbit, (NotImplementedError, "signbit is not implemented for complex tensors.")),
    ("isposinf", np.isposinf, (RuntimeError, "isposinf does not support complex inputs.")),
    ("isneginf", np.isneginf, (RuntimeError, "isneginf does not support complex inputs.")),
]:
    OPS[_name] = define_pointwise(
        f"{_name}(Tensor self) -> Tensor",
        _fn,
        "bool",
        inplace=False,
        check=_refuse(_name, D.COMPLEX, message=_complex_error[1], error=_complex_error[0]),
        fast=False,
        tags=("pointwise",),
    )
OPS["gelu"] = define_pointwise(
    "gelu(Tensor self, *, str approximate='none') -> Tensor", gelu.gelu, check=gelu.check_gelu, fast=False
)
OPS["silu"] = define_pointwise("silu(Tensor self) -> Tensor", _silu, check=_floats_only("silu", complex_ok=True))
OPS["mish"] = define_pointwise("mish(Tensor self) -> Tensor", _mish, check=_floats_only("mish"))


def _guard_inplace(ops, guard) -> None:
    """Run ``guard(self)`` before the in-place kernels; a tensor it returns is the result."""
    for device in ("cpu", "meta"):
        kernel = ops.inplace.kernel(device)

        def guarded(self, *args, _kernel=kernel, **kwargs):
            result = guard(self)
            return result if result is not None else _kernel(self, *args, **kwargs)

        if device == "meta":
            ops.inplace.register_meta(guarded)
        else:
            ops.inplace.register_kernel(device)(guarded)


def _abs_inplace_guard(self: Tensor):
    if self.dtype.category == D.COMPLEX:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return None


def _nan_to_num_inplace_guard(self: Tensor):
    # Integers hold no nan or inf: PyTorch copies the tensor onto itself, which any layout allows.
    if self.dtype.category <= D.INTEGRAL:
        self._bump_version()
        return self
    return None


_guard_inplace(OPS["abs"], _abs_inplace_guard)
_guard_inplace(OPS["nan_to_num"], _nan_to_num_inplace_guard)


def exact_out(ops, expected, message) -> None:
    """Refuse an ``out=`` tensor whose dtype is not ``expected(*args, **kwargs)`` (None: any castable one).

    PyTorch's dtype-keeping ops (abs, neg, rounding, activations) check the out dtype exactly, where
    the ops that compute in float (exp, sin) accept any dtype the result can be cast to.
    """
    for device in ("cpu", "meta"):
        kernel = ops.out.kernel(device)

        def guarded(*args, out, _kernel=kernel, **kwargs):
            want = expected(*args, **kwargs)
            if want is not None and isinstance(out, Tensor) and out.dtype is not want:
                raise RuntimeError(message(want, out.dtype))
            return _kernel(*args, out=out, **kwargs)

        if device == "meta":
            ops.out.register_meta(guarded)
        else:
            ops.out.register_kernel(device)(guarded)


def _found(want: D.dtype, got: D.dtype) -> str:
    return f"Found dtype {D.SCALAR_TYPE_NAMES[got]} but expected {D.SCALAR_TYPE_NAMES[want]}"


def _same_as_input(self, *args, **kwargs):
    return self.dtype if isinstance(self, Tensor) else None


def _same_unless_complex(self, *args, **kwargs):
    # These refuse complex inputs before they look at out= (NotImplementedError, not the dtype error).
    return None if self.dtype.category == D.COMPLEX else self.dtype


for _name in ("neg", "round", "round_decimals", "frac", "bitwise_not"):
    exact_out(OPS[_name], _same_as_input, _found)
for _name in ("floor", "ceil", "trunc", "sign"):
    exact_out(OPS[_name], _same_unless_complex, _found)
for _name in ("gelu", "silu", "mish"):
    exact_out(OPS[_name], _same_as_input, _found)
# abs of a complex tensor is lenient: its float result casts into any out= it fits.
exact_out(OPS["abs"], lambda self: None if self.dtype.category == D.COMPLEX else self.dtype, _found)
exact_out(
    OPS["nan_to_num"],
    _same_as_input,
    lambda want, got: (
        f"nan_to_num: dtype of out: {D.SCALAR_TYPE_NAMES[got]} should be same as input: {D.SCALAR_TYPE_NAMES[want]}"
    ),
)


# -- square and positive: composites, as in PyTorch ------------------------------------------------


def _pow():
    from ember.core.aten.pointwise import binary

    return binary.pow_


square = define("square(Tensor self) -> Tensor", ("pointwise",))
square_inplace = define("square_(Tensor(a!) self) -> Tensor(a!)", ("pointwise", "inplace"))
square_out = define("square.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", ("pointwise", "out"))
# pow(x, 2): a bool input becomes int64, the promotion with an integer exponent.
square.register_decomposition(lambda self: _pow().functional(self, 2))
square_inplace.register_decomposition(lambda self: _pow().inplace(self, 2))
square_out.register_decomposition(lambda self, *, out: _pow().out(self, 2, out=out))

positive = define("positive(Tensor(a) self) -> Tensor(a)", ())


@positive.register_kernel("*")
def _positive(self: Tensor) -> Tensor:
    if self.dtype is D.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


# -- the Python surface ---------------------------------------------------------------------------

for _name in _TABLE:
    if _name != "reciprocal":
        expose(OPS[_name], _name)
reciprocal_function = expose(OPS["reciprocal"], "reciprocal")  # binary's __rtruediv__ calls it
for _name in ("isnan", "isinf", "isfinite", "nan_to_num", "relu", "angle", "deg2rad", "rad2deg"):
    expose(OPS[_name], _name)
for _name in ("signbit", "isposinf", "isneginf"):
    expose(OPS[_name], _name)
for _alias, _target in [
    ("absolute", "abs"),
    ("negative", "neg"),
    ("arcsin", "asin"),
    ("arccos", "acos"),
    ("arctan", "atan"),
    ("arcsinh", "asinh"),
    ("arccosh", "acosh"),
    ("arctanh", "atanh"),
    ("fix", "trunc"),
]:
    expose(OPS[_target], _alias)


def _round_function(input, *, decimals: int | None = None, out: Tensor | None = None) -> Tensor:
    # Any explicit ``decimals`` (0 included) selects round.decimals, as PyTorch's binding does.
    ops = OPS["round"] if decimals is None else OPS["round_decimals"]
    kwargs = {} if decimals is None else {"decimals": decimals}
    if out is None:
        return ops.functional(input, **kwargs)
    return ops.out(input, out=out, **kwargs)


def _square_function(input, *, out: Tensor | None = None) -> Tensor:
    return square(input) if out is None else square_out(input, out=out)


def _register_surface() -> None:
    from ember.core.api import public

    public("round")(_round_function)
    public("square")(_square_function)
    public("positive")(positive)


_register_surface()


@method("round")
def _round_method(self, *, decimals: int | None = None) -> Tensor:
    if decimals is None:
        return OPS["round"].functional(self)
    return OPS["round_decimals"].functional(self, decimals=decimals)


@method("round_")
def _round_inplace(self, *, decimals: int | None = None) -> Tensor:
    if decimals is None:
        return OPS["round"].inplace(self)
    return OPS["round_decimals"].inplace(self, decimals=decimals)


@method("square")
def _square_method(self) -> Tensor:
    return square(self)


@method("square_")
def _square_inplace_method(self) -> Tensor:
    return square_inplace(self)


@method("positive", "__pos__")
def _positive_method(self) -> Tensor:
    return positive(self)


@method("__neg__")
def _neg_operator(self) -> Tensor:
    return OPS["neg"].functional(self)


@method("__abs__")
def _abs_operator(self) -> Tensor:
    return OPS["abs"].functional(self)


@method("__invert__")
def _invert_operator(self) -> Tensor:
    if self.dtype.category > D.INTEGRAL:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return OPS["bitwise_not"].functional(self)
