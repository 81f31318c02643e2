"""The in-place samplers every random op is built on: ``uniform_``, ``normal_``, ``exponential_``,
``random_`` and ``bernoulli_`` (scalar and tensor ``p``).

Each fills its tensor in row-major order of the shape from one reserved range of Philox counters
(``ember.core.random_bits`` says which words each element uses), so ``(seed, offset)`` before the
call determines the result, whatever the tensor's strides. The factories (``rand``, ``randn``,
``randint``...) allocate and call these kernels.

Each sampler has a pure meta function (``*_meta``): the argument checks that need only metadata, in
the CPU kernel's order, and ``self`` back untouched; it draws nothing and reserves no counters, so
a meta tensor leaves the generator where it was.
"""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtypes as D
from ember.core import random_bits as B
from ember.core.api import method
from ember.core.dispatch import define
from ember.core.generator import reserve
from ember.core.layout import numel
from ember.core.pointwise import check_no_internal_overlap, type_name, unsupported
from ember.core.tensor import Tensor

INPLACE = ("random", "inplace")
_GEN = "Generator? generator=None"


def _count(self: Tensor) -> int:
    n = numel(self._shape)
    return 2 * n if self.dtype.category == D.COMPLEX else n


def _store(self: Tensor, values: np.ndarray) -> Tensor:
    """Write ``values`` (row-major, real parts then imaginary interleaved for complex) into ``self``."""
    if self.dtype.category == D.COMPLEX:
        values = values.astype(self.dtype.to_real().np).view(self.dtype.np)
    with np.errstate(all="ignore"):
        np.copyto(self._array, values.reshape(self._shape), casting="unsafe")
    self._storage.version += 1
    return self


def _begin(self: Tensor, generator) -> tuple[int, int]:
    """The overlap check shared by the samplers, then ``(seed, offset)`` of the reserved counters."""
    check_no_internal_overlap(self)
    return reserve(generator, _count(self))


def _real(self: Tensor) -> D.dtype:
    return self.dtype.to_real() if self.dtype.category == D.COMPLEX else self.dtype


def _compute(d: D.dtype):
    return np.float64 if d is D.float64 else np.float32


# -- uniform_ -----------------------------------------------------------------------------------------

uniform_op = define(f"uniform_(Tensor(a!) self, float from=0, float to=1, *, {_GEN}) -> Tensor(a!)", INPLACE)


_FLOAT_MAX = {d: float(np.finfo(d.np).max) for d in (D.float16, D.float32, D.float64)} | {
    D.bfloat16: 3.3895313892515355e38
}


def _from_to(args: tuple, kwargs: dict, default_from, default_to) -> tuple:
    """``self, from, to`` of a call: ``from``/``to`` are Python keywords, so they arrive as ``**kwargs``."""
    self, rest = args[0], list(args[1:])
    low = rest.pop(0) if rest else kwargs.get("from", default_from)
    high = rest.pop(0) if rest else kwargs.get("to", default_to)
    return self, low, high, kwargs.get("generator")


@uniform_op.register_kernel("cpu")
def _uniform_kernel(*args, **kwargs) -> Tensor:
    self, low, high, generator = _from_to(args, kwargs, 0.0, 1.0)
    return uniform_(self, low, high, generator=generator)


@uniform_op.register_meta
def _uniform_op_meta(*args, **kwargs) -> Tensor:
    self, low, high, _ = _from_to(args, kwargs, 0.0, 1.0)
    return uniform_meta(self, low, high)


def check_uniform(self: Tensor, low: float, high: float) -> None:
    if self.dtype.category < D.FLOATING:
        raise unsupported("check_uniform_bounds", self.dtype)
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low} > to={high}")
    real = _real(self)
    if high - low > _FLOAT_MAX[real]:
        raise RuntimeError(
            f"uniform_ expects to-from <= std::numeric_limits<{type_name(real)}>::max(), but found "
            f"to={high} and from={low} which result in to-from to exceed the limit"
        )


