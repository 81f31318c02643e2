"""Every lowered op, compiled against eager: values, dtypes and output strides.

All the ops go into a few graphs compiled once per module, so the C++ compiler runs a few times only.
"""

from __future__ import annotations

import pytest
from inductor_testing import assert_same, compile_with_inductor

import ember
import ember.nn.functional as F

UNARY = ["abs", "neg", "exp", "expm1", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "reciprocal",
         "floor", "ceil", "trunc", "round", "sign", "relu", "erf", "atan", "log", "log2"]  # fmt: skip


def pointwise_graph(x, y, i, m):
    out = {
        name: getattr(ember, name)(x.abs() + 0.5 if name in ("sqrt", "rsqrt", "log", "log2") else x) for name in UNARY
    }
    out |= {
        "add": x + y, "sub": x - y * 2, "mul": x * y, "div": x / y, "add_alpha": ember.add(x, y, alpha=3),
        "maximum": ember.maximum(x, y), "minimum": ember.minimum(x, y), "pow": x.abs() ** 2.5,
        "eq": x == y, "lt": x < 0.25, "ge": i >= 3, "ne": i != 2, "logical_not": ~m, "and": m & (i > 2),
        "where": ember.where(m, x, y), "clamp": x.clamp(-0.5, 0.5), "clamp_min": x.clamp(min=0.1),
        "int_add": i + 3, "int_mul": i * i, "int_to_float": i * 0.5, "to_int": x.to(ember.int64),
        "to_f64": x.to(ember.float64), "bool_to_f": m.float(), "full": ember.full((4, 8), 2.5) + x,
        "gelu": F.gelu(x), "gelu_tanh": F.gelu(x, approximate="tanh"), "isnan": ember.isnan(x / x),
        "scalar_add": x + 1, "full_like": ember.full_like(x, 7.0) * y,
        "arange": ember.arange(8) + i, "arange_float": ember.arange(0.5, 4.5, 0.5) * x, "remainder": ember.remainder(i, 3), "bcast_col": x + y[:, :1],
    }  # fmt: skip
    return out


def view_graph(x, z):
    return {
        "view": x.view(32) * 2, "reshape": x.reshape(2, 16) + 1, "view_merge": z.view(6, 4) + 0,
        "view_split": z.reshape(2, 3, 2, 2) + 0, "permute": z.permute(2, 0, 1) + 0, "t": x.t() * 1,
        "transpose": z.transpose(0, 2) * 1, "expand": x[:1].expand(4, 8) + 0, "slice": x[1:3] + 0,
        "slice_step": x[:, ::2] + 0, "select": x[2] + 0, "select_neg": z[:, -1] + 0,
        "unsqueeze": x.unsqueeze(1) + 0, "squeeze": x[:, :1].squeeze(1) + 0, "permute_out": x.permute(1, 0),
        "chain": z.permute(1, 0, 2).reshape(3, 8)[1:, ::3] * 2,
    }  # fmt: skip


def reduction_graph(x, z, i):
    return {
        "sum": x.sum(1), "sum_keep": x.sum(0, keepdim=True), "sum_all": x.sum(), "sum_3d": z.sum((0, 2)),
        "mean": x.mean(1), "mean_all": z.mean(), "amax": x.amax(1), "amin": z.amin(0),
        "max_all": x.amax((0, 1)), "max_full": z.max(), "prod_all": x[:2].prod(), "var": x.var(1), "var_unbiased_all": z.var(), "var_keep": x.var(0, keepdim=True),
        "std": x.std(1), "argmax": x.argmax(1), "argmin": z.argmin(2), "prod": x.prod(1), "int_sum": i.sum(1),
        "softmax": ember.softmax(x, -1), "log_softmax_like": x - x.exp().sum(-1, keepdim=True).log(),
        "softmax_dim0": ember.softmax(z, 0), "log_softmax": ember.log_softmax(x, -1), "layer_norm": F.layer_norm(x, (8,)),
    }  # fmt: skip


@pytest.fixture(scope="module")
def inputs():
    ember.manual_seed(0)
    x, y = ember.randn(4, 8), ember.randn(4, 8) + 3
    i = ember.randint(0, 6, (4, 8))
    m = ember.randn(4, 8) > 0
    z = ember.randn(2, 3, 4)
    return x, y, i, m, z


def _compiled(fn, args):
    keys = list(fn(*args))
    compiled, rec = compile_with_inductor(lambda *a: tuple(fn(*a).values()))
    got = dict(zip(keys, compiled(*args), strict=True))
    return got, fn(*args), rec.graphs[0]


@pytest.fixture(scope="module")
def pointwise(inputs):
    x, y, i, m, _ = inputs
    return _compiled(pointwise_graph, (x, y, i, m))


@pytest.fixture(scope="module")
def views(inputs):
    x, _, _, _, z = inputs
    return _compiled(view_graph, (x, z))


@pytest.fixture(scope="module")
def reductions(inputs):
    x, _, i, _, z = inputs
    return _compiled(reduction_graph, (x, z, i))


def _keys(fn):
    x, y = ember.randn(4, 8), ember.randn(4, 8)
    z = ember.randn(2, 3, 4)
    i, m = ember.randint(0, 6, (4, 8)), x > 0
    if fn is pointwise_graph:
        return list(fn(x, y, i, m))
    if fn is view_graph:
        return list(fn(x, z))
    return list(fn(x, z, i))


@pytest.mark.parametrize("name", _keys(pointwise_graph))
def test_pointwise(pointwise, name):
    got, want, _ = pointwise
    assert_same(got[name], want[name], rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", _keys(view_graph))
def test_views(views, name):
    got, want, _ = views
    assert_same(got[name], want[name])


@pytest.mark.parametrize("name", _keys(reduction_graph))
def test_reductions(reductions, name):
    got, want, _ = reductions
    assert_same(got[name], want[name], rtol=1e-5, atol=1e-5)


def test_var_is_a_welford_reduction(reductions):
    kernels = reductions[2].source.split('extern "C"', 1)[1]
    assert "ember_welford<float>" in kernels


def test_no_fallbacks_and_the_ops_were_lowered(pointwise, views, reductions):
    lowered = set()
    for _, _, graph in (pointwise, views, reductions):
        assert graph.fallbacks == []
        lowered |= {str(op) for op in graph.lowered}
    for op in ("aten.add.Tensor", "aten.where.self", "aten.clamp.default", "aten.permute.default",
               "aten.expand.default", "aten.slice.Tensor", "aten.select.int", "aten.unsqueeze.default",
               "aten.sum.dim_IntList", "aten.amax.default", "aten.var.correction", "aten._softmax.default",
               "aten.native_layer_norm.default", "aten.view.default", "aten._log_softmax.default",
               "aten.arange.start_step", "aten.full_like.default"):  # fmt: skip
        assert op in lowered, op
