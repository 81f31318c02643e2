"""AOT autograd's programs on disk (``aot_cache.py``): a warm start loads the plan of the forward and
backward and their compiled graphs, and traces nothing."""

from __future__ import annotations

import shutil
import textwrap

import numpy as np
import pytest
from inductor_testing import run_in_new_process

import ember
from ember.aot import aot_autograd, autograd_cache
from ember.aot import config as aot_config
from ember.aot.aot_autograd import _signature
from ember.fx import symbolic_trace
from ember.inductor import config
from ember.inductor.aot_cache import GraphProgramCache
from ember.nn.attention import SDPBackend, sdpa_kernel

WARM_START = textwrap.dedent(
    """
    import json
    import ember
    from ember.aot import aot_autograd, autograd_cache
    from ember.inductor import fx_graph_cache
    from ember.inductor.graph import GraphLowering

    counts = {"traces": 0, "lowered": 0}
    make_fx, run = aot_autograd.make_fx, GraphLowering.run

    def counting_make_fx(*args, **kwargs):
        counts["traces"] += 1
        return make_fx(*args, **kwargs)

    def counting_run(self):
        counts["lowered"] += 1
        return run(self)

    aot_autograd.make_fx, GraphLowering.run = counting_make_fx, counting_run

    ember.manual_seed(0)
    model = ember.nn.Sequential(
        ember.nn.Linear(6, 8), ember.nn.BatchNorm1d(8), ember.nn.ReLU(), ember.nn.Dropout(0.25), ember.nn.Linear(8, 8)
    )
    x = ember.linspace(-2, 2, 30).reshape(5, 6)

    def step(x):
        # a loss, an output that is a view of the input, running statistics updated in place, and
        # dropout's draws (the Philox seed and offset are inputs and an output of the graphs)
        return model(x).square().mean(), x.t()

    loss, view = ember.compile(step)(x)
    loss.backward()
    model.eval()  # batch norm reads its statistics: an inference graph that writes nothing back
    with ember.no_grad():
        inferred = ember.compile(lambda x: model(x).sum(1))(x)
    print(json.dumps({
        **counts, **{"aot_" + k: v for k, v in autograd_cache.stats.items()},
        "graph_hits": fx_graph_cache.stats["hits"], "loss": loss.item(), "inferred": inferred.tolist(),
        "grad": model[0].weight.grad.flatten().tolist(), "running_mean": model[1].running_mean.tolist(),
        "offset": ember.default_generator.get_offset(),
        "view_is_input": view.data_ptr() == x.data_ptr() and view.stride() == (1, 6),
    }))
    """
)


def test_a_new_process_loads_the_programs_and_traces_nothing(tmp_path):
    cold = run_in_new_process(WARM_START, tmp_path)
    assert cold["traces"] == 2 and cold["lowered"] == 3  # the joint and the inference trace; three graphs
    assert (cold["aot_saves"], cold["aot_hits"]) == (2, 0)
    warm = run_in_new_process(WARM_START, tmp_path)
    assert (warm["traces"], warm["lowered"], warm["aot_hits"], warm["aot_saves"]) == (0, 0, 2, 0)
    assert warm["graph_hits"] == 3
    for name in ("loss", "inferred", "grad", "running_mean", "offset"):
        assert warm[name] == cold[name], name
    assert warm["view_is_input"] and cold["view_is_input"]
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".")]  # no temporary left behind