def uniform_meta(self: Tensor, low: float = 0, high: float = 1) -> Tensor:
    check_uniform(self, low, high)
    check_no_internal_overlap(self)
    return self


def uniform_(self: Tensor, low: float = 0, high: float = 1, *, generator=None) -> Tensor:
    """The CPU sampler (the factories call it on the tensors they allocate)."""
    check_uniform(self, low, high)
    started = _begin(self, generator)
    real = _real(self)
    u = B.uniform(*started, _count(self), real)
    work = _compute(real)
    return _store(self, u.astype(work) * work(high - low) + work(low))


# -- normal_ ------------------------------------------------------------------------------------------

normal_op = define(f"normal_(Tensor(a!) self, float mean=0, float std=1, *, {_GEN}) -> Tensor(a!)", INPLACE)


def check_std(std: float) -> None:
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_number(std)}")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def check_normal_dtype(self: Tensor) -> None:
    if self.dtype.category < D.FLOATING:
        raise unsupported("normal_kernel", self.dtype)


def standard_normal(self: Tensor, generator) -> np.ndarray:
    """N(0, 1) numbers for every element of ``self`` (each complex part N(0, 1/2))."""
    check_normal_dtype(self)
    started = _begin(self, generator)
    z = B.normal(*started, _count(self), _real(self))
    if self.dtype.category == D.COMPLEX:
        z = z * _compute(_real(self))(math.sqrt(0.5))
    return z


@normal_op.register_meta
def normal_meta(self: Tensor, mean: float = 0, std: float = 1, *, generator=None) -> Tensor:
    check_std(std)
    check_normal_dtype(self)
    check_no_internal_overlap(self)
    return self


@normal_op.register_kernel("cpu")
def normal_(self: Tensor, mean: float = 0, std: float = 1, *, generator=None) -> Tensor:
    check_std(std)
    z = standard_normal(self, generator)
    work = _compute(_real(self))
    return _store(self, z.astype(work) * work(std) + work(mean))


# -- exponential_ -------------------------------------------------------------------------------------

exponential_op = define(f"exponential_(Tensor(a!) self, float lambd=1, *, {_GEN}) -> Tensor(a!)", INPLACE)


def _check_exponential(self: Tensor, lambd: float) -> None:
    if self.dtype.category != D.FLOATING:
        raise RuntimeError(
            "Exponential distribution is a continuous probability distribution. dtype must be a floating point "
            f"but you specified {type_name(self.dtype)}"
        )
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_number(lambd)}")


@exponential_op.register_meta
def _exponential_meta(self: Tensor, lambd: float = 1, *, generator=None) -> Tensor:
    _check_exponential(self, lambd)
    check_no_internal_overlap(self)
    return self


@exponential_op.register_kernel("cpu")
def exponential_(self: Tensor, lambd: float = 1, *, generator=None) -> Tensor:
    _check_exponential(self, lambd)
    started = _begin(self, generator)
    work = _compute(self.dtype)
    u = B.uniform(*started, _count(self), self.dtype).astype(work)
    # -log1p(-u) with u < 1 is finite; u = 0 gives 0, as PyTorch's inverse-CDF sampler can.
    return _store(self, -np.log1p(-u) / work(lambd))


# -- random_ ------------------------------------------------------------------------------------------

random_op = define(f"random_(Tensor(a!) self, *, {_GEN}) -> Tensor(a!)", INPLACE)
random_to = define(f"random_.to(Tensor(a!) self, int to, *, {_GEN}) -> Tensor(a!)", INPLACE)
random_from = define(f"random_.from(Tensor(a!) self, int from, int? to, *, {_GEN}) -> Tensor(a!)", INPLACE)

_DIGITS = {D.float16: 11, D.bfloat16: 8, D.float32: 24, D.float64: 53}


