"""ember.fx.symbolic_trace against torch.fx.symbolic_trace on the same programs.

Each model in ``fx_trace_models`` is built once from ``torch`` and once from ``ember``; both are
traced, and the graphs must have the same nodes (op, name, target name, arguments) in the same
order, and the GraphModules must give the same results on equal inputs with equal weights.
"""

import enum
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
torch_fx = pytest.importorskip("torch.fx")
import fx_trace_models as models  # noqa: E402

import ember  # noqa: E402
import ember.fx  # noqa: E402
import ember.fx.proxy  # noqa: E402


def _target_name(target):
    if isinstance(target, str):
        return target
    return getattr(target, "__name__", repr(target))


def _norm(arg, node_type):
    """An argument with nodes as their names and library objects as library-neutral text."""
    if isinstance(arg, node_type):
        return ("node", arg.name)
    if isinstance(arg, (tuple, list)):
        return (type(arg).__name__, tuple(_norm(a, node_type) for a in arg))
    if isinstance(arg, dict):
        return ("dict", tuple((k, _norm(v, node_type)) for k, v in arg.items()))
    if isinstance(arg, slice):
        return ("slice", _norm(arg.start, node_type), _norm(arg.stop, node_type), _norm(arg.step, node_type))
    if callable(arg):
        return ("fn", _target_name(arg))
    if isinstance(arg, (torch.dtype, ember.dtype)):
        return ("dtype", str(arg).split(".")[-1])
    if isinstance(arg, enum.Enum):
        return ("enum", arg.name)
    if isinstance(arg, float) and arg != arg:
        return ("nan",)
    return arg


def _signature(gm, node_type):
    return [(n.op, n.name, _target_name(n.target), _norm(n.args, node_type)) for n in gm.graph.nodes]


def _kwargs(gm, node_type):
    return [{k: _norm(v, node_type) for k, v in n.kwargs.items()} for n in gm.graph.nodes]


def assert_same_graph(torch_gm, ember_gm):
    expected = _signature(torch_gm, torch_fx.Node)
    actual = _signature(ember_gm, ember.fx.Node)
    assert actual == expected, f"\nember:\n{ember_gm.code}\ntorch:\n{torch_gm.code}"
    # torch.nn.functional's Python functions hand __torch_function__ their defaulted keywords too
    # (softmax(x, dim=-1) records _stacklevel=3, dtype=None): every keyword ember records must be
    # recorded by torch with the same value.
    pairs = zip(ember_gm.graph.nodes, _kwargs(ember_gm, ember.fx.Node), _kwargs(torch_gm, torch_fx.Node), strict=True)
    for node, e_kw, t_kw in pairs:
        assert e_kw.items() <= t_kw.items(), f"{node.name}: {e_kw} vs {t_kw}"


def _to_ember(t):
    return ember.tensor(t.detach().numpy())


def copy_weights(torch_model, ember_model):
    ember_model.load_state_dict({k: _to_ember(v) for k, v in torch_model.state_dict().items()})


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def assert_close(ember_out, torch_out, atol=1e-4):
    e, t = _leaves(ember_out), _leaves(torch_out)
    assert len(e) == len(t)
    for a, b in zip(e, t, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4, atol=atol)


def _pair(make):
    torch.manual_seed(0)
    tm, em = make(torch), make(ember)
    copy_weights(tm, em)
    tm.eval()
    em.eval()
    return tm, em


