"""The loops of one row in a fused group: a costly value two of them compute is computed once (a row
buffer, ``codegen_cpp_rows.py``), and what does not change along the innermost loop is computed once
per row, before it. Results against eager, and the same bits on any thread count."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from inductor_testing import assert_same, compile_with_inductor

import ember
import ember.nn.functional as F
from ember.inductor import config
from ember.inductor.codegen_cpp_rows import plan_rows
from ember.inductor.ir import ComputedBuffer, Layout, contiguous_strides
from ember.inductor.virtualized import ops


def _kernels(graph) -> str:
    """The kernels of a compiled graph, without the prelude."""
    source = graph.source
    return source[source.index('extern "C" int ') :]


@pytest.fixture
def threads():
    before = ember.get_num_threads()
    yield ember.set_num_threads
    ember.set_num_threads(before)


def _handwritten_softmax(t):
    e = (t - t.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


@pytest.mark.parametrize(
    "fn",
    [lambda t: ember.softmax(t, -1), _handwritten_softmax],
    ids=["softmax", "handwritten"],
)
def test_the_exponential_is_computed_once_per_element(fn):
    ember.manual_seed(0)
    x = ember.randn(37, 300) * 4
    compiled, rec = compile_with_inductor(fn)
    assert_same(compiled(x), ember.softmax(x, -1), atol=1e-6)
    kernels = _kernels(rec.graphs[0])
    assert rec.graphs[0].kernel_count == 1
    assert kernels.count("std::exp(") == 1  # in the sum's loop, stored for the loop that divides
    assert "ember_row0[" in kernels


def test_the_row_buffer_reads_back_what_each_row_stored():
    # rows of three dims, one of them of size 1, and values that overflow exp without the max
    ember.manual_seed(1)
    x = ember.randn(3, 5, 1, 200) * 30
    x[1, 2, 0, 7] = float("inf")
    x[2, 0, 0, :] = float("-inf")
    compiled, rec = compile_with_inductor(lambda t: ember.softmax(t, -1))
    assert_same(compiled(x), ember.softmax(x, -1), atol=1e-6)
    assert "ember_row0[" in _kernels(rec.graphs[0])


@pytest.mark.parametrize("dtype", [ember.float64, ember.bfloat16])
def test_other_dtypes(dtype):
    ember.manual_seed(2)
    x = ember.randn(20, 130).to(dtype)
    compiled, rec = compile_with_inductor(lambda t: ember.softmax(t, -1))
    tol = 1e-12 if dtype == ember.float64 else 1e-2
    assert_same(compiled(x), ember.softmax(x, -1), rtol=tol, atol=tol)
    kernels = _kernels(rec.graphs[0])
    assert ("double ember_row0[" if dtype == ember.float64 else "float ember_row0[") in kernels


def test_softmax_over_the_first_dim_and_over_a_dynamic_batch():
    ember.manual_seed(3)
    x = ember.randn(70, 33)
    compiled, _ = compile_with_inductor(lambda t: ember.softmax(t, 0))
    assert_same(compiled(x), ember.softmax(x, 0), atol=1e-6)
    fn = ember.compile(lambda t: ember.softmax(t * 2, -1), backend="inductor", dynamic=True)
    for n in (3, 17, 40):
        y = ember.randn(n, 96)
        assert_same(fn(y), ember.softmax(y * 2, -1), atol=1e-6)


def test_rows_longer_than_the_budget_compute_the_value_again(monkeypatch):
    monkeypatch.setattr(config.cpp, "max_row_buffer_bytes", 256)
    ember.manual_seed(4)
    x = ember.randn(16, 65)  # 260 bytes a row
    compiled, rec = compile_with_inductor(lambda t: ember.softmax(t, -1))
    assert_same(compiled(x), ember.softmax(x, -1), atol=1e-6)
    kernels = _kernels(rec.graphs[0])
    assert "ember_row" not in kernels and kernels.count("std::exp(") == 2


@pytest.mark.parametrize(
    "fn",
    [
        lambda t, w, b: ember.softmax(t, -1),
        lambda t, w, b: ember.log_softmax(t, -1),
        lambda t, w, b: F.layer_norm(t, (t.shape[-1],), w, b),
        lambda t, w, b: _handwritten_softmax(t),
    ],
    ids=["softmax", "log_softmax", "layer_norm", "handwritten"],
)
def test_the_same_bits_on_any_thread_count(threads, fn):
    ember.manual_seed(5)
    x, w, b = ember.randn(600, 300), ember.randn(300), ember.randn(300)
    compiled = ember.compile(fn, backend="inductor")
    outs = []
    for n in (1, 2, 3):
        threads(n)
        outs.append(compiled(x, w, b).numpy())
    assert all(np.array_equal(outs[0], o) for o in outs[1:])


@pytest.mark.parametrize(
    ("fn", "factor"),
    [
        (lambda t, w, b: F.layer_norm(t, (t.shape[-1],), w, b), "std::sqrt("),
        (lambda t, w, b: ember.log_softmax(t, -1), "std::log("),
    ],
    ids=["layer_norm", "log_softmax"],
)
def test_a_row_factor_is_computed_before_the_innermost_loop(fn, factor):
    ember.manual_seed(6)
    x, w, b = ember.randn(40, 64), ember.randn(64), ember.randn(64)
    compiled, rec = compile_with_inductor(fn)
    assert_same(compiled(x, w, b), fn(x, w, b), atol=1e-5)
    kernels = _kernels(rec.graphs[0])
    last_loop = kernels.rindex("#pragma omp simd")
    assert kernels.count(factor) == 1 and kernels.index(factor) < last_loop


@dataclass
class _Node:
    """What ``plan_rows`` reads of a scheduled node."""

    buffer: ComputedBuffer
    split: int
    writes: str


def _node(name: str, body, size, reduction_size=(), reduction_type=None, writes=None) -> _Node:
    buf = ComputedBuffer(name, ember.float32, Layout(size, contiguous_strides(size)), body, reduction_size,
                         reduction_type)  # fmt: skip
    return _Node(buf, len(size) if reduction_type else 1, writes or name)


def test_a_value_is_not_shared_across_a_write_of_what_it_reads():
    def exp_x(i, j):
        return ops.exp(ops.load("x", i * 8 + j))

    total = _node("s", lambda i, r: exp_x(i[0], r[0]), (4, 1), (8,), "sum")
    out = _node("o", lambda i, r: ops.truediv(exp_x(i[0], i[1]), ops.load("s", i[0])), (4, 8))
    update = _node("u", lambda i, r: ops.constant(0.0, ember.float32), (4, 8), writes="x")
    arg_of = {"x": "a0", "s": "a1", "o": "a2", "u": "a3"}
    dtype_of = dict.fromkeys(arg_of, ember.float32)
    plan = plan_rows([total, out], arg_of, dtype_of)
    assert plan is not None and list(plan.stores) == [0] and list(plan.loads) == [1]
    assert plan.stores[0] == plan.loads[1] and plan.decls == ["alignas(64) float ember_row0[8];"]
    # x written in place between the sum's loop and the output's: the output computes exp again
    assert plan_rows([total, update, out], arg_of, dtype_of) is None
