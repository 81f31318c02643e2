"""Choosing the Triton code generator for CPU tensors (``config.cpu_backend``), where it cannot run.

The kernels themselves are tested under Triton's interpreter (``test_triton_codegen.py``); these
tests need neither Triton nor the interpreter.
"""

from __future__ import annotations

import pytest

import ember
from ember.inductor import config
from ember.inductor.codegen_triton import group_kernel
from ember.inductor.runtime.triton_launch import candidates
from ember.inductor.scheduler import FusedGroup, remove_dead, schedule


@pytest.fixture
def backend(monkeypatch):
    def use(name: str) -> None:
        monkeypatch.setattr(config, "cpu_backend", name)

    yield use
    ember.compiler.reset()


def test_without_the_interpreter_the_error_says_what_to_set(backend, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    backend("triton")
    fn = ember.compile(lambda x: x * 2 + 1)
    with pytest.raises(RuntimeError, match=r"TRITON_INTERPRET=1|needs Triton, which is not installed"):
        fn(ember.randn(4))


def test_an_unknown_backend_is_refused(backend):
    backend("halide")
    fn = ember.compile(lambda x: x * 2 + 1)
    with pytest.raises(ValueError, match='cpu_backend must be "cpp" or "triton", got \'halide\''):
        fn(ember.randn(4))


def test_block_candidates_fit_the_sizes():
    gpu = lambda rows, inner: candidates(rows, inner, interpreter=False)  # noqa: E731
    assert gpu(1, 1) == [(1, 1, 4)]
    assert gpu(5, 1)[0] == (8, 1, 4)
    for x, r, _ in gpu(3, 300):
        assert x <= 4 and r <= 512
    assert all(r == 1 for _, r, _ in gpu(10_000, 1))
    # under the interpreter, one large block (its cost is per program, not per element)
    assert candidates(10_000, 300, interpreter=True) == [(64, 512, 4)]


def test_generated_source_names_its_nodes_and_guards_its_rows():
    from ember.fx.experimental.proxy_tensor import make_fx
    from ember.inductor.graph import GraphLowering

    gm = make_fx(lambda x: ember.softmax(x, -1))(ember.randn(3, 10))
    graph = GraphLowering(gm, [ember.randn(3, 10)])
    graph.run()
    live = remove_dead([b for b in graph.buffers if b.name not in {i.name for i in graph.inputs}], {"buf2"})
    (group,) = [s for s in schedule(live) if isinstance(s, FusedGroup)]
    spec = group_kernel(group, "kernel0", graph.name_to_buffer, {i.name for i in graph.inputs})
    assert spec.source.startswith("@triton.jit\ndef kernel0(")
    assert "xmask = xr < 3" in spec.source and "tl.reduce(" in spec.source and "tl.sum(" in spec.source
    assert spec.rows == 3 and spec.inner == 10 and spec.outputs
