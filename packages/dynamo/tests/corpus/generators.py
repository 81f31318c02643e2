"""Generators, generator expressions and comprehensions of every kind, iterator builtins."""

import itertools
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch  # bound by the harness to PyTorch or to Ember


def randn(rng, *shape):
    return torch.tensor(rng.standard_normal(shape).astype(np.float32))


def list_comprehension(x):
    return [x * i for i in range(3) if i != 1]


def dict_comprehension(x):
    return {f"p{i}": x**i for i in range(1, 4)}


def set_comprehension(x):
    sizes = {d * 2 for d in x.shape}
    return x.sum() * len(sizes), sorted(sizes)


def nested_comprehension(xs):
    return [[a * b for b in xs] for a in xs]


def generator_expression_sum(xs):
    return sum(x.mean() for x in xs), any(x.shape[0] > 2 for x in xs), all(x.dim() == 1 for x in xs)


def _squares(x, n):
    for i in range(n):
        yield x * i * i


def generator_function(x):
    return list(_squares(x, 4))


def _pairs(xs):
    yield from zip(xs, xs[1:])  # noqa: B905, RUF007 (the zip users write)


def yield_from(xs):
    return [a - b for a, b in _pairs(xs)]


def generator_next(x):
    gen = _squares(x, 5)
    first = next(gen)
    second = next(gen)
    return first + second


def _counter(limit):
    i = 0
    while i < limit:
        yield i
        i += 1
    return "done"


def generator_exhausted(x):
    total = x
    for i in _counter(3):
        total = total + i
    return total


def itertools_program(xs):
    out = []
    for a, b in itertools.product(xs[:2], repeat=2):
        out.append(a * b)
    chained = list(itertools.chain(xs, out))
    return sum(chained), len(chained)


def map_filter_zip(xs, ws):
    scaled = list(map(lambda p: p[0] * p[1], zip(xs, ws)))  # noqa: B905
    kept = list(filter(lambda w: w > 0, ws))
    return torch.stack(scaled), kept


def comprehension_with_closure(x):
    k = 3
    return [x + k * j for j in range(2)]


def reversed_enumerate(xs):
    return [x * i for i, x in reversed(list(enumerate(xs)))]


def accumulate_tensors(xs):
    return list(itertools.accumulate(xs))


def _echo(x):
    total = x * 0
    while True:
        value = yield total
        if value is None:
            return
        total = total + value


def generator_send(x):
    gen = _echo(x)
    next(gen)
    gen.send(x)
    out = gen.send(x * 2)
    return out


def break_out_of_generator(x):
    out = x
    for i, y in enumerate(_squares(x, 10)):
        if i == 3:
            break
        out = out + y
    return out


def stack_of_generator(xs):
    return torch.stack(tuple(x * i for i, x in enumerate(xs, start=1))), next(iter([]), "empty")


CASES = [
    dict(fn=list_comprehension, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=dict_comprehension, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=set_comprehension, inputs=lambda rng: (randn(rng, 2, 3),), graphs=1),
    dict(fn=nested_comprehension, inputs=lambda rng: ([randn(rng, 2), randn(rng, 2)],), graphs=1),
    dict(fn=generator_expression_sum, inputs=lambda rng: ([randn(rng, 3), randn(rng, 2)],), graphs=1),
    dict(fn=generator_function, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=yield_from, inputs=lambda rng: ([randn(rng, 2) for _ in range(4)],), graphs=1),
    dict(fn=generator_next, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=generator_exhausted, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=itertools_program, inputs=lambda rng: ([randn(rng, 2) for _ in range(3)],), graphs=1),
    dict(fn=map_filter_zip, inputs=lambda rng: ([randn(rng, 2), randn(rng, 2)], [2.0, -1.0]), graphs=1),
    dict(fn=comprehension_with_closure, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=reversed_enumerate, inputs=lambda rng: ([randn(rng, 2) for _ in range(3)],), graphs=1),
    dict(fn=generator_send, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=break_out_of_generator, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=stack_of_generator, inputs=lambda rng: ([randn(rng, 2) for _ in range(3)],), graphs=1),
    dict(fn=accumulate_tensors, inputs=lambda rng: ([randn(rng, 2) for _ in range(3)],), graphs=1),
]
