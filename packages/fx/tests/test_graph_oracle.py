"""The graph IR against torch.fx: the same graph built through both APIs prints the same.

Each builder below takes ``(fx, lib)`` (``torch.fx, torch`` or ``ember.fx, ember``) and builds one
graph with the public Graph API. The generated code (``python_code("self").src``), ``str(graph)``
and the node names must be equal once ``torch`` is replaced by ``ember`` in PyTorch's text.
"""

from __future__ import annotations

import math
import operator
import typing

import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
torch_fx = pytest.importorskip("torch.fx")

import ember  # noqa: E402
import ember.fx  # noqa: E402
import ember.nn.functional  # noqa: E402

BINARY = [
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
]
UNARY = [operator.neg, operator.pos, operator.invert, operator.not_, operator.abs, operator.truth]


def build_operators(fx, lib):
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y")
    outs = [g.call_function(op, (x, y)) for op in BINARY]
    outs += [g.call_function(op, (x,)) for op in UNARY]
    outs.append(g.call_function(operator.add, (x, 2.5)))
    outs.append(g.call_function(operator.mul, (3, y)))
    outs.append(g.call_function(operator.iadd, (x, y)))
    outs.append(g.call_function(operator.imatmul, (x, y)))
    g.call_function(operator.setitem, (x, 0, y))
    outs.append(g.call_function(operator.getitem, (x, (0, slice(None), None))))
    g.output(tuple(outs))
    return g


def build_functions(fx, lib):
    g = fx.Graph()
    x = g.placeholder("x")
    w = g.placeholder("w")
    r = g.call_function(lib.relu, (x,))
    r2 = g.call_function(lib.relu, (r,))
    f = g.call_function(lib.nn.functional.relu, (r2,), {"inplace": False})
    a = g.call_function(lib.ops.aten.add.Tensor, (f, x), {"alpha": 2})
    m = g.call_function(lib.ops.aten.mm.default, (a, w))
    a2 = g.call_function(lib.ops.aten.add.Tensor, (m, m))
    s = g.call_function(lib.sum, (a2,), {"dim": 1, "keepdim": True, "dtype": lib.float32})
    c = g.call_function(lib.cat, ([x, s],), {"dim": -1})
    z = g.call_function(lib.zeros, ((2, 3),), {"dtype": lib.float64, "device": lib.device("cpu")})
    t1 = g.call_function(lib.Tensor.add, (x, w))
    t2 = g.call_function(lib.Tensor.view, (t1, -1))
    t3 = g.call_function(lib.Tensor.__mul__, (t2, 2))
    p = g.call_function(lib.ops.aten.sub, (t3, t3))
    # (not F.linear: PyTorch's is a C function that prints as torch._C._nn.linear)
    sm = g.call_function(lib.nn.functional.softmax, (p,), {"dim": -1})
    g.output({"c": c, "z": z, "r": [r, None], "p": p, "sm": sm})
    return g


def build_methods_and_attrs(fx, lib):
    g = fx.Graph()
    x = g.placeholder("x")
    v = g.call_method("view", (x, 2, 3))
    t = g.call_method("transpose", (v,), {"dim0": 0, "dim1": 1})
    shape = g.call_function(getattr, (t, "shape"))
    first = g.call_function(operator.getitem, (shape, 0))
    dflt = g.call_function(getattr, (t, "missing", None))
    num = g.call_function(getattr, (t, "0"))
    sl = g.call_function(operator.getitem, (t, (slice(None, 2), Ellipsis, None)))
    sl2 = g.call_function(operator.getitem, (t, slice(1, None, 2)))
    g.call_method("add_", (sl2, 1))
    mag = g.call_method("__add__", (sl, first))
    g.output((mag, dflt, num))
    return g


def build_modules(fx, lib):
    g = fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("weight")
    w0 = g.get_attr("layers.0.weight")
    b = g.get_attr("layers.0.bias")
    h = g.call_module("layers.0", (x,))
    h = g.call_module("layers.1", (h,))
    h = g.call_module("myLinear", (h,), {})
    h2 = g.call_module("sub.inner.block", (h,))
    out = g.call_function(operator.add, (h2, w))
    g.output((out, w0, b))
    return g


