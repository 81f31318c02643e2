"""Capture through ``ember.compile`` against PyTorch's ``torch.compile``: the same program written once
over a library (``import ember as torch``), same values and side effects, no more graphs than PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

from torch._dynamo.testing import CompileCounter  # noqa: E402

import ember  # noqa: E402
import ember.dynamo.testing as etesting  # noqa: E402

PROGRAMS = {}


def program(fn):
    PROGRAMS[fn.__name__] = fn
    return fn


@program
def arith(lib):
    def f(x, y):
        return lib.relu(x * y + 1).sum(1), (x - y).abs().max()

    return f, [np.random.rand(3, 4), np.random.rand(3, 4)]


@program
def shape_branch(lib):
    def f(x):
        if x.shape[0] > 2 and x.dim() == 2:
            return x.t() @ x
        return x + 1

    return f, [np.random.rand(3, 2)]


@program
def loop_over_list(lib):
    def f(xs):
        acc = xs[0]
        for i, x in enumerate(xs[1:]):
            acc = acc * x + i
        return acc

    return f, [[np.random.rand(3) for _ in range(3)]]


@program
def print_break(lib):
    def f(x):
        y = x.sin()
        print("between graphs")
        return y.cos()

    return f, [np.random.rand(4)]


@program
def data_dependent_branch(lib):
    def f(x):
        y = x * 2
        if y.sum() > 0:
            return y + 1
        return y - 1

    return f, [np.random.rand(4)]


@program
def list_mutation(lib):
    def f(x, out):
        out.append(x * 2)
        out.append(len(out))
        return x + 1

    return f, [np.random.rand(2), []]


@program
def dict_mutation(lib):
    def f(x, d):
        d["y"] = d["x"] * x
        d.pop("x")
        return x.exp()

    return f, [np.random.rand(2), {"x": np.random.rand(2)}]


class Counter:
    def __init__(self):
        self.n = 0


@program
def attr_mutation(lib):
    c = Counter()

    def f(x, c=c):
        c.n += 1
        c.last = x * 2
        return x.tanh()

    return f, [np.random.rand(3)]


@program
def inplace_on_input(lib):
    def f(x):
        x.add_(1)
        x.mul_(2)
        return x.sum()

    return f, [np.random.rand(3)]


@program
def closure_cell_write(lib):
    state = {"calls": 0}
    total = [0]

    def f(x):
        nonlocal_update()
        return x * total[0]

    def nonlocal_update():
        state["calls"] += 1
        total[0] += state["calls"]

    return f, [np.random.rand(2)]


@program
def module_forward(lib):
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))
    for p in net.parameters():
        p.data = p.data * 0 + 0.1

    def f(x):
        return net(x)

    return f, [np.random.rand(3, 4)]


@program
def kwargs_and_defaults(lib):
    def g(x, scale=2.0, *, shift=0.0):
        return x * scale + shift

    def f(x):
        return g(x), g(x, 3.0, shift=1.0)

    return f, [np.random.rand(3)]


@program
def comprehension_and_zip(lib):
    def f(xs, ys):
        return [a * b for a, b in zip(xs, ys, strict=False)], {i: a.sum() for i, a in enumerate(xs)}

    return f, [[np.random.rand(2)] * 2, [np.random.rand(2)] * 2]


@program
def graph_break_in_callee(lib):
    def g(x):
        y = x + 1
        print("inside")
        return y * 2

    def f(x):
        return g(x.sin()).cos()

    return f, [np.random.rand(3)]


@program
def no_grad_block(lib):
    def f(x):
        with lib.no_grad():
            y = x * 2
        return x * y

    return f, [np.random.rand(3)]


def _to(lib, v):
    if isinstance(v, np.ndarray):
        return lib.tensor(v.astype(np.float32))
    if isinstance(v, list):
        return [_to(lib, x) for x in v]
    if isinstance(v, dict):
        return {k: _to(lib, x) for k, x in v.items()}
    return v


def _np(v):
    if hasattr(v, "detach"):
        return np.asarray(v.detach().tolist(), dtype=np.float64)
    if isinstance(v, (list, tuple)):
        return type(v)(_np(x) for x in v)
    if isinstance(v, dict):
        return {k: _np(x) for k, x in v.items()}
    return v


def _close(a, b):
    if isinstance(a, np.ndarray):
        return np.allclose(a, b, atol=1e-5)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_torch_compile(name):
    np.random.seed(0)
    results = {}
    for lib, counter_cls in ((torch, CompileCounter), (ember, etesting.CompileCounter)):
        np.random.seed(0)
        eager_fn, raw = PROGRAMS[name](lib)
        np.random.seed(0)
        fn, _ = PROGRAMS[name](lib)  # a fresh program: its own closures and objects
        eager_args = _to(lib, raw)
        compiled_args = _to(lib, raw)
        if lib is torch:
            torch._dynamo.reset()
        else:
            ember._dynamo.reset()
        counter = counter_cls()
        expected = eager_fn(*eager_args)
        got = lib.compile(fn, backend=counter)(*compiled_args)
        assert _close(_np(got), _np(expected)), name
        assert _close(_np(compiled_args), _np(eager_args)), f"{name}: side effects on the arguments differ"
        results[lib.__name__] = (counter.frame_count, _np(got))
    assert results["ember"][0] <= results["torch"][0], results
    assert _close(results["ember"][1], results["torch"][1])
