"""The user-facing API of ember.compile that needs no capture: decorator forms, errors, the backend
registry, OptimizedModule and Module.compile, the test backends, explain's report, the log names."""

from __future__ import annotations

import logging

import pytest

import ember
import ember._dynamo
import ember._dynamo.config
import ember.compiler
import ember.fx
from ember.dynamo import config
from ember.dynamo.backends import InvalidBackend, list_backends, lookup_backend, register_backend
from ember.dynamo.eval_frame import OptimizedModule
from ember.dynamo.exc import GraphBreak, UserFrame
from ember.dynamo.explain import ExplainOutput
from ember.dynamo.testing import CompileCounter, CompileCounterWithBackend, EagerAndRecordGraphs


def f(x):
    return x + 1


def test_decorator_forms(monkeypatch):
    from ember.dynamo.backends import registry

    monkeypatch.setitem(registry._BACKENDS, "inductor", lambda gm, inputs: gm.forward)  # the default backend
    plain = ember.compile(f, backend="eager")
    assert plain is not f and plain.__name__ == "f" and plain.__wrapped__ is f

    @ember.compile
    def g(x):
        return x

    assert g.__name__ == "g" and g._torchdynamo_orig_callable.__name__ == "g"

    @ember.compile(backend="eager", fullgraph=True, dynamic=True)
    def h(x):
        return x

    assert h.__name__ == "h"
    assert ember.compile(f, disable=True) is f


def test_inductor_names_the_available_backends(monkeypatch):
    from ember.dynamo.backends import registry

    found = registry._entry_points()
    # As where the code generator (ember-inductor) is not installed.
    monkeypatch.setattr(registry, "_entry_points", lambda: {k: v for k, v in found.items() if k != "inductor"})
    monkeypatch.delitem(registry._BACKENDS, "inductor", raising=False)
    with pytest.raises(RuntimeError, match="ember-inductor") as info:
        ember.compile(f)
    for name in ("eager", "aot_eager", "aot_eager_decomp_partition"):
        assert name in str(info.value)
    with pytest.raises(InvalidBackend, match="unknown compile backend 'nope'"):
        ember.compile(f, backend="nope")


def test_mode_and_options_checks():
    with pytest.raises(RuntimeError, match="Either mode or options"):
        ember.compile(f, backend="eager", mode="default", options={})
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        ember.compile(f, backend="eager", mode="fast")
    ember.compile(f, backend="eager", mode="max-autotune")
    ember.compile(f, backend="eager", options={"trace.enabled": True})
    with pytest.raises(AssertionError, match="callable"):
        ember.compile(5)


def test_mode_and_options_reach_the_backend():
    seen = {}

    def backend(gm, inputs, **kwargs):
        seen.update(kwargs)
        return gm.forward

    from ember.dynamo.eval_frame import _resolve_backend

    gm = ember.fx.symbolic_trace(f)
    _resolve_backend(backend, "max-autotune", None)(gm, [ember.ones(2)])
    assert seen == {"mode": "max-autotune"}
    assert _resolve_backend(backend, None, None) is backend


def test_one_registry_with_entry_points_and_callables():
    from ember.aot import backends as aot_backends

    assert {"eager", "aot_eager", "aot_eager_decomp_partition"} <= set(list_backends())
    assert aot_backends.lookup_backend is lookup_backend
    assert ember._dynamo.list_backends is list_backends

    def mine(gm, inputs):
        return gm.forward

    assert lookup_backend(mine) is mine
    register_backend(mine, name="test_api_mine")
    assert lookup_backend("test_api_mine") is mine
    with pytest.raises(RuntimeError, match="already registered"):
        register_backend(lambda gm, inputs: gm, name="test_api_mine")
    register_backend(mine, name="test_api_debug", tags=("debug",))
    assert "test_api_debug" not in list_backends()
    assert "test_api_debug" in list_backends(exclude_tags=())


def test_pytorch_module_paths():
    assert ember._dynamo.config is config
    assert ember._dynamo.config.cache_size_limit == 8
    import ember._dynamo.testing as testing

    assert testing.CompileCounter is CompileCounter
    for name in ("reset", "explain", "mark_dynamic", "mark_static", "maybe_mark_dynamic", "optimize", "disable"):
        assert callable(getattr(ember._dynamo, name))
    for name in ("disable", "reset", "is_compiling", "allow_in_graph", "is_dynamo_compiling", "compile"):
        assert callable(getattr(ember.compiler, name))
    assert ember.compiler.is_compiling() is False


