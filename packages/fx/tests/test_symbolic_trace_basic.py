"""Symbolic tracing without an oracle: patching is undone, free functions, proxies, tracer hooks."""

import math
import operator
import sys

import numpy as np
import pytest

import ember
import ember.fx as fx
import ember.nn as nn
import ember.nn.functional as F
from ember.fx.proxy import GraphAppendingTracer, ParameterProxy, Proxy, TraceError
from ember.linalg import vector_norm as imported_norm


def _same(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def _namespaces():
    import ember.linalg

    return [sys.modules["ember"], F, ember.linalg, math, sys.modules[__name__]]


def _snapshot():
    """Every object the tracer may patch, by identity."""
    state = {}
    for module in _namespaces():
        for k, v in module.__dict__.items():
            state[(module.__name__, k)] = id(v)
    for cls in (ember.Tensor, nn.Module, nn.Parameter, nn.Conv2d):
        for k, v in cls.__dict__.items():
            state[(cls.__name__, k)] = id(v)
    return state


def free_function(x, y):
    z = ember.relu(x) + F.gelu(y) * math.sqrt(2.0)
    return imported_norm(z, dim=-1), z.transpose(0, 1).sum()


def test_free_function_traces_and_runs():
    gm = fx.symbolic_trace(free_function)
    ops = [(n.op, n.name) for n in gm.graph.nodes]
    assert ops == [
        ("placeholder", "x"),
        ("placeholder", "y"),
        ("call_function", "relu"),
        ("call_function", "gelu"),
        ("call_function", "mul"),
        ("call_function", "add"),
        ("call_function", "vector_norm"),
        ("call_method", "transpose"),
        ("call_method", "sum_1"),
        ("output", "output"),
    ]
    targets = {n.name: n.target for n in gm.graph.nodes}
    assert targets["relu"] is ember.relu
    assert targets["gelu"] is F.gelu
    assert targets["vector_norm"] is imported_norm
    assert "ember.relu(x)" in gm.code
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    for a, b in zip(gm(x, y), free_function(x, y), strict=True):
        _same(a, b)


def test_patching_is_undone_after_a_trace():
    before = _snapshot()
    fx.symbolic_trace(free_function)
    fx.symbolic_trace(nn.Sequential(nn.Linear(2, 2), nn.ReLU()))
    assert _snapshot() == before
    assert fx._symbolic_trace._patching.CURRENT_PATCHER is None


def _raises_midway(x):
    y = ember.relu(x) * 2
    if y.sum() > 0:
        return y
    return x


class _Fails(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        F.relu(self.lin(x))
        raise KeyError("boom")


def test_patching_is_undone_after_an_exception():
    before = _snapshot()
    with pytest.raises(TraceError):
        fx.symbolic_trace(_raises_midway)
    assert _snapshot() == before
    with pytest.raises(KeyError, match="boom"):
        fx.symbolic_trace(_Fails())
    assert _snapshot() == before
    # Eager calls see the originals again.
    assert ember.relu(ember.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
    assert not fx._symbolic_trace.is_fx_tracing()


def test_functions_are_patched_only_during_the_trace():
    seen = {}

    def f(x):
        seen["relu"] = ember.relu
        seen["tracing"] = fx._symbolic_trace.is_fx_tracing()
        return ember.relu(x)

    original = ember.relu
    fx.symbolic_trace(f)
    assert seen["relu"] is not original and seen["tracing"]
    assert ember.relu is original


@pytest.mark.parametrize(
    "op",
    [
        operator.add,
        operator.sub,
        operator.mul,
        operator.truediv,
        operator.floordiv,
        operator.mod,
        operator.pow,
        operator.matmul,
        operator.and_,
        operator.or_,
        operator.xor,
        operator.lshift,
        operator.rshift,
        operator.eq,
        operator.ne,
        operator.lt,
        operator.le,
        operator.gt,
        operator.ge,
        operator.getitem,
    ],
)
def test_binary_operators_record_the_operator_function(op):
    gm = fx.symbolic_trace(lambda_free(op))
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    # proxy OP 3, then 3 OP proxy: the reflected form, or for a comparison the mirrored one.
    mirrored = {operator.lt: operator.gt, operator.le: operator.ge, operator.gt: operator.lt, operator.ge: operator.le}
    assert [c.target for c in calls] == [op, mirrored.get(op, op)]
    assert calls[0].args == (calls[0].args[0], 3)
    if op not in (*mirrored, operator.eq, operator.ne, operator.getitem):
        assert calls[1].args[0] == 3


def lambda_free(op):
    def f(x):
        if op is operator.getitem:
            return op(x, 3), op(x, 3)
        return op(x, 3), op(3, x)

    return f


def test_unary_operators():
    def f(x):
        return -x, +x, ~x, abs(x)

    gm = fx.symbolic_trace(f)
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [
        operator.neg,
        operator.pos,
        operator.invert,
        operator.abs,
    ]


def test_attribute_is_getattr_or_call_method():
    def f(x):
        return x.shape, x.view(-1), x.T.sum()

    gm = fx.symbolic_trace(f)
    nodes = [(n.op, n.target if isinstance(n.target, str) else n.target.__name__) for n in gm.graph.nodes]
    # x.shape is recorded when it is first used (as an output), x.view is a method call.
    assert nodes[1:-1] == [
        ("call_method", "view"),
        ("call_function", "getattr"),
        ("call_method", "sum"),
        ("call_function", "getattr"),
    ]
    assert [n.args[1] for n in gm.graph.nodes if n.op == "call_function"] == ["T", "shape"]


def test_unpacking_records_getitems_and_iteration_raises():
    def unpack(x):
        a, b = x.size()
        return x.view(b, a)

    gm = fx.symbolic_trace(unpack)
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [operator.getitem] * 2
    x = ember.randn(2, 3)
    assert tuple(gm(x).shape) == (3, 2)

    def loop(x):
        return [v for v in x]

    with pytest.raises(TraceError, match="Proxy object cannot be iterated"):
        fx.symbolic_trace(loop)


def test_len_and_index_raise_trace_errors_of_pytorchs_types():
    with pytest.raises(RuntimeError, match="'len' is not supported in symbolic tracing") as info:
        fx.symbolic_trace(lambda_len)
    assert isinstance(info.value, TraceError)
    with pytest.raises(TypeError, match="needs an int") as info:
        fx.symbolic_trace(lambda_range)
    assert isinstance(info.value, TraceError)


def test_double_star_on_a_proxy_raises_trace_error():
    def f(x):
        return dict(**x)

    with pytest.raises(TraceError, match="cannot be iterated"):
        fx.symbolic_trace(f)


def test_tracing_through_an_nn_module_that_holds_its_function():
    # Conv2d keeps F.conv2d as a static method: it is patched for the trace, and restored.
    conv = nn.Conv2d(2, 3, 3, padding=1)
    gm = fx.symbolic_trace(conv)
    assert [n.name for n in gm.graph.nodes if n.op == "call_function"] == ["conv2d"]
    x = ember.randn(1, 2, 5, 5)
    _same(gm(x), conv(x))
    assert nn.Conv2d.__dict__["_functional"].__func__ is F.conv2d


def lambda_len(x):
    return len(x)


def lambda_range(x):
    return list(range(x))


def test_stack_traces_name_the_users_lines():
    class Sub(nn.Module):
        def forward(self, x):
            return ember.relu(x) * 2

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.sub = Sub()

        def forward(self, x):
            return self.sub(x) + 1

    tracer = fx.Tracer()
    tracer.record_stack_traces = True
    graph = tracer.trace(M())
    traces = {n.name: n.meta.get("stack_trace") for n in graph.nodes}
    assert traces["x"] is None
    relu = traces["relu"].splitlines()
    assert relu[0].startswith(f'File "{__file__}", line ') and relu[0].endswith("in forward")
    assert relu[1].strip() == "return self.sub(x) + 1"
    assert relu[-1].strip() == "return ember.relu(x) * 2"
    assert "ember/fx" not in traces["relu"] and "module.py" not in traces["relu"]
    assert traces["add"].splitlines()[-1].strip() == "return self.sub(x) + 1"
    assert dict(graph.find_nodes(op="call_function", target=ember.relu)[0].meta["nn_module_stack"]) == {
        "sub": ("sub", Sub)
    }
    # Off by default.
    assert all("stack_trace" not in n.meta for n in fx.Tracer().trace(M()).nodes)


def test_parameters_become_get_attr_nodes_once():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.ones(3))
            self.register_buffer("b", ember.zeros(3))
            self.c = ember.full((3,), 2.0)

        def forward(self, x):
            return x * self.w + self.w + self.b + self.c + ember.ones(3)

    m = M()
    gm = fx.symbolic_trace(m)
    get_attrs = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert get_attrs == ["w", "b", "c", "_tensor_constant0"]
    _same(gm(ember.ones(3)), m(ember.ones(3)))


def test_param_shapes_constant_gives_parameter_proxies():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.ones(2, 3))

        def forward(self, x):
            if self.w.shape[0] == 2 and self.w.dim() == 2:
                return x @ self.w
            return x

    seen = []

    class T(fx.Tracer):
        def getattr(self, attr, attr_val, cache):
            out = super().getattr(attr, attr_val, cache)
            seen.append(out)
            return out

    graph = T(param_shapes_constant=True).trace(M())
    assert isinstance(seen[0], ParameterProxy) and repr(seen[0]) == "ParameterProxy(w)"
    assert [n.op for n in graph.nodes] == ["placeholder", "get_attr", "call_function", "output"]
    with pytest.raises(TraceError):
        fx.Tracer().trace(M())


def test_varargs_kwargs_and_keyword_only_roots():
    def f(x, *args, scale=2.0, **kwargs):
        return x * scale + args[0] + kwargs["z"]

    gm = fx.symbolic_trace(f)
    assert [n.name for n in gm.graph.nodes if n.op == "placeholder"] == ["x", "scale", "_args", "_kwargs"]
    x, y, z = ember.randn(2), ember.randn(2), ember.randn(2)
    _same(gm(x, 3.0, y, z=z), f(x, y, scale=3.0, z=z))


def test_concrete_args_tuple_for_star_args():
    class M(nn.Module):
        def forward(self, *inputs):
            return inputs[0] + inputs[1]

    gm = fx.symbolic_trace(M(), concrete_args=(fx.PH, fx.PH))
    assert [n.name for n in gm.graph.nodes if n.op == "placeholder"] == ["input_0", "input_1"]
    _same(gm(ember.ones(2), ember.ones(2)), ember.full((2,), 2.0))

    def f(*inputs):
        return inputs[0]

    with pytest.raises(RuntimeError, match="Tracing expected 0 arguments but got 2 concrete arguments"):
        fx.symbolic_trace(f, concrete_args=(fx.PH, fx.PH))


def test_custom_autowrap_function_and_module():
    def clip(v):
        return v if v < 10 else 10

    tracer = fx.Tracer(autowrap_functions=(clip,))
    fn_globals = {"clip": clip, "ember": ember}
    exec("def f(x):\n    return x * clip(x.size(0))", fn_globals)
    graph = tracer.trace(fn_globals["f"])
    assert clip in [n.target for n in graph.nodes]
    assert fn_globals["clip"] is clip


def test_proxy_on_a_raw_node_appends_to_its_graph():
    g = fx.Graph()
    x = Proxy(g.placeholder("x"))
    assert isinstance(x.tracer, GraphAppendingTracer)
    out = x * 2 + 1
    g.output(out.node)
    assert [n.op for n in g.nodes] == ["placeholder", "call_function", "call_function", "output"]
    assert repr(x) == "Proxy(x)"
    assert {x: 1}[x] == 1  # defining __eq__ did not take away __hash__


def test_trace_asserts_records_assert_fn():
    from ember.fx.proxy import assert_fn

    # Compiled here, as pytest rewrites the asserts of test modules.
    namespace = {}
    exec(
        compile('def f(x):\n    assert x.sum() > 0, "positive"\n    return x * 2\n', "asserting.py", "exec"), namespace
    )
    f = namespace["f"]
    tracer = fx.Tracer()
    tracer.trace_asserts = True
    graph = tracer.trace(f)
    assert [n.target for n in graph.nodes if n.op == "call_function"][-2:] == [assert_fn, operator.mul]
    with pytest.raises(TraceError):
        fx.symbolic_trace(f)

    def g(x):
        if x.sum() > 0:  # not an assert: still an error
            return x
        return x

    with pytest.raises(TraceError):
        tracer.trace(g)


def test_multiple_tracers_in_one_call_raise():
    g1, g2 = fx.Graph(), fx.Graph()
    a, b = Proxy(g1.placeholder("a")), Proxy(g2.placeholder("b"))
    from ember.fx._patching import create_ember_function

    wrapped = create_ember_function(ember.add, "add")
    with pytest.raises(RuntimeError, match="Found multiple different tracers"):
        wrapped(a, b)


def test_tensor_methods_record_call_method_with_a_proxy_argument():
    def f(x):
        t = ember.ones(3)
        t += x  # t is the recorded add_ from here on
        u = ember.ones(3)
        return t, u.add(x), u.mul(2), u[x], u % x

    gm = fx.symbolic_trace(f)
    assert [n.target for n in gm.graph.nodes if n.op == "call_method"] == ["add_", "add", "__getitem__", "remainder"]


def test_wrap_must_be_called_at_module_level():
    with pytest.raises(NotImplementedError, match="top level of a module"):
        fx.wrap("len")


class TensorPair(metaclass=fx.ProxyableClassMeta):
    def __init__(self, left, right):
        self.left, self.right = left, right

    def add(self, other):
        return TensorPair(self.left + other.left, self.right + other.right)

    def mul(self, other):
        return TensorPair(self.left * other.left, self.right * other.right)


def use_tensor_pair(x: TensorPair, y):
    s = x.add(TensorPair(y, y))
    return s.mul(x)


def test_proxyable_class_construction_is_recorded():
    gm = fx.symbolic_trace(use_tensor_pair)
    assert [(n.op, n.name) for n in gm.graph.nodes] == [
        ("placeholder", "x"),
        ("placeholder", "y"),
        ("call_function", "tensor_pair"),
        ("call_method", "add"),
        ("call_method", "mul"),
        ("output", "output"),
    ]
    x, y = TensorPair(ember.ones(2), ember.full((2,), 2.0)), ember.full((2,), 3.0)
    out, expected = gm(x, y), use_tensor_pair(x, y)
    assert isinstance(out, TensorPair)
    _same(out.left, expected.left)
    _same(out.right, expected.right)
    # Outside a trace the class constructs as usual.
    assert isinstance(TensorPair(1, 2), TensorPair)


def test_retracing_a_graph_module_gives_the_same_code():
    import fx_trace_models as models

    gm = fx.symbolic_trace(models.make_gpt_block(ember).eval())
    again = fx.symbolic_trace(gm)
    assert again.code == gm.code
    x = ember.randn(2, 8, 16)
    _same(again(x), gm(x))


def test_proxy_buffer_attributes():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", ember.ones(2))

        def forward(self, x):
            return x + self.b.sum() + self.b

    class T(fx.Tracer):
        proxy_buffer_attributes = True

    graph = T().trace(M())
    # One get_attr, read once and used twice; the method call on it is recorded.
    assert [(n.op, n.name) for n in graph.nodes] == [
        ("placeholder", "x"),
        ("get_attr", "b"),
        ("call_method", "sum_1"),
        ("call_function", "add"),
        ("call_function", "add_1"),
        ("output", "output"),
    ]


def test_a_tracer_can_be_deep_copied():
    import copy

    tracer = fx.Tracer(autowrap_functions=(free_function,))
    clone = copy.deepcopy(tracer)
    assert clone._autowrap_search == [math] and clone._autowrap_search is not tracer._autowrap_search
    assert fx.GraphModule(ember.nn.Module(), clone.trace(free_function)).code == fx.symbolic_trace(free_function).code


class _DictInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, batch, scale):
        return {"y": self.lin(batch["x"]) * scale, "mask": batch["mask"]}


def test_placeholders_in_a_structured_module_input_pickle_and_copy():
    import copy
    import pickle

    m = _DictInput()
    gm = fx.symbolic_trace(m, concrete_args={"batch": {"x": fx.PH, "mask": fx.PH}})
    assert [n.name for n in gm.graph.nodes if n.op == "placeholder"] == ["batch_1", "batch_2", "scale"]
    batch = {"x": ember.randn(3, 2), "mask": ember.ones(3)}
    expected = m(batch, 2.0)
    for module in (gm, pickle.loads(pickle.dumps(gm)), copy.deepcopy(gm)):
        out = module(batch, 2.0)
        assert set(out) == {"y", "mask"}
        _same(out["y"], expected["y"])
        assert out["mask"] is batch["mask"]
    out = fx.Interpreter(gm).run(batch, 2.0)
    _same(out["y"], expected["y"])