def build_names(fx, lib):
    g = fx.Graph()
    a = g.placeholder("x")
    b = g.placeholder("x_1")
    c = g.placeholder("*args")
    d = g.placeholder("opt", default_value=3)
    e = g.placeholder("inf_val", default_value=math.inf)
    nodes = []
    for name in ("class", "list", "1abc", "foo.bar", "add", "add", "add_1", "add_7", "add", "self", "inf", "getattr"):
        nodes.append(g.call_function(operator.add, (a, b), name=name))
    nodes.append(g.call_function(operator.add, (a, b)))
    nodes.append(g.call_method("__mul__", (a, d)))
    nodes.append(g.call_method("camelCaseMethod", (c, e)))
    g.output(nodes)
    return g


def build_types(fx, lib):
    g = fx.Graph()
    x = g.placeholder("x", type_expr=lib.Tensor)
    n = g.placeholder("n", type_expr=int)
    ls = g.placeholder("ls", type_expr=list[int])
    o = g.placeholder("o", type_expr=typing.Optional[int])  # noqa: UP045  (the typing form prints differently)
    y = g.call_function(operator.mul, (x, n), type_expr=lib.Tensor)
    z = g.call_function(operator.getitem, (ls, 0), type_expr=int)
    g.output((y, z, o), type_expr=tuple)
    return g


def build_constants(fx, lib):
    g = fx.Graph()
    x = g.placeholder("x")
    k = g.call_function(
        lib.full,
        ([2, 2], math.nan),
        {"dtype": lib.float16, "layout": None, "requires_grad": False, "names": "s", "c": 1 + 2j, "b": b"xy"},
    )
    y = g.call_function(operator.add, (x, -math.inf))
    g.call_function(lib.relu, (x,))  # unused: freed right after it runs
    g.output(None if lib is None else [k, y])
    return g


def build_empty(fx, lib):
    g = fx.Graph()
    g.placeholder("x")
    g.output(None)
    return g


def build_no_output(fx, lib):
    g = fx.Graph()
    x = g.placeholder("x")
    g.call_function(operator.add, (x, 1))
    return g


BUILDERS = [
    build_operators,
    build_functions,
    build_methods_and_attrs,
    build_modules,
    build_names,
    build_types,
    build_constants,
    build_empty,
    build_no_output,
]


def _as_ember(text: str) -> str:
    return text.replace("torch", "ember")


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
def test_code_equals_torch_fx(builder):
    theirs = builder(torch.fx, torch)
    ours = builder(ember.fx, ember)
    assert ours.python_code("self").src == _as_ember(theirs.python_code("self").src)


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
def test_str_equals_torch_fx(builder):
    theirs = builder(torch.fx, torch)
    ours = builder(ember.fx, ember)
    assert str(ours) == _as_ember(str(theirs))
    assert [n.name for n in ours.nodes] == [n.name for n in theirs.nodes]
    assert [len(n.users) for n in ours.nodes] == [len(n.users) for n in theirs.nodes]


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
def test_code_with_other_root_name(builder):
    theirs = builder(torch.fx, torch)
    ours = builder(ember.fx, ember)
    assert ours.python_code("root_mod").src == _as_ember(theirs.python_code("root_mod").src)


def _with_stack_traces(fx, lib):
    g = build_functions(fx, lib)
    traces = [
        'File "/a/model.py", line 10, in forward\n    x = model.relu(x)\n',
        'File "/a/model.py", line 10, in forward\n    x = model.relu(x)\n',
        'Traceback:\n  File "/a/b.py", line 3, in outer\n    inner()\n  File "/a/model.py", line 12, in inner\n'
        "    return F.relu(y, inplace=False)\n",
        "garbage without a frame",
    ]
    for node, trace in zip([n for n in g.nodes if n.op == "call_function"], traces, strict=False):
        node.stack_trace = trace
    return g


def test_verbose_code_with_stack_traces_equals_torch_fx():
    theirs = _with_stack_traces(torch.fx, torch)
    ours = _with_stack_traces(ember.fx, ember)
    assert ours.python_code("self", verbose=True).src == _as_ember(theirs.python_code("self", verbose=True).src)
    assert ours.python_code("self", verbose=True, colored=True).src == _as_ember(
        theirs.python_code("self", verbose=True, colored=True).src
    )