@pytest.fixture
def traces(monkeypatch, tmp_path):
    """An empty cache folder, and a count of AOT autograd's traces."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    count = {"n": 0}
    make_fx = aot_autograd.make_fx

    def counting(*args, **kwargs):
        count["n"] += 1
        return make_fx(*args, **kwargs)

    monkeypatch.setattr(aot_autograd, "make_fx", counting)
    return count


def _step(x, w):
    return ((x @ w).tanh() * x.sum()).mean()


def _compile_and_run(x, w):
    """A new dynamo capture of ``_step`` (as a new process makes): the loss and the gradient of ``w``."""
    ember._dynamo.reset()
    w.grad = None
    loss = ember.compile(_step)(x, w)
    loss.backward()
    return loss.detach().clone(), w.grad.clone()


def test_a_second_capture_loads_the_program(traces):
    x, w = ember.randn(4, 5), ember.randn(5, 5, requires_grad=True)
    hits = autograd_cache.stats["hits"]
    loss, grad = _compile_and_run(x, w)
    assert traces["n"] == 1 and autograd_cache.stats["hits"] == hits
    again, grad_again = _compile_and_run(x, w)
    assert traces["n"] == 1 and autograd_cache.stats["hits"] == hits + 1
    assert np.array_equal(loss.numpy(), again.numpy()) and np.array_equal(grad.numpy(), grad_again.numpy())
    ember._dynamo.reset()
    with ember.no_grad():  # another program (inference), traced
        ember.compile(_step)(x, w)
    assert traces["n"] == 2


def test_a_program_whose_graphs_are_gone_is_traced_again(traces, tmp_path):
    x, w = ember.randn(4, 5), ember.randn(5, 5, requires_grad=True)
    loss, grad = _compile_and_run(x, w)
    shutil.rmtree(tmp_path / "inductor" / "graphs")
    misses = autograd_cache.stats["misses"]
    again, grad_again = _compile_and_run(x, w)
    assert traces["n"] == 2 and autograd_cache.stats["misses"] == misses + 1
    assert np.array_equal(loss.numpy(), again.numpy()) and np.array_equal(grad.numpy(), grad_again.numpy())
    _compile_and_run(x, w)  # saved again by the second compile
    assert traces["n"] == 2


def test_logs_asking_for_the_graphs_trace_again(traces, capsys):
    x, w = ember.randn(4, 5), ember.randn(5, 5, requires_grad=True)
    _compile_and_run(x, w)
    try:
        ember.logs.set_logs(aot_graphs=True)
        _compile_and_run(x, w)
    finally:
        ember.logs.set_logs()
    assert traces["n"] == 2 and "AOT backward graph" in capsys.readouterr().err


def test_check_mode_and_autotuning_neither_load_nor_save(traces):
    x, w = ember.randn(4, 5), ember.randn(5, 5, requires_grad=True)
    saves = autograd_cache.stats["saves"]
    _compile_and_run(x, w)
    assert traces["n"] == 1 and autograd_cache.stats["saves"] == saves + 1
    for kwargs in ({"options": {"check": True}}, {"mode": "max-autotune"}):
        ember._dynamo.reset()  # each traces: the default mode's program is not theirs
        ember.compile(_step, **kwargs)(x, w).backward()
    assert traces["n"] == 3 and autograd_cache.stats["saves"] == saves + 1


def _key(fn, *inputs):
    cache = GraphProgramCache.for_graph(symbolic_trace(fn), list(inputs), lambda key: None)
    if cache is None:
        return None
    from ember.autograd import is_grad_enabled

    return cache.key((len(inputs), is_grad_enabled(), tuple(_signature(a, False) for a in inputs)))


def test_the_key_follows_the_graph_the_inputs_and_the_settings(monkeypatch):
    def f(x):
        return x.sin() * 2

    x = ember.randn(3, 4)
    key = _key(f, x)
    assert key is not None and key == _key(f, ember.randn(3, 4))
    assert key != _key(lambda x: x.cos() * 2, x)
    assert key != _key(f, ember.randn(4, 3))
    assert key != _key(f, ember.randn(4, 3).t())
    assert key != _key(f, ember.randn(3, 4, dtype=ember.float64))
    assert key != _key(f, ember.randn(3, 4, requires_grad=True))
    with ember.no_grad():
        assert key != _key(f, x)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert key != _key(f, x)
    default = ember.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        assert key != _key(f, x)
    finally:
        ember.set_default_dtype(default)
    assert key == _key(f, x)
    with sdpa_kernel(SDPBackend.MATH):
        assert key != _key(f, x)
    monkeypatch.setattr(config, "realize_ops_threshold", 7)
    assert key != _key(f, x)
    monkeypatch.undo()
    monkeypatch.setattr(aot_config, "functionalize_rng_ops", False)
    assert key != _key(f, x)


def _user_function(x):
    return x + 1


def test_graphs_the_key_cannot_describe_are_not_kept(monkeypatch):
    x = ember.randn(3)

    class WithConstant(ember.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = ember.randn(3)

        def forward(self, x):
            return x * self.table

    assert GraphProgramCache.for_graph(symbolic_trace(WithConstant()), [x], lambda key: None) is None
    gm = symbolic_trace(lambda x: x.sin())
    node = next(n for n in gm.graph.nodes if n.op == "call_method")
    with gm.graph.inserting_after(node):
        user = gm.graph.call_function(_user_function, (node,))
    node.replace_all_uses_with(user)
    user.args = (node,)
    gm.recompile()
    assert GraphProgramCache.for_graph(gm, [x], lambda key: None) is None
    assert GraphProgramCache.for_graph(symbolic_trace(lambda x: x.sin()), [x], lambda key: None) is not None
    monkeypatch.setattr(aot_config, "enable_autograd_cache", False)
    assert GraphProgramCache.for_graph(symbolic_trace(lambda x: x.sin()), [x], lambda key: None) is None
    monkeypatch.undo()
    monkeypatch.setattr(config, "fx_graph_cache", False)
    assert GraphProgramCache.for_graph(symbolic_trace(lambda x: x.sin()), [x], lambda key: None) is None