def _inputs(*shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.tensor(x), ember.tensor(x)


def test_gpt_block():
    tm, em = _pair(models.make_gpt_block)
    tgm, egm = torch_fx.symbolic_trace(tm), ember.fx.symbolic_trace(em)
    assert_same_graph(tgm, egm)
    tx, ex = _inputs(2, 8, 16)
    assert_close(egm(ex), tgm(tx))
    assert_close(egm(ex), em(ex))


def test_cnn():
    tm, em = _pair(models.make_cnn)
    tgm, egm = torch_fx.symbolic_trace(tm), ember.fx.symbolic_trace(em)
    assert_same_graph(tgm, egm)
    # The Sequential container is traced through; its members are leaves.
    assert [n.target for n in egm.graph.nodes if n.op == "call_module"][:4] == [
        "features.0",
        "features.1",
        "features.2",
        "features.3",
    ]
    tx, ex = _inputs(2, 3, 8, 8)
    assert_close(egm(ex), tgm(tx))


def test_rnn_lstm_is_a_leaf():
    tm, em = _pair(models.make_rnn)
    tgm, egm = torch_fx.symbolic_trace(tm), ember.fx.symbolic_trace(em)
    assert_same_graph(tgm, egm)
    assert [n.target for n in egm.graph.nodes if n.op == "call_module"] == ["lstm", "fc"]
    tx, ex = _inputs(2, 6, 5)
    assert_close(egm(ex), tgm(tx))


def test_control_flow_with_concrete_args():
    tm, em = _pair(models.make_gated)
    concrete = {"use_relu": True, "scale": None, "repeats": 2}
    tgm = torch_fx.symbolic_trace(tm, concrete_args=concrete)
    egm = ember.fx.symbolic_trace(em, concrete_args=concrete)
    assert_same_graph(tgm, egm)
    tx, ex = _inputs(3, 4)
    assert_close(egm(ex, True, None, 2), tgm(tx, True, None, 2))
    # The specialized values are checked when the graph runs.
    with pytest.raises(AssertionError, match="use_relu has been specialized to have value True"):
        tgm(tx, False, None, 2)
    with pytest.raises(AssertionError, match="use_relu has been specialized to have value True"):
        egm(ex, False, None, 2)
    with pytest.raises(AssertionError, match="scale has been specialized to have value None"):
        egm(ex, True, 2.0, 2)


def test_concrete_args_placeholders_in_a_dict():
    def make(lib):
        def f(x, n):
            return x["a"] * x["b"] + n

        return f

    concrete = {"x": {"a": torch_fx.PH, "b": torch_fx.PH}}
    tgm = torch_fx.symbolic_trace(make(torch), concrete_args=concrete)
    egm = ember.fx.symbolic_trace(make(ember), concrete_args={"x": {"a": ember.fx.PH, "b": ember.fx.PH}})
    assert_same_graph(tgm, egm)
    ta, ea = _inputs(3)
    tb, eb = _inputs(3, seed=1)
    assert_close(egm({"a": ea, "b": eb}, 2.0), tgm({"a": ta, "b": tb}, 2.0))


def test_wrapped_functions_are_leaves():
    tm, em = _pair(models.make_wrapped)
    tgm, egm = torch_fx.symbolic_trace(tm), ember.fx.symbolic_trace(em)
    assert_same_graph(tgm, egm)
    calls = {n.target.__name__: n for n in egm.graph.nodes if n.op == "call_function"}
    assert calls["sum_of_squares"].target is models.sum_of_squares
    assert calls["len"].target is len
    tx, ex = _inputs(2, 3)
    ty, ey = _inputs(2, 3, seed=1)
    assert_close(egm(ex, ey), tgm(tx, ty))


def test_custom_leaf_module():
    torch.manual_seed(0)
    tm, torch_tracer = models.make_custom_leaf(torch)
    em, ember_tracer = models.make_custom_leaf(ember)
    copy_weights(tm, em)
    tgm = torch_fx.GraphModule(tm, torch_tracer().trace(tm))
    egm = ember.fx.GraphModule(em, ember_tracer().trace(em))
    assert_same_graph(tgm, egm)
    assert [n.target for n in egm.graph.nodes if n.op == "call_module"] == ["inner.scale", "scale2"]
    tx, ex = _inputs(4, 3)
    assert_close(egm(ex), tgm(tx))


def test_operators_and_methods():
    def make(lib):
        def f(x, y):
            a = x + y - 2 * x / (y.abs() + 1)
            b = (1 - x) ** 2 + abs(-x) - (+y) // 3
            c = x @ y.T
            d = (x > y) & (y <= 0.5) | ~(x == y)
            e = x[0] + x[:, 1:].sum() + x[..., None].squeeze(-1).mean(dim=0)
            t = lib.ones(3)
            g = t + x
            h = t * y + t.sub(y)
            shape = x.shape
            return a, b, c, d.float(), e, g, h, x.size(1) * shape[0] % 4, lib.cat([x, y], dim=0)

        return f

    tgm, egm = torch_fx.symbolic_trace(make(torch)), ember.fx.symbolic_trace(make(ember))
    assert_same_graph(tgm, egm)
    tx, ex = _inputs(3, 3)
    ty, ey = _inputs(3, 3, seed=1)
    t_out, e_out = tgm(tx, ty), egm(ex, ey)
    assert t_out[7] == e_out[7]
    assert_close([o for i, o in enumerate(e_out) if i != 7], [o for i, o in enumerate(t_out) if i != 7])


def test_functional_and_math_calls():
    def make(lib):
        import math

        F = lib.nn.functional

        def f(x):
            y = F.gelu(lib.tanh(x)) + lib.sigmoid(x) * math.sqrt(x.size(-1))
            return F.layer_norm(y, (y.shape[-1],)), lib.softmax(y, dim=-1), F.relu(y).transpose(0, 1)

        return f

    tgm, egm = torch_fx.symbolic_trace(make(torch)), ember.fx.symbolic_trace(make(ember))
    assert_same_graph(tgm, egm)
    assert "ember.tanh(x)" in egm.code
    tx, ex = _inputs(2, 5)
    assert_close(egm(ex), tgm(tx))


def test_control_flow_raises_trace_error_naming_the_users_line():
    with pytest.raises(torch_fx.proxy.TraceError, match="cannot be used as inputs to control flow"):
        torch_fx.symbolic_trace(models.make_branching(torch))
    with pytest.raises(ember.fx.proxy.TraceError, match="cannot be used as inputs to control flow") as info:
        ember.fx.symbolic_trace(models.make_branching(ember))
    message = str(info.value)
    assert f'{os.path.basename(models.__file__)}", line {models.branching_line()}, in branching' in message
    assert "if y.sum() > 0:" in message
    # The innermost frame of the traceback that is not the tracer's is the user's line too.
    frames = [f for f in info.traceback if "ember/fx/" not in str(f.path)]
    assert frames[-1].lineno + 1 == models.branching_line()


@pytest.mark.parametrize(
    "name, args", [("Linear", (3, 4)), ("Conv2d", (2, 3, 3)), ("GELU", ()), ("ReLU", ()), ("Flatten", ())]
)
def test_tracing_an_nn_module_as_the_root(name, args):
    torch.manual_seed(0)
    tm, em = getattr(torch.nn, name)(*args), getattr(ember.nn, name)(*args)
    copy_weights(tm, em)
    tgm, egm = torch_fx.symbolic_trace(tm), ember.fx.symbolic_trace(em)
    assert_same_graph(tgm, egm)
    tx, ex = _inputs(2, 2, 5, 3)
    assert_close(egm(ex), tgm(tx))


def _user_frames(stack_trace):
    import re

    frames = re.findall(r'File "(.+)", line (\d+), in (.+)', stack_trace or "")
    return [(os.path.basename(f), int(line), fn) for f, line, fn in frames if "site-packages" not in f]


def test_stack_traces_have_the_user_frames_torch_records():
    tm, em = _pair(models.make_gpt_block)
    t_tracer, e_tracer = torch_fx.Tracer(), ember.fx.Tracer()
    t_tracer.record_stack_traces = e_tracer.record_stack_traces = True
    t_graph, e_graph = t_tracer.trace(tm), e_tracer.trace(em)
    pairs = list(zip(t_graph.nodes, e_graph.nodes, strict=True))
    # torch's traces also list its own frames (module.py, proxy.py); the user's are the same.
    for t_node, e_node in pairs:
        assert _user_frames(e_node.meta.get("stack_trace")) == _user_frames(t_node.meta.get("stack_trace")), e_node
    assert any(len(_user_frames(e.meta.get("stack_trace"))) == 2 for _, e in pairs)