def test_print_readable_equals_torch_fx():
    theirs_g = _with_stack_traces(torch.fx, torch)
    ours_g = _with_stack_traces(ember.fx, ember)
    theirs = torch.fx.GraphModule(torch.nn.Module(), theirs_g)
    ours = ember.fx.GraphModule(ember.nn.Module(), ours_g)
    assert ours.print_readable(print_output=False) == _as_ember(theirs.print_readable(print_output=False))


def test_node_copy_keeps_names_as_torch_fx():
    def build(fx, lib):
        src = build_functions(fx, lib)
        dst = fx.Graph()
        dst.placeholder("x")
        env = {}
        out = dst.graph_copy(src, env)
        dst.output(out)
        return dst

    assert str(build(ember.fx, ember)) == _as_ember(str(build(torch.fx, torch)))
    assert build(ember.fx, ember).python_code("self").src == _as_ember(build(torch.fx, torch).python_code("self").src)


def test_format_node_equals_torch_fx():
    theirs = build_names(torch.fx, torch)
    ours = build_names(ember.fx, ember)
    for a, b in zip(ours.nodes, theirs.nodes, strict=True):
        assert a.format_node() == _as_ember(b.format_node())


# -- running the graphs ----------------------------------------------------------------------------


def _root(lib):
    root = lib.nn.Module()
    root.layers = lib.nn.Sequential(lib.nn.Linear(4, 4), lib.nn.ReLU())
    root.proj = lib.nn.Linear(4, 3)
    root.register_buffer("scale", lib.ones(3) * 2)
    return root


def build_runnable(fx, lib):
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y")
    scale = g.get_attr("scale")
    w = g.get_attr("layers.0.weight")
    h = g.call_module("layers.0", (x,))
    h = g.call_module("layers.1", (h,))
    p = g.call_module("proj", (h,))
    p = g.call_function(operator.mul, (p, scale))
    t = g.call_function(lib.ops.aten.add.Tensor, (p, y), {"alpha": 0.5})
    m = g.call_function(lib.ops.aten.mm.default, (x, w))
    s = g.call_method("sum", (m,), {"dim": 1, "keepdim": True})
    v = g.call_method("view", (s, -1))
    n = g.call_function(operator.neg, (t,))
    r = g.call_function(lib.nn.functional.relu, (n,), {"inplace": False})
    q = g.call_function(operator.truediv, (r, 4.0))
    shape = g.call_function(getattr, (q, "shape"))
    dim0 = g.call_function(operator.getitem, (shape, 0))
    sl = g.call_function(operator.getitem, (q, (slice(None, None, None), slice(0, 2, None))))
    e = g.call_function(lib.exp, (sl,))
    g.output((e, v, dim0, g.call_function(operator.add, (q, 1))))
    return g


def test_running_equals_torch_fx():
    import numpy as np

    theirs_root = _root(torch)
    ours_root = _root(ember)
    ours_root.load_state_dict({k: ember.tensor(v.detach().numpy().copy()) for k, v in theirs_root.state_dict().items()})
    theirs = torch.fx.GraphModule(theirs_root, build_runnable(torch.fx, torch))
    ours = ember.fx.GraphModule(ours_root, build_runnable(ember.fx, ember))
    assert ours.code == _as_ember(theirs.code)
    assert str(ours.graph) == _as_ember(str(theirs.graph))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    y = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    expected = theirs(torch.from_numpy(x), torch.from_numpy(y))
    for got in (
        ours(ember.tensor(x), ember.tensor(y)),
        ember.fx.Interpreter(ours).run(ember.tensor(x), ember.tensor(y)),
    ):
        assert got[2] == expected[2]
        for a, b in zip((got[0], got[1], got[3]), (expected[0], expected[1], expected[3]), strict=True):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_graph_module_copies_what_the_graph_reads_as_torch_fx():
    theirs = torch.fx.GraphModule(_root(torch), build_runnable(torch.fx, torch))
    ours = ember.fx.GraphModule(_root(ember), build_runnable(ember.fx, ember))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert type(ours).__name__ == type(theirs).__name__ == "GraphModule"


