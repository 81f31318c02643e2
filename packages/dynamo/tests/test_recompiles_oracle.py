"""How often a function compiles as its inputs change, against torch.compile with a counting backend."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

import numpy as np  # noqa: E402
from torch._dynamo.testing import CompileCounter as TorchCounter  # noqa: E402

import ember  # noqa: E402
import ember._dynamo  # noqa: E402
from ember._dynamo.testing import CompileCounter  # noqa: E402

SCALE = 2


def add(x, y):
    return (x + y).relu()


def scaled(x, n):
    return x * n


def total(xs):
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out


def times_scale(x):
    return x * SCALE


def set_scale(value):
    global SCALE
    SCALE = value


def t(lib, *shape, dtype="float32", grad=False):
    value = lib.tensor(np.ones(shape, dtype=dtype))
    return value.requires_grad_() if grad else value


# Each scenario: (function, keyword arguments of compile, the calls as functions of the library)
SCENARIOS = {
    "same inputs": (add, {}, [lambda L: (t(L, 4, 3), t(L, 4, 3))] * 3),
    "growing batch": (add, {}, [lambda L, n=n: (t(L, n, 3), t(L, n, 3)) for n in (4, 6, 8, 10)]),
    "two dims change": (add, {}, [lambda L, n=n: (t(L, n, n + 1), t(L, n, n + 1)) for n in (4, 6, 8)]),
    "dtypes": (add, {}, [lambda L, d=d: (t(L, 4, dtype=d), t(L, 4, dtype=d)) for d in ("float32", "float64")]),
    "requires_grad": (add, {}, [lambda L, g=g: (t(L, 4, grad=g), t(L, 4)) for g in (False, True, False)]),
    "rank change": (add, {}, [lambda L, s=s: (t(L, *s), t(L, *s)) for s in ((4,), (4, 3), (4, 3, 2))]),
    "dynamic=True": (add, {"dynamic": True}, [lambda L, n=n: (t(L, n, 3), t(L, n, 3)) for n in (4, 6, 8)]),
    "dynamic=False": (add, {"dynamic": False}, [lambda L, n=n: (t(L, n, 3), t(L, n, 3)) for n in (4, 6, 8)]),
    "int argument": (scaled, {}, [lambda L, n=n: (t(L, 3), n) for n in (2, 3, 4, 5)]),
    "list length": (total, {}, [lambda L, n=n: ([t(L, 2)] * n,) for n in (2, 3, 3, 4)]),
}


def count(lib, fn, options, calls) -> int:
    if lib is torch:
        torch._dynamo.reset()
        counter = TorchCounter()
        compiled = torch.compile(fn, backend=counter, **options)
    else:
        ember._dynamo.reset()
        counter = CompileCounter()
        compiled = ember.compile(fn, backend=counter, **options)
    for make in calls:
        compiled(*make(lib))
    return counter.frame_count


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_compile_counts_match_torch(name):
    fn, options, calls = SCENARIOS[name]
    assert count(ember, fn, options, calls) == count(torch, fn, options, calls)


def test_mark_dynamic_counts_match_torch():
    counts = []
    for lib, dynamo in ((torch, torch._dynamo), (ember, ember._dynamo)):
        dynamo.reset()
        counter = TorchCounter() if lib is torch else CompileCounter()
        compiled = lib.compile(add, backend=counter)
        x, y = t(lib, 4, 3), t(lib, 4, 3)
        dynamo.mark_dynamic(x, 0)
        dynamo.mark_dynamic(y, 0)
        compiled(x, y)
        compiled(t(lib, 7, 3), t(lib, 7, 3))
        counts.append(counter.frame_count)
    assert counts[0] == counts[1] == 1


def test_a_changing_global_int_compiles_no_more_often_than_in_torch():
    # PyTorch keeps a global int a constant (one compile per value); Ember makes it dynamic after
    # its first change, as it does a local int: fewer compiles, the same results.
    calls = [lambda L, n=n: (set_scale(n), t(L, 2))[1:] for n in (2, 3, 4, 2)]
    try:
        ours, theirs = count(ember, times_scale, {}, calls), count(torch, times_scale, {}, calls)
        set_scale(5)
        assert ember.compile(times_scale, backend="eager")(t(ember, 2)).tolist() == [5.0, 5.0]
    finally:
        set_scale(2)
    assert (ours, theirs) == (2, 3)


def test_cache_limit_stops_compiling_at_the_same_count(monkeypatch):
    monkeypatch.setattr(torch._dynamo.config, "cache_size_limit", 2)
    monkeypatch.setattr(ember._dynamo.config, "cache_size_limit", 2)
    calls = [lambda L, d=d: (t(L, 4, dtype=d), t(L, 4, dtype=d)) for d in ("float32", "float64", "float16", "int64")]
    with pytest.warns(UserWarning, match="cache_size_limit"):
        ours = count(ember, add, {}, calls)
    assert ours == count(torch, add, {}, calls) == 2
