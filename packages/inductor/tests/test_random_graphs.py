"""Random graphs of pointwise ops, views and reductions, compiled against eager (hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inductor_testing import assert_same, compile_with_inductor

import ember

UNARY = [lambda t: t.exp() * 0.1, lambda t: t.tanh(), lambda t: t.abs().sqrt(), lambda t: t.sigmoid(), lambda t: -t]
BINARY = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: ember.maximum(a, b), lambda a, b: a - b * 0.5]
VIEWS = [
    lambda t: t.t(),
    lambda t: t.t().reshape(36).reshape(6, 6),
    lambda t: t.reshape(3, 2, 6).permute(1, 0, 2).reshape(6, 6),
    lambda t: t[:, :1].expand(6, 6),
]
REDUCE = [
    lambda t: t.sum(-1, keepdim=True),
    lambda t: t.amax(0, keepdim=True),
    lambda t: t.mean(-1, keepdim=True),
    lambda t: t.var(-1, keepdim=True),
    lambda t: ember.softmax(t, -1),
]

step = st.tuples(st.sampled_from(["unary", "binary", "view", "reduce"]), st.integers(0, 100), st.integers(0, 100))


def _build(program):
    def fn(x, y):
        vals = [x, y]
        for kind, a, b in program:
            u = vals[a % len(vals)]
            if kind == "unary":
                v = UNARY[b % len(UNARY)](u)
            elif kind == "binary":
                w = vals[b % len(vals)]
                v = BINARY[a % len(BINARY)](u, w if w.shape == u.shape else w.t() if w.t().shape == u.shape else u)
            elif kind == "view":
                v = VIEWS[b % len(VIEWS)](u)
            else:
                v = REDUCE[b % len(REDUCE)](u)
                v = v + u if v.shape[0] == u.shape[0] or v.shape[0] == 1 else v
            vals.append(v)
        return tuple(vals[2:]) or (x + y,)

    return fn


@settings(
    max_examples=int(__import__("os").environ.get("EMBER_RANDOM_GRAPHS", "6")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(step, min_size=1, max_size=6))
def test_random_graph_matches_eager(program):
    ember.manual_seed(0)
    x, y = ember.randn(6, 6), ember.randn(6, 6)
    fn = _build(program)
    compiled, _ = compile_with_inductor(fn)
    for got, want in zip(compiled(x, y), fn(x, y), strict=True):
        assert_same(got, want, rtol=1e-4, atol=1e-5, check_strides=False)