def dtype_bounds(d: D.dtype) -> tuple[int, int]:
    """The integers ``d`` holds exactly: its range for integer types, +-2**digits for floating ones."""
    if d is D.bool_:
        return 0, 1
    if d.category == D.INTEGRAL:
        info = np.iinfo(d.np)
        return int(info.min), int(info.max)
    return -(1 << _DIGITS[d]), 1 << _DIGITS[d]


def check_range(low: int, high: int, d: D.dtype) -> None:
    """PyTorch's checks of an integer range ``[low, high)`` for a result of dtype ``d``."""
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if d.category <= D.INTEGRAL:
        lo, hi = dtype_bounds(d)
        name = D.CPP_TYPE_NAMES[d]
        if not lo <= low <= hi:
            raise RuntimeError(f"from is out of bounds for {name}")
        if not lo <= high - 1 <= hi:
            raise RuntimeError(f"to - 1 is out of bounds for {name}")


def _check_integers(self: Tensor, low: int, high: int) -> None:
    if self.dtype.category == D.COMPLEX:
        raise unsupported("random_from_to", self.dtype)
    check_range(low, high, self.dtype)


def fill_integers_meta(self: Tensor, low: int, high: int) -> Tensor:
    """``fill_integers``' checks, drawing nothing."""
    _check_integers(self, low, high)
    check_no_internal_overlap(self)
    return self


def fill_integers(self: Tensor, low: int, high: int, generator) -> Tensor:
    _check_integers(self, low, high)
    started = _begin(self, generator)
    drawn = B.integers(*started, _count(self), low, high)
    return _store(self, drawn if self.dtype.category <= D.INTEGRAL else drawn.astype(np.float64))


def _random_high(self: Tensor) -> int:
    if self.dtype.category == D.COMPLEX:
        raise unsupported("random_", self.dtype)
    return dtype_bounds(self.dtype)[1] + 1


@random_op.register_meta
def _random_meta(self: Tensor, *, generator=None) -> Tensor:
    return fill_integers_meta(self, 0, _random_high(self))


@random_op.register_kernel("cpu")
def random_(self: Tensor, *, generator=None) -> Tensor:
    return fill_integers(self, 0, _random_high(self), generator)


@random_to.register_meta
def _random_to_meta(self: Tensor, to: int, *, generator=None) -> Tensor:
    return fill_integers_meta(self, 0, int(to))


@random_to.register_kernel("cpu")
def random_to_(self: Tensor, to: int, *, generator=None) -> Tensor:
    return fill_integers(self, 0, int(to), generator)


def _random_from_args(args: tuple, kwargs: dict) -> tuple:
    self, low, high, generator = _from_to(args, kwargs, None, None)
    if high is None:
        high = dtype_bounds(self.dtype)[1] + 1
    return self, int(low), int(high), generator


@random_from.register_meta
def _random_from_meta(*args, **kwargs) -> Tensor:
    self, low, high, _ = _random_from_args(args, kwargs)
    return fill_integers_meta(self, low, high)


@random_from.register_kernel("cpu")
def random_from_(*args, **kwargs) -> Tensor:
    return fill_integers(*_random_from_args(args, kwargs))


# -- bernoulli_ ---------------------------------------------------------------------------------------

bernoulli_float = define(f"bernoulli_.float(Tensor(a!) self, float p=0.5, *, {_GEN}) -> Tensor(a!)", INPLACE)
bernoulli_tensor = define(f"bernoulli_.Tensor(Tensor(a!) self, Tensor p, *, {_GEN}) -> Tensor(a!)", INPLACE)


def check_p(p: float) -> None:
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")


def _check_bernoulli_self(self: Tensor) -> None:
    if self.dtype.category == D.COMPLEX:
        raise unsupported("bernoulli_scalar_cpu_", self.dtype)
    check_no_internal_overlap(self)


def bernoulli_meta(self: Tensor, p: float = 0.5, *, generator=None) -> Tensor:
    check_p(p)
    _check_bernoulli_self(self)
    return self


