"""Exceptions and context managers: try/except/else/finally, raising and catching, ``with`` blocks."""

import contextlib
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch  # bound by the harness to PyTorch or to Ember


def randn(rng, *shape):
    return torch.tensor(rng.standard_normal(shape).astype(np.float32))


def try_finally(x):
    steps = []
    try:
        y = x * 2
        steps.append("body")
    finally:
        steps.append("finally")
    return y, steps


def catch_raised(x):
    try:
        raise ValueError("bad")
    except ValueError:
        x = x + 1
    return x


def catch_key_error(x, d):
    try:
        y = d["missing"]
    except KeyError:
        y = x.neg()
    return y


def try_else(x):
    try:
        y = x.sin()
    except RuntimeError:
        y = None
    else:
        y = y * 2
    return y


def nested_handlers(x):
    out = []
    for i in range(3):
        try:
            try:
                if i == 1:
                    raise IndexError(i)
                out.append(x * i)
            finally:
                out.append(i)
        except IndexError:
            out.append(-1)
    return out


def exception_from_helper(x):
    def check(t, n):
        if n < 0:
            raise ValueError("negative")
        return t * n

    y = x.cos()
    try:
        return check(y, -1)
    except ValueError as e:
        return y * 2, str(e)


def no_grad_block(x, w):
    with torch.no_grad():
        y = x @ w
    return y * 2, y.requires_grad


def enable_grad_inside_no_grad(x):
    with torch.no_grad():
        a = x * 2
        with torch.enable_grad():
            b = x * 3
    return a.requires_grad, b.requires_grad, a + b


class Recorder:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, *exc):
        self.log.append("exit")
        return False


def custom_context_manager(x, log):
    with Recorder(log) as r:
        y = x + len(r.log)
    return y


@contextlib.contextmanager
def _scaled(log):
    log.append("start")
    yield 3.0
    log.append("stop")


def contextlib_manager(x):
    log = []
    with _scaled(log) as s:
        y = x * s
    return y, log


def suppress_block(x, d):
    with contextlib.suppress(KeyError):
        x = x + d["nope"]
    return x * 2


def assertion_passes(x):
    assert x.dim() == 2, "needs a matrix"
    return x.t()


def reraise_from(x):
    try:
        try:
            {}["k"]
        except KeyError as e:
            raise ValueError("wrapped") from e
    except ValueError as outer:
        return x * 2, type(outer.__cause__).__name__


def finally_overrides(x):
    def inner(t):
        try:
            return t + 1
        finally:
            t.mul_(0.5)

    y = inner(x)
    return y, x


def raise_escapes(x, fail):
    y = x * 2
    if fail:
        raise RuntimeError("asked to fail")
    return y


CASES = [
    dict(fn=try_finally, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=catch_raised, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=catch_key_error, inputs=lambda rng: (randn(rng, 3), {"a": 1}), graphs=1),
    dict(fn=try_else, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=nested_handlers, inputs=lambda rng: (randn(rng, 2),), graphs=1),
    dict(fn=exception_from_helper, inputs=lambda rng: (randn(rng, 2),), graphs=1),
    dict(fn=no_grad_block, inputs=lambda rng: (randn(rng, 2, 3).requires_grad_(), randn(rng, 3, 2)), graphs=1),
    dict(fn=enable_grad_inside_no_grad, inputs=lambda rng: (randn(rng, 3).requires_grad_(),), graphs=1),
    dict(fn=custom_context_manager, inputs=lambda rng: (randn(rng, 3), []), graphs=1),
    dict(fn=contextlib_manager, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=suppress_block, inputs=lambda rng: (randn(rng, 3), {}), graphs=1),
    dict(fn=assertion_passes, inputs=lambda rng: (randn(rng, 2, 3),), graphs=1),
    dict(fn=reraise_from, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=finally_overrides, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=raise_escapes, calls=lambda rng: [(randn(rng, 3), False), (randn(rng, 3), True)], graphs=1),
]
