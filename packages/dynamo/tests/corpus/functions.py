"""Calls of every shape: functools.partial, methods, super(), staticmethods and classmethods,
properties, *args/**kwargs, keyword-only arguments and dunder methods."""

import functools
import operator
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch  # bound by the harness to PyTorch or to Ember


def randn(rng, *shape):
    return torch.tensor(rng.standard_normal(shape).astype(np.float32))


def _affine(x, scale, shift=0.0):
    return x * scale + shift


def partial_call(x):
    double = functools.partial(_affine, scale=2.0)
    shifted = functools.partial(_affine, shift=1.0)
    return double(x), shifted(x, 3.0)


def partial_of_torch(x):
    soft = functools.partial(torch.softmax, dim=-1)
    return soft(x)


class Base:
    def __init__(self, scale):
        self.scale = scale

    def apply(self, x):
        return x * self.scale


class Child(Base):
    def __init__(self, scale, bias):
        super().__init__(scale)
        self.bias = bias

    def apply(self, x):
        return super().apply(x) + self.bias


def super_call(x):
    return Child(2.0, 1.0).apply(x)


def method_on_argument(x, obj):
    return obj.apply(x) - x


class Maths:
    factor = 3

    @staticmethod
    def square(x):
        return x * x

    @classmethod
    def triple(cls, x):
        return x * cls.factor

    @property
    def name(self):
        return "maths"


def static_and_class_methods(x):
    m = Maths()
    return Maths.square(x), m.triple(x), Maths.triple(x), m.name


class Celsius:
    def __init__(self, degrees):
        self._degrees = degrees

    @property
    def kelvin(self):
        return self._degrees + 273.15

    @kelvin.setter
    def kelvin(self, value):
        self._degrees = value - 273.15


def property_get_set(x):
    c = Celsius(x)
    k = c.kelvin
    c.kelvin = k * 2
    return c._degrees


def star_args(*xs, scale=1.0, **extra):
    total = sum(xs) * scale
    for key in sorted(extra):
        total = total + extra[key]
    return total


def _kwonly(x, *, power, offset=0):
    return x**power + offset


def keyword_only(x):
    return _kwonly(x, power=2), _kwonly(x, offset=1, power=3)


class Vec:
    def __init__(self, data):
        self.data = data

    def __add__(self, other):
        return Vec(self.data + other.data)

    def __mul__(self, k):
        return Vec(self.data * k)

    def __len__(self):
        return self.data.shape[0]

    def __getitem__(self, i):
        return self.data[i]


def dunder_methods(a, b):
    v = Vec(a) + Vec(b) * 2
    return v.data, len(v), v[0]


def operator_module(x, y):
    return operator.add(x, y), operator.mul(x, 2), operator.getitem(x, 0), operator.neg(y)


def bound_method_as_value(x):
    c = Child(0.5, 0.0)
    f = c.apply
    return f(f(x))


def getattr_setattr(x, obj):
    name = "scale"
    value = getattr(obj, name)
    setattr(obj, "seen", True)  # noqa: B010 (the builtin is what is tested)
    return x * value, hasattr(obj, "missing"), getattr(obj, "missing", 4)


class Polynomial:
    def __init__(self, *coefficients):
        self.coefficients = coefficients

    def __call__(self, x):
        out = x * 0
        for c in reversed(self.coefficients):
            out = out * x + c
        return out


def callable_object(x):
    return Polynomial(1.0, -2.0, 0.5)(x)


def _logged(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs) + 1

    return wrapper


@_logged
def _square(t):
    return t * t


def wraps_and_reduce(xs):
    total = functools.reduce(operator.add, [_square(x) for x in xs])
    return total, _square.__name__


def type_checks(x, n):
    kinds = (type(x).__name__, isinstance(x, torch.Tensor), isinstance(n, int), callable(x.sum))
    return x * n if isinstance(n, int) else x, kinds


class ScaleMixin:
    def apply(self, x):
        return super().apply(x) * 2


class Mixed(ScaleMixin, Child):
    pass


def mro_with_mixin(x):
    return Mixed(1.5, 0.5).apply(x), [c.__name__ for c in Mixed.__mro__[:3]]


class Lazy:
    base = 2.0

    def __init__(self):
        self.base = 3.0

    def __getattr__(self, name):
        return len(name)


def getattr_fallback_and_shadowing(x):
    obj = Lazy()
    return x * obj.base + obj.abcd, Lazy.base


def _star_args_inputs(rng):
    return (randn(rng, 3), randn(rng, 3))


CASES = [
    dict(fn=partial_call, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=partial_of_torch, inputs=lambda rng: (randn(rng, 2, 4),), graphs=1),
    dict(fn=super_call, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=method_on_argument, inputs=lambda rng: (randn(rng, 3), Child(3.0, -1.0)), graphs=1),
    dict(fn=static_and_class_methods, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=property_get_set, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=star_args, driver=lambda f, rng: [f(*_star_args_inputs(rng), scale=2.0, b=1.0, a=0.5)], graphs=1),
    dict(fn=keyword_only, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=dunder_methods, inputs=lambda rng: (randn(rng, 3), randn(rng, 3)), graphs=1),
    dict(fn=operator_module, inputs=lambda rng: (randn(rng, 2, 2), randn(rng, 2, 2)), graphs=1),
    dict(fn=bound_method_as_value, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=callable_object, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=wraps_and_reduce, inputs=lambda rng: ([randn(rng, 2) for _ in range(3)],), graphs=1),
    dict(fn=type_checks, inputs=lambda rng: (randn(rng, 3), 3), graphs=1),
    dict(fn=mro_with_mixin, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=getattr_fallback_and_shadowing, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=getattr_setattr, inputs=lambda rng: (randn(rng, 3), Base(1.5)), graphs=1),
]