def draw_bernoulli(self: Tensor, p, generator) -> np.ndarray:
    """Bools, one per element of ``self``: ``u < p`` with ``u`` the float32 uniform (float64 for a
    float64 ``p``), so p = 0 never and p = 1 always succeeds."""
    _check_bernoulli_self(self)
    seed, offset = reserve(generator, numel(self._shape))
    wide = isinstance(p, np.ndarray) and p.dtype == np.float64
    u = B.uniform(seed, offset, numel(self._shape), D.float64 if wide else D.float32)
    return u.reshape(self._shape) < p


bernoulli_float.register_meta(bernoulli_meta)


@bernoulli_float.register_kernel("cpu")
def bernoulli_(self: Tensor, p: float = 0.5, *, generator=None) -> Tensor:
    check_p(p)
    return _store(self, draw_bernoulli(self, np.float64(p), generator))


def check_tensor_p(p: Tensor, shape: tuple) -> Tensor:
    """``p`` expanded to ``shape``, after PyTorch's checks of its dtype and shape."""
    if p.dtype.category != D.FLOATING:
        raise unsupported("bernoulli_tensor_cpu_p_", p.dtype)
    from ember.core.aten.shape.views import expand

    return expand(p, shape)


def tensor_p(p: Tensor, shape: tuple) -> np.ndarray:
    """``p`` broadcast to ``shape`` as a float32/float64 array, after PyTorch's checks."""
    expanded = check_tensor_p(p, shape)
    values = expanded._require_data("bernoulli_").astype(np.float64 if p.dtype is D.float64 else np.float32)
    if not ((values >= 0) & (values <= 1)).all():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    return values


@bernoulli_tensor.register_meta
def bernoulli_tensor_meta(self: Tensor, p: Tensor, *, generator=None) -> Tensor:
    check_tensor_p(p, self._shape)
    _check_bernoulli_self(self)
    return self


@bernoulli_tensor.register_kernel("cpu")
def bernoulli_tensor_(self: Tensor, p: Tensor, *, generator=None) -> Tensor:
    values = tensor_p(p, self._shape)
    return _store(self, draw_bernoulli(self, values, generator))


# -- the Python surface -------------------------------------------------------------------------------


@method("uniform_")
def _uniform_method(self, from_=0, to=1, *, generator=None, **names):
    low = names.pop("from", from_)
    if names:
        raise TypeError(f"uniform_() got unexpected keyword arguments {sorted(names)}")
    return uniform_op(self, float(low), float(to), generator=generator)


@method("normal_")
def _normal_method(self, mean=0, std=1, *, generator=None):
    return normal_op(self, float(mean), float(std), generator=generator)


@method("exponential_")
def _exponential_method(self, lambd=1, *, generator=None):
    return exponential_op(self, float(lambd), generator=generator)


def _int_bound(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"random_(): argument '{name}' must be int, not {type(value).__name__}")
    value = int(value)
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError("Overflow when unpacking long long")
    return value


@method("random_")
def _random_method(self, *args, generator=None, **names):
    low = names.pop("from", None)
    high = names.pop("to", None)
    if names:
        raise TypeError(f"random_() got unexpected keyword arguments {sorted(names)}")
    if len(args) > 2:
        raise TypeError("random_() takes at most 2 positional arguments")
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if low is None and high is None:
            high = args[0]
        else:
            low = args[0]
    if low is None and high is None:
        return random_op(self, generator=generator)
    if low is None:
        return random_to(self, _int_bound(high, "to"), generator=generator)
    return random_from(
        self, _int_bound(low, "from"), None if high is None else _int_bound(high, "to"), generator=generator
    )


@method("bernoulli_")
def _bernoulli_method(self, p=0.5, *, generator=None):
    if isinstance(p, Tensor):
        return bernoulli_tensor(self, p, generator=generator)
    if isinstance(p, bool) or not isinstance(p, int | float | np.integer | np.floating):
        raise TypeError(f"bernoulli_(): argument 'p' must be float or Tensor, not {type(p).__name__}")
    return bernoulli_float(self, float(p), generator=generator)