def test_dead_code_elimination_as_torch_fx():
    def build(fx, lib):
        g = fx.Graph()
        x = g.placeholder("x")
        unused = g.call_function(operator.add, (x, 1))
        g.call_function(lib.relu, (unused,))
        g.call_function(lib.ops.aten.add_.Tensor, (x, x))  # mutates its input: kept
        g.call_function(lib.ops.aten.mul.Tensor, (x, x))  # pure and unused: removed
        g.call_function(operator.setitem, (x, 0, 1.0))  # side effect: kept
        g.call_function(lib.ops.aten.rand.default, ([2],))  # random: kept
        g.output(g.call_function(operator.mul, (x, 2)))
        changed = g.eliminate_dead_code()
        return g, changed

    theirs, theirs_changed = build(torch.fx, torch)
    ours, ours_changed = build(ember.fx, ember)
    assert ours_changed == theirs_changed
    assert str(ours) == _as_ember(str(theirs))
    assert ours.python_code("self").src == _as_ember(theirs.python_code("self").src)


def _transformed(fx, lib):
    root = _root(lib)
    gm = fx.GraphModule(root, build_runnable(fx, lib))
    for n in gm.graph.nodes:
        n.meta.update(stack_trace=f'File "m.py", line 1, in forward\n    {n.name}\n', nn_module_stack={"k": 1}, val=0)

    class Rewrite(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is lib.exp:
                return super().call_function(lib.sigmoid, args, kwargs)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            out = super().call_method(target, args, kwargs)
            return out.neg() if target == "view" else out

        def call_module(self, target, args, kwargs):
            return super().call_module(target, args, kwargs) + 1

    return fx.Transformer(gm).transform(), Rewrite(gm).transform()


def test_transformer_equals_torch_fx():
    theirs_same, theirs_new = _transformed(torch.fx, torch)
    ours_same, ours_new = _transformed(ember.fx, ember)
    for ours, theirs in ((ours_same, theirs_same), (ours_new, theirs_new)):
        assert ours.code == _as_ember(theirs.code)
        assert str(ours.graph) == _as_ember(str(theirs.graph))
        assert ours.print_readable(print_output=False) == _as_ember(theirs.print_readable(print_output=False))
        for a, b in zip(ours.graph.nodes, theirs.graph.nodes, strict=True):
            assert sorted(a.meta) == sorted(k for k in b.meta if k not in ("from_node", "seq_nr"))


def _with_values(fx, lib):
    import enum

    class Recompute(enum.Enum):
        MUST_SAVE = 1

    g = build_runnable(fx, lib)
    for i, n in enumerate(g.nodes):
        if n.op == "output":
            continue
        if i % 3 == 0:
            n.meta["val"] = lib.zeros((2, 3 + i), dtype=lib.float32).t()
        elif i % 3 == 1:
            n.meta["val"] = lib.ones(4, dtype=lib.int64)
        if i % 4 == 0:
            n.meta["custom"] = {"tag": i, "long": "x" * 50}
        if i % 5 == 0:
            n.meta["seq_nr"] = i
            n.meta["recompute"] = Recompute.MUST_SAVE
        if i % 7 == 0:
            n.meta["ac_graph_id"] = 3
        n.stack_trace = f'File "m.py", line {i // 2}, in forward\n    line{i // 2}\n'
    return g


@pytest.mark.parametrize("stride_device", [(False, False), (True, False), (True, True)])
def test_verbose_code_with_values_equals_torch_fx(stride_device):
    stride, device = stride_device
    theirs = _with_values(torch.fx, torch)
    ours = _with_values(ember.fx, ember)
    kw = {"verbose": True, "include_stride": stride, "include_device": device, "additional_meta": ["seq_nr"]}
    assert ours.python_code("self", **kw).src == _as_ember(theirs.python_code("self", **kw).src)
    kw["colored"] = True
    assert ours.python_code("self", **kw).src == _as_ember(theirs.python_code("self", **kw).src)


def test_format_node_with_tensor_metadata_equals_torch_fx():
    theirs = _with_values(torch.fx, torch)
    ours = _with_values(ember.fx, ember)
    for a, b in zip(ours.nodes, theirs.nodes, strict=True):
        assert a.format_node(include_tensor_metadata=True) == _as_ember(b.format_node(include_tensor_metadata=True))
