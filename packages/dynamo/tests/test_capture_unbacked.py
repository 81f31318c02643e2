"""``capture_scalar_outputs`` and ``capture_dynamic_output_shape_ops``: ``item()`` and data-dependent
sizes stay in the graph as unbacked symbols; a branch on one still breaks the graph. Values are
checked against eager; graph counts against ``torch.compile`` with the same options (skipped
without PyTorch)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.dynamo.testing as etesting
from ember.dynamo import config
from ember.dynamo.exc import Unsupported


def scale_by_sum(lib, x):
    return x * x.sum().item() + 1


def int_item(lib, x):
    n = (x > 0).sum().item()
    return x * n - n


def return_item(lib, x):
    return x.max().item()


def mask_index(lib, x):
    return x[x > 0] * 2


def nonzero_rows(lib, x):
    idx = lib.nonzero(x > 0)
    return idx.float() + 1, idx.shape[0] * 2


def masked_select_sum(lib, x):
    return lib.masked_select(x, x < 0).sum() + x.mean()


def unique_plus(lib, x):
    return lib.unique(x.round()) + 1


def branch_on_item(lib, x):
    if x.sum().item() > 0:
        return x + 1
    return x - 1


def branch_on_size(lib, x):
    y = x[x > 0]
    if y.shape[0] > 2:
        return y.sum()
    return y.mean()


SCALAR = [scale_by_sum, int_item, return_item]
DYNAMIC = [mask_index, nonzero_rows, masked_select_sum, unique_plus]
BRANCHES = [branch_on_item, branch_on_size]


@pytest.fixture
def capture(monkeypatch):
    monkeypatch.setattr(config, "capture_scalar_outputs", True)
    monkeypatch.setattr(config, "capture_dynamic_output_shape_ops", True)
    ember._dynamo.reset()
    yield
    ember._dynamo.reset()


def _data(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(7).astype(np.float32) * 3


def _assert_same(got, want) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)
    elif isinstance(want, ember.Tensor):
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    else:
        assert type(got) is type(want) and got == pytest.approx(want)


def _graphs(fn, lib_args, backend="eager", fullgraph=False):
    counter = etesting.CompileCounter()
    compiled = ember.compile(lambda x: fn(ember, x), backend=counter, fullgraph=fullgraph)
    out = compiled(*lib_args)
    return counter.frame_count, out


@pytest.mark.parametrize("fn", SCALAR + DYNAMIC + BRANCHES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("backend", ["eager", "counter"])
def test_values_equal_eager(capture, fn, backend):
    for seed in (0, 1, 2):
        x = ember.tensor(_data(seed))
        be = etesting.CompileCounter() if backend == "counter" else backend
        _assert_same(ember.compile(lambda x: fn(ember, x), backend=be)(x), fn(ember, x))


@pytest.mark.parametrize("fn", SCALAR + DYNAMIC, ids=lambda f: f.__name__)
def test_one_graph_and_fullgraph(capture, fn):
    x = ember.tensor(_data())
    count, out = _graphs(fn, [x], fullgraph=True)
    assert count == 1
    _assert_same(out, fn(ember, x))


@pytest.mark.parametrize("fn", BRANCHES, ids=lambda f: f.__name__)
def test_branch_on_unbacked_breaks(capture, fn):
    x = ember.tensor(_data())
    explained = ember._dynamo.explain(lambda x: fn(ember, x))(x)
    assert explained.graph_break_count >= 1
    assert "data-dependent" in explained.break_reasons[0].reason
    with pytest.raises(Unsupported, match="data-dependent"):
        ember.compile(lambda x: fn(ember, x), backend="eager", fullgraph=True)(x)


@pytest.mark.parametrize("fn", SCALAR + DYNAMIC, ids=lambda f: f.__name__)
def test_defaults_still_break(fn):
    ember._dynamo.reset()
    assert not config.capture_scalar_outputs and not config.capture_dynamic_output_shape_ops
    x = ember.tensor(_data())
    explained = ember._dynamo.explain(lambda x: fn(ember, x))(x)
    assert explained.graph_break_count >= 1
    with pytest.raises(Unsupported):
        ember.compile(lambda x: fn(ember, x), backend="eager", fullgraph=True)(x)
    _assert_same(ember.compile(lambda x: fn(ember, x), backend="eager")(x), fn(ember, x))


@pytest.mark.parametrize("fn", [scale_by_sum, mask_index], ids=lambda f: f.__name__)
def test_aot_eager_refuses_unbacked(capture, fn):
    x = ember.tensor(_data())
    with pytest.raises(Exception, match="unbacked"):
        ember.compile(lambda x: fn(ember, x), backend="aot_eager")(x)


@pytest.mark.parametrize("fn", SCALAR + DYNAMIC + BRANCHES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("on", [True, False])
def test_graph_count_matches_torch(fn, on, monkeypatch):
    torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
    from torch._dynamo.testing import CompileCounter

    monkeypatch.setattr(config, "capture_scalar_outputs", on)
    monkeypatch.setattr(config, "capture_dynamic_output_shape_ops", on)
    data = _data()
    torch._dynamo.reset()
    counter = CompileCounter()
    with torch._dynamo.config.patch(capture_scalar_outputs=on, capture_dynamic_output_shape_ops=on):
        want = torch.compile(lambda x: fn(torch, x), backend=counter)(torch.tensor(data))
    torch._dynamo.reset()
    ember._dynamo.reset()
    count, got = _graphs(fn, [ember.tensor(data)])
    ember._dynamo.reset()
    assert count == counter.frame_count
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g.numpy() if hasattr(g, "numpy") else g), np.asarray(w), rtol=1e-6)