def test_optimized_module_keeps_the_modules_names():
    model = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.ReLU())
    compiled = ember.compile(model, backend="eager")
    assert isinstance(compiled, OptimizedModule) and compiled._orig_mod is model
    assert list(compiled.state_dict()) == list(model.state_dict()) == ["0.weight", "0.bias"]
    assert [n for n, _ in compiled.named_parameters()] == ["0.weight", "0.bias"]
    model.tag = "mine"
    assert compiled.tag == "mine"  # attributes pass through
    compiled.load_state_dict({"0.weight": ember.zeros(3, 2), "0.bias": ember.ones(3)})
    assert model[0].bias.tolist() == [1.0, 1.0, 1.0]
    assert repr(compiled).startswith("OptimizedModule(\n  (_orig_mod): Sequential(")


def test_module_compile_finds_its_provider_through_the_entry_point(monkeypatch):
    from ember.dynamo.eval_frame import compile_in_place
    from ember.nn.modules import _compile_provider

    monkeypatch.setattr(_compile_provider, "_provider", None)  # as before ember.dynamo is imported
    model = ember.nn.Linear(2, 2)
    model.compile(backend="eager")
    assert _compile_provider._provider is compile_in_place
    assert model._compiled_call_impl is not None


def test_module_compile_is_in_place():
    model = ember.nn.Linear(2, 2)
    assert model._compiled_call_impl is None
    model.compile(backend="eager")
    assert type(model) is ember.nn.Linear
    assert model._compiled_call_impl is not None
    assert list(model.state_dict()) == ["weight", "bias"]


def test_compile_counters_and_recorders():
    gm = ember.fx.symbolic_trace(lambda x: (x + 1).relu())
    x = ember.ones(2)
    counter = CompileCounter()
    assert counter(gm, [x])(x).tolist() == [2.0, 2.0]
    assert (counter.frame_count, counter.op_count) == (1, 2)
    counter.clear()
    assert counter.frame_count == 0
    with_backend = CompileCounterWithBackend("aot_eager")
    assert with_backend(gm, [x])(x).tolist() == [2.0, 2.0]
    assert with_backend.frame_count == 1 and with_backend.graphs == [gm]
    recorder = EagerAndRecordGraphs()
    recorder(gm, [x])
    assert recorder.graphs == [gm]


def test_explain_output_reads_as_a_report():
    brk = GraphBreak("print() is not traced", "remove it", [UserFrame("model.py", 12, "forward", "print(x)")])
    out = ExplainOutput(
        graph_count=2,
        graph_break_count=1,
        break_reasons=[brk],
        op_count=3,
        ops_per_graph=[[ember.add], [ember.relu, ember.add]],
    )
    text = str(out)
    assert text.startswith("Graph Count: 2\nGraph Break Count: 1\nOp Count: 3\nBreak Reasons:")
    assert 'File "model.py", line 12, in forward' in text and "print(x)" in text and "Hint: remove it" in text
    assert "Ops 2:" in text


def test_disable_and_allow_in_graph_marks():
    def g(x):
        return x

    wrapped = ember.compiler.disable(g)
    assert wrapped._ember_dynamo_disable and wrapped._torchdynamo_disable and wrapped.__wrapped__ is g
    assert ember.compiler.disable(recursive=False)(g) is g and g._ember_dynamo_disable
    from ember.dynamo import decorators

    assert ember.compiler.allow_in_graph(g) is g and decorators.is_allowed_in_graph(g)
    with pytest.raises(TypeError):
        ember.compiler.disable(3)


def test_log_names_are_registered():
    import ember.dynamo._logging as dlog
    from ember.logs import registry

    for name in ("bytecode", "graph", "graph_code", "graph_breaks", "guards", "recompiles", "dynamic"):
        assert name in registry.artifacts
        assert dlog.artifact_logger(name).name.startswith("ember.dynamo")
    assert "dynamo" in registry.components
    with pytest.raises(ValueError):
        dlog.artifact_logger("nope")
    ember.logs.set_logs(dynamic=True)
    try:
        assert dlog.dynamic_log.isEnabledFor(logging.INFO)
    finally:
        ember.logs.set_logs()
    assert not dlog.dynamic_log.isEnabledFor(logging.INFO)
