"""Scans compiled against eager on the OpInfo samples of the core's tables: cumsum and cumprod become
generated C++ scan kernels (a sequential loop per row, the rows in parallel); cummax, cummin and
logcumsumexp are compositions of other ops in the core, so their graphs hold those ops."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from inductor_testing import assert_same, compile_with_inductor

import ember
from ember.inductor.lowering_scan import GeneratedKernel

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tensor" / "tests"))
import numpy as np
import opinfo_everyday
import opinfo_reductions
from opinfo import T, build

DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool")


def _op(table, name):
    return next(op for op in table.OPS if op.name == name)


def _samples(op):
    rng = np.random.default_rng(0)
    out = []
    for dtype in op.dtypes:
        if dtype in DTYPES:
            out += [(dtype, s) for s in op.samples(dtype, rng)]
    return out


def _run_all(op):
    """All of ``op``'s samples in one compiled graph; returns (compiled results, eager results, graph)."""
    cases = _samples(op)
    specs = [(s.args, s.kwargs) for _, s in cases]
    flat: list = []
    for args, _ in specs:
        flat += [a for a in args if isinstance(a, T)]
    tensors = [build(t, ember) for t in flat]

    def fn(*ts):
        it = iter(ts)
        outs = []
        for args, kwargs in specs:
            real = [next(it) if isinstance(a, T) else a for a in args]
            result = op.call(ember, *real, **kwargs)
            outs += list(result) if isinstance(result, tuple) else [result]
        return outs

    compiled, rec = compile_with_inductor(fn)
    return compiled(*tensors), fn(*tensors), rec


@pytest.mark.parametrize(
    "table, name",
    [(opinfo_reductions, "cumsum"), (opinfo_reductions, "cumprod"), (opinfo_everyday, "cummax"),
     (opinfo_everyday, "cummin"), (opinfo_everyday, "logcumsumexp")],
    ids=lambda v: v if isinstance(v, str) else "",
)  # fmt: skip
def test_scan_samples_match_eager(table, name):
    op = _op(table, name)
    got, want, rec = _run_all(op)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        rtol = 2e-2 if w.dtype in (ember.float16, ember.bfloat16) else 1e-5
        assert_same(g, w, rtol=rtol, atol=rtol)
    if name in ("cumsum", "cumprod"):
        graph = rec.graphs[0]
        assert not [f for f in graph.fallbacks if name in f[0]]
        assert any(isinstance(getattr(getattr(s, "buf", None), "op", None), GeneratedKernel) for s in graph.steps)


def test_scan_reads_a_fused_producer_and_runs_each_dim():
    x = ember.randn(4, 5, 6)

    def fn(t):
        return [(t * 2 + 1).cumsum(d) for d in range(3)] + [t.exp().cumprod(-1), (t > 0).cumsum(1)]

    compiled, rec = compile_with_inductor(fn)
    for g, w in zip(compiled(x), fn(x), strict=True):
        assert_same(g, w, rtol=1e-5, atol=1e-5)
    source = rec.graphs[0].source
    assert source.count('extern "C" int scan_') == 5
    assert "std::exp" in source  # the exp is computed inside the scan's loop, not stored first
    assert rec.graphs[0].fallbacks == []


def test_cumsum_of_ints_and_bools_is_int64_and_parallel_rows_are_independent():
    from ember.inductor import config

    x = ember.randint(-5, 5, (64, 600), dtype=ember.int32)
    old = config.cpp.parallel_threshold
    config.cpp.parallel_threshold = 1  # the row loop parallel even on small inputs
    try:
        compiled, rec = compile_with_inductor(lambda t: (t.cumsum(1), (t > 0).cumsum(0), t.cumprod(0)))
        got = compiled(x)
    finally:
        config.cpp.parallel_threshold = old
    want = (x.cumsum(1), (x > 0).cumsum(0), x.cumprod(0))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        assert_same(g, w)
    assert got[0].dtype == ember.int64 and got[1].dtype == ember.int64
    assert "ember_parallel(" in rec.graphs[0].source


def test_scan_backward_compiles_and_matches_eager():
    x = ember.randn(3, 7, requires_grad=True)
    compiled, _ = compile_with_inductor(lambda t: (t.cumsum(1) * t.sin()).sum())
    compiled(x).backward()
    gx = x.grad.clone()
    x.grad = None
    (x.cumsum(1) * x.sin()).sum().backward()
    assert_same(gx, x.grad, rtol=1e-5, atol=1e-5)


# cummax, cummin and logcumsumexp have scan lowerings for graphs that hold them as single ops (the core
# builds them from other ops today); these graphs are made by hand, with a stand-in op for each.


def standin_cummax(x, dim):
    return ember.cummax(x, dim)


def standin_cummin(x, dim):
    return ember.cummin(x, dim)


def standin_logcumsumexp(x, dim):
    return ember.logcumsumexp(x, dim)


def _one_op_graph(target, xs, dims):
    """``target(x, dim)`` for each input and dim, as nodes of one graph; and the eager results."""
    import operator

    from ember.fx.graph import Graph
    from ember.fx.graph_module import GraphModule

    g = Graph()
    outs, wants = [], []
    phs = []
    for k, x in enumerate(xs):
        ph = g.placeholder(f"x{k}")
        ph.meta["val"] = x
        phs.append(ph)
    for ph, x in zip(phs, xs, strict=True):
        for dim in dims:
            node = g.call_function(target, (ph, dim))
            val = target(x, dim)
            node.meta["val"] = tuple(val) if isinstance(val, tuple) else val
            for i, v in enumerate(val if isinstance(val, tuple) else [val]):
                item = g.call_function(operator.getitem, (node, i)) if isinstance(val, tuple) else node
                item.meta["val"] = v
                outs.append(item)
                wants.append(v)
    g.output(tuple(outs))
    return GraphModule({}, g), wants


@pytest.mark.parametrize("name", ["cummax", "cummin", "logcumsumexp"])
def test_scan_kinds_for_single_op_graphs(name, monkeypatch):
    from ember.inductor import lowering, lowering_scan
    from ember.inductor.compile_fx import compile_fx_inner

    target = globals()[f"standin_{name}"]
    monkeypatch.setitem(lowering.LOWERINGS, target, getattr(lowering_scan, name))
    rng = np.random.default_rng(1)
    xs = []
    for dtype in ("float32", "float64") if name == "logcumsumexp" else ("float32", "float64", "int64"):
        values = rng.integers(-3, 4, size=(4, 5, 6)).astype(dtype)  # ties, for the index rule
        if dtype != "int64":
            values[1, 2, 3] = values[1, 2, 5] = np.nan
            values[2, 0, 1] = -np.inf
        xs.append(ember.tensor(values))
    gm, want = _one_op_graph(target, xs, (0, 1, -1))
    compiled = compile_fx_inner(gm, xs)
    got = compiled(xs)
    assert compiled.fallbacks == []
    assert compiled.source.count('extern "C" int scan_') == len(xs) * 3
    for g, w in zip(got, want, strict=True):
        assert_same(g, w, rtol=1e-6, atol=1e-6)
