"""Closures, nonlocal, lambdas, decorators and functions made by factories."""

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch  # bound by the harness to PyTorch or to Ember


def randn(rng, *shape):
    return torch.tensor(rng.standard_normal(shape).astype(np.float32))


def inner_function(x):
    scale = 2.0

    def inner(y):
        return y * scale + x

    return inner(x.cos())


def closure_over_tensor(x):
    w = x.t() * 2

    def apply(y):
        return y @ w

    return apply(x).relu()


def nonlocal_counter(x):
    count = 0

    def bump(t):
        nonlocal count
        count += 1
        return t + count

    y = bump(bump(x))
    return y, count


def nonlocal_tensor(x):
    acc = torch.zeros_like(x)

    def add(t):
        nonlocal acc
        acc = acc + t

    add(x)
    add(x * 3)
    return acc


def closure_appends(x):
    seen = []

    def push(t):
        seen.append(t.sum())

    push(x)
    push(x * 2)
    return torch.stack(seen)


def late_binding_lambdas(x):
    fns = [lambda t: t * i for i in range(3)]  # noqa: B023 (every lambda sees the last i)
    return [f(x) for f in fns]


def default_argument_capture(x):
    fns = [lambda t, i=i: t * i for i in range(3)]
    return [f(x) for f in fns]


def _twice(f):
    def g(t):
        return f(f(t))

    return g


@_twice
def _increment(t):
    return t + 1


def decorated_helper(x):
    return _increment(x) * 2


def three_levels(x):
    total = 0

    def outer(t):
        def middle(u):
            def inner(v):
                nonlocal total
                total += 1
                return v.exp()

            return inner(u) + 1

        return middle(t) * 2

    return outer(x), total


def recursive_helper(x):
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    return x * fact(4)


def _make_scaler(s, shift):
    def scaler(x):
        return x * s + shift

    return scaler


closure_program = _make_scaler(3.0, -1.0)


def returns_a_closure(x):
    def g(y):
        return y + x

    return g(x), g


def closure_over_function(x):
    act = torch.tanh

    def layer(t):
        return act(t) * 0.5

    return layer(layer(x))


def nonlocal_in_loop(x):
    steps = []

    def record(i):
        nonlocal x
        x = x * 0.9 + i
        steps.append(i)

    for i in range(4):
        record(i)
    return x, steps


def shared_cell(x):
    level = 1.0

    def raise_level():
        nonlocal level
        level = level * 3

    def read(t):
        return t * level

    before = read(x)
    raise_level()
    return before, read(x), level


CASES = [
    dict(fn=inner_function, inputs=lambda rng: (randn(rng, 3, 3),), graphs=1),
    dict(fn=closure_over_tensor, inputs=lambda rng: (randn(rng, 3, 4),), graphs=1),
    dict(fn=nonlocal_counter, inputs=lambda rng: (randn(rng, 4),), graphs=1),
    dict(fn=nonlocal_tensor, inputs=lambda rng: (randn(rng, 4),), graphs=1),
    dict(fn=closure_appends, inputs=lambda rng: (randn(rng, 2, 2),), graphs=1),
    dict(fn=late_binding_lambdas, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=default_argument_capture, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=decorated_helper, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=three_levels, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=recursive_helper, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=closure_program, name="closure_program", inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=returns_a_closure, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=closure_over_function, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=shared_cell, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=nonlocal_in_loop, inputs=lambda rng: (randn(rng, 3),), graphs=1),
]
