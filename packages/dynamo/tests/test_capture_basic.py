"""Capture of straight-line code, control flow, calls and containers, checked against eager."""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator

import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.dynamo.bytecode_testing import Recorder, compile_and_run
from ember.dynamo.exc import Unsupported
from ember.dynamo.guards import GuardKind


def same(a, b) -> bool:
    if isinstance(a, ember.Tensor):
        return isinstance(b, ember.Tensor) and a.shape == b.shape and bool(ember.allclose(a, b, atol=1e-6))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return type(a) is type(b) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def check(fn, *args, graphs: int | None = 1, **kwargs):
    expected = fn(*args, **kwargs)
    rec = Recorder()
    got, cf = compile_and_run(fn, *args, backend=rec, **kwargs)
    assert same(got, expected), (got, expected)
    if graphs is not None:
        from ember.dynamo.exc import graph_break_log

        assert rec.frame_count == graphs, [b.format() for b in graph_break_log[-3:]]
    return rec, cf


def test_arith_and_ops():
    def f(x, y):
        z = x + y * 2 - x / 3
        return ember.relu(z).sum(0), F.gelu(z), -z, z @ y.T if z.ndim == 2 else z

    rec, cf = check(f, ember.randn(3, 4), ember.randn(3, 4))
    targets = {n.target for n in rec.graphs[0].graph.nodes if n.op == "call_function"}
    assert operator.add in targets and ember.relu in targets and F.gelu in targets
    kinds = {g.kind for g in cf.guards}
    assert GuardKind.TENSOR_MATCH in kinds and GuardKind.GRAD_MODE in kinds


def test_shape_control_flow_and_loops():
    def f(x, n):
        if x.shape[0] > 2:
            x = x * 2
        else:
            x = x - 1
        for i in range(n):
            x = x + i
        while n > 0:
            n -= 1
            x = x.cos()
        return x

    check(f, ember.randn(3), 3)


def test_closures_and_nested_functions():
    scale = 3.0

    def outer(x):
        k = 2

        def inner(y):
            return y * k + scale

        return inner(x) + inner(x * 2)

    check(outer, ember.randn(4))


def helper(x, *args, power=2, **kw):
    return x**power + sum(args) + kw.get("b", 0)


def test_calls_args_kwargs_partial():
    def f(x):
        p = functools.partial(helper, power=3)
        return helper(x, 1, 2, b=5), p(x), helper(*(x,), **{"power": 1})

    check(f, ember.randn(3))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("offset", ember.ones(4))
        self.scale = 0.5

    def forward(self, x):
        return F.relu(self.fc(x)) * self.scale + self.offset


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Sequential(nn.Linear(4, 2), nn.Tanh())

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def test_module_parameters_are_inputs():
    net = Net()
    x = ember.randn(2, 4)
    rec, cf = check(net.forward.__func__, net, x)
    placeholders = [n for n in rec.graphs[0].graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == 1 + 2 * 3 + 2  # x, per block weight/bias/buffer, head weight/bias
    assert not any(n.op == "get_attr" for n in rec.graphs[0].graph.nodes)
    tensor_guards = [g for g in cf.guards if g.kind is GuardKind.TENSOR_MATCH]
    assert any("blocks" in g.source.name() for g in tensor_guards)
    assert not any(g.kind is GuardKind.ID_MATCH and g.source.name() == "L['self']" for g in cf.guards)


def test_containers():
    def f(xs, d):
        out = []
        for i, x in enumerate(xs):
            out.append(x * i)
        total = sum(out[1:], d["bias"])
        keys = sorted(d.keys())
        pairs = dict(zip(keys, [1, 2], strict=False))
        s = {1, 2} | {3}
        return total, out[-1], pairs, len(s), next(reversed(xs)), min(3, 4), max([1, 5, 2])

    check(f, [ember.randn(2), ember.randn(2), ember.randn(2)], {"bias": ember.ones(2), "a": 1})


Point = collections.namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Pair:
    a: object
    b: object

    def total(self):
        return self.a + self.b


def test_namedtuple_and_dataclass():
    def f(x):
        p = Point(x, x * 2)
        q = Pair(p.x, p.y)
        return q.total() + p[1], p

    check(f, ember.randn(3))


class Base:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return x * self.k


class Child(Base):
    def apply(self, x):
        return super().apply(x) + 1


def test_methods_super_and_new_objects():
    obj = Child(3)

    def f(x, o):
        return o.apply(x), Child(2).apply(x), isinstance(o, Base)

    check(f, ember.randn(2), obj)


def gen(x, n):
    for i in range(n):
        yield x * i


def test_generators_and_comprehensions():
    def f(x):
        a = [x * i for i in range(3) if i != 1]
        b = {i: x + i for i in range(2)}
        c = list(gen(x, 3))
        return a, b, c, sum(v.sum() for v in a)

    check(f, ember.randn(2))


def test_grad_mode_block():
    def f(x):
        with ember.no_grad():
            y = x * 2
        return y + x, y.requires_grad

    x = ember.randn(3, requires_grad=True)
    expected = f(x)
    got, _cf = compile_and_run(f, x)
    assert same(got[0], expected[0]) and got[1] == expected[1]
    assert ember.is_grad_enabled()


def test_no_tensor_ops_is_not_compiled():
    def f(a, b):
        return a + b

    got, cf = compile_and_run(f, 1, 2)
    assert got == 3 and cf is None


def test_constant_guards():
    def f(x, n, flag):
        return x * n if flag else x

    _, cf = compile_and_run(f, ember.randn(2), 3, True)
    values = {(g.source.name() if g.source else None, g.kind): g.value for g in cf.guards}
    assert values[("L['n']", GuardKind.EQUALS_MATCH)] == 3
    assert values[("L['flag']", GuardKind.EQUALS_MATCH)] is True


def test_fullgraph_raises_at_break():
    def f(x):
        y = x + 1
        print("hi")
        return y

    with pytest.raises(Unsupported, match="print"):
        compile_and_run(f, ember.randn(2), fullgraph=True)


def test_match_statement():
    def f(x, spec):
        match spec:
            case {"kind": "scale", "by": k}:
                y = x * k
            case [a, b]:
                y = x + a + b
            case Point(x=px):
                y = x - px
            case _:
                y = x
        return y, len(spec)

    x = ember.ones(2)
    for spec in ({"kind": "scale", "by": 3}, [1, 2], Point(4, 5)):
        check(f, x, spec)


def test_gradients_of_parameters_are_inputs():
    def sgd(params, lr):
        with ember.no_grad():
            for p in params:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-lr)

    lin = nn.Linear(3, 2)
    lin(ember.randn(4, 3)).sum().backward()
    params = list(lin.parameters())
    expected = [p.detach() - 0.1 * p.grad for p in params]
    rec = Recorder()
    compile_and_run(sgd, params, 0.1, backend=rec)
    assert rec.frame_count == 1
    assert all(same(p.detach(), e) for p, e in zip(params, expected, strict=True))
