"""Graph and Node editing, checking and printing (no oracle needed)."""

from __future__ import annotations

import copy
import operator

import pytest

import ember
import ember.fx as fx
from ember.fx.immutable_collections import immutable_dict, immutable_list


def _chain() -> tuple[fx.Graph, list[fx.Node]]:
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.add, (x, 1))
    b = g.call_function(operator.mul, (a, 2))
    out = g.output(b)
    return g, [x, a, b, out]


def test_users_and_inputs_follow_assignments():
    _g, (x, a, b, _out) = _chain()
    assert list(x.users) == [a]
    assert b.all_input_nodes == [a]
    b.args = (x, x)
    assert list(a.users) == []
    assert list(x.users) == [a, b]
    assert b.all_input_nodes == [x]
    b.update_arg(1, a)
    assert b.args == (x, a) and list(a.users) == [b]
    b.update_kwarg("k", [x, {"y": a}])
    assert b.kwargs == {"k": [x, {"y": a}]}
    assert isinstance(b.kwargs, immutable_dict) and isinstance(b.kwargs["k"], immutable_list)
    b.kwargs = {}
    b.insert_arg(0, 5)
    assert b.args == (5, x, a)


def test_arguments_are_immutable():
    g = fx.Graph()
    x = g.placeholder("x")
    n = g.call_function(ember.cat, ([x, x],), {"dim": 0})
    with pytest.raises(NotImplementedError, match="does not support mutation"):
        n.args[0].append(x)
    with pytest.raises(NotImplementedError, match="does not support mutation"):
        n.kwargs["dim"] = 1
    assert hash(n.args[0]) == hash((x, x))
    assert copy.deepcopy(immutable_list([1, [2]])) == [1, [2]]


def test_map_arg_and_map_aggregate_keep_structure():
    _g, (x, a, b, _) = _chain()
    arg = (x, [a, 3], {"k": b}, slice(x, None, 2))
    mapped = fx.map_arg(arg, lambda n: n.name)
    assert mapped == ("x", ["add", 3], {"k": "mul"}, slice("x", None, 2))
    from ember.fx.node import map_aggregate

    assert map_aggregate((1, [2, (3,)]), lambda v: v * 10) == (10, [20, (30,)])
    with pytest.raises(AssertionError, match="callable"):
        fx.map_arg(arg, 3)


def test_replace_all_uses_with():
    g, (x, a, b, _out) = _chain()
    with g.inserting_after(a):
        c = g.call_function(operator.sub, (x, 1))
    c.meta["unused"] = True
    a.meta["val"] = 1
    with pytest.raises(AssertionError, match=r"already has \.meta"):
        a.replace_all_uses_with(c, propagate_meta=True)
    del c.meta["unused"]
    changed = a.replace_all_uses_with(c, propagate_meta=True)
    assert changed == [b] and b.args == (c, 2) and c.meta == {"val": 1}
    assert not a.users
    g.erase_node(a)
    g.lint()
    # delete_user_cb picks which users change
    d = g.call_function(operator.neg, (c,))
    g2_users = c.replace_all_uses_with(x, delete_user_cb=lambda user: user is d)
    assert g2_users == [d] and d.args == (x,) and b.args == (c, 2)


def test_replace_input_with():
    _g, (x, a, b, _out) = _chain()
    b.replace_input_with(a, x)
    assert b.args == (x, 2) and not a.users


def test_erase_node_with_users_raises():
    g, (_x, a, b, out) = _chain()
    with pytest.raises(RuntimeError, match="still had 1 users"):
        g.erase_node(a)
    other, _ = _chain()
    with pytest.raises(RuntimeError, match="wrong graph"):
        other.erase_node(out)
    g.erase_node(out)
    g.erase_node(b)
    assert [n.name for n in g.nodes] == ["x", "add"] and len(g.nodes) == 2
    assert list(a.users) == []
    with pytest.warns(UserWarning, match="already erased"):
        g.erase_node(b)


def test_iteration_survives_erasing_the_current_node():
    g, _nodes = _chain()
    seen = []
    for n in reversed(g.nodes):
        seen.append(n.name)
        if not n.users:
            g.erase_node(n)
    assert seen == ["output", "mul", "add", "x"]
    assert len(g.nodes) == 0


def test_inserting_before_and_after():
    g, (x, a, b, _out) = _chain()
    with g.inserting_before(b):
        c = g.call_function(operator.neg, (a,))
        d = g.call_function(operator.neg, (c,))
    with g.inserting_after(x):
        e = g.call_function(operator.pos, (x,))
    with g.inserting_before():
        f = g.placeholder("first")
    with g.inserting_after():
        pass
    assert [n.name for n in g.nodes] == ["first", "x", "pos", "add", "neg", "neg_1", "mul", "output"]
    assert (c.prev, c.next, d.next, e.prev) == (a, d, b, x)
    assert f.prev is g._root
    # after the with-block, new nodes go to the end again
    g.call_function(operator.abs, (x,))
    assert list(g.nodes)[-1].name == "abs_1"
    # moving an existing node
    b.append(e)
    assert [n.name for n in g.nodes][-4:] == ["mul", "pos", "output", "abs_1"]
    other, _ = _chain()
    with pytest.raises(AssertionError):
        other.inserting_before(b)


def test_lint_finds_use_before_definition():
    g, (_x, a, b, _out) = _chain()
    b.append(a)  # a now comes after its user
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        g.lint()


def test_lint_finds_foreign_nodes_and_duplicate_names():
    g, (_x, a, b, _out) = _chain()
    _other, (ox, *_) = _chain()
    b.args = (ox, 2)
    with pytest.raises(RuntimeError, match="does not belong to this Graph"):
        g.lint()
    b.args = (a, 2)
    b.name = "add"
    with pytest.raises(RuntimeError, match="Node redefined name add!"):
        g.lint()


def test_lint_checks_targets_on_the_owning_module():
    root = ember.nn.Module()
    root.lin = ember.nn.Linear(2, 2)
    root.flag = 3
    g = fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_module("lin", (x,)))
    gm = fx.GraphModule(root, g)
    gm.graph.lint()
    with gm.graph.inserting_before(gm.graph.output_node()), pytest.warns(UserWarning, match="no underlying reference"):
        gm.graph.get_attr("missing")
    with pytest.raises(RuntimeError, match="references nonexistent attribute missing"):
        gm.graph.lint()


def test_lint_checks_call_module_targets_are_modules():
    root = ember.nn.Module()
    root.lin = ember.nn.Linear(2, 2)
    g = fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_module("lin", (x,)))
    gm = fx.GraphModule(root, g)
    with pytest.warns(UserWarning, match="no underlying reference"):
        n = gm.graph.call_module("lin.weight", (x,))
    with pytest.raises(RuntimeError, match=r"does not reference an nn\.Module"):
        gm.graph.lint()
    gm.graph.erase_node(n)


def test_node_construction_checks_targets():
    g = fx.Graph()
    with pytest.raises(ValueError, match="but a Callable is expected"):
        g.call_function("relu")
    with pytest.raises(ValueError, match="but a str is expected"):
        g.call_module(ember.relu)
    with pytest.raises(AssertionError):
        g.create_node("bogus", "x")


def test_dead_code_keeps_impure_nodes():
    g = fx.Graph()
    x = g.placeholder("x")
    unused = g.call_function(operator.add, (x, 1))
    g.call_function(operator.neg, (unused,))
    g.call_function(ember.ops.aten.add_.Tensor, (x, x))
    g.call_function(ember.ops.aten.add.out, (x, x), {"out": x})
    g.call_function(ember.ops.aten.mul.Tensor, (x, x))
    g.output(x)
    assert g.eliminate_dead_code()
    assert [n.name for n in g.nodes] == ["x", "add__tensor", "add_out", "output"]
    assert not g.eliminate_dead_code()
    # a custom purity test
    g.eliminate_dead_code(is_impure_node=lambda n: n.op in ("placeholder", "output"))
    assert [n.name for n in g.nodes] == ["x", "output"]


def test_has_side_effect_marks_a_function():
    def log_it(v):
        return None

    fx.has_side_effect(log_it)
    g = fx.Graph()
    x = g.placeholder("x")
    g.call_function(log_it, (x,))
    g.output(x)
    assert not g.eliminate_dead_code()


def test_impure_module_is_kept():
    class Impure(ember.nn.Module):
        _is_impure = True

        def forward(self, x):
            return x

    root = ember.nn.Module()
    root.imp = Impure()
    root.pure = ember.nn.ReLU()
    g = fx.Graph()
    x = g.placeholder("x")
    g.call_module("imp", (x,))
    g.call_module("pure", (x,))
    g.output(x)
    gm = fx.GraphModule(root, g)
    assert gm.graph.eliminate_dead_code()
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "call_module", "output"]
    assert next(n for n in gm.graph.nodes if n.op == "call_module").target == "imp"


def test_node_copy_and_graph_copy():
    g, (_x, a, b, out) = _chain()
    a.meta["k"] = [1]
    new = fx.Graph()
    y = new.placeholder("y")
    a2 = new.node_copy(a, lambda n: y)
    assert a2.args == (y, 1) and a2.name == "add" and a2.meta == {"k": [1]} and a2.meta is not a.meta
    val_map = {}
    g2 = fx.Graph()
    rv, old_out = g2.graph_copy(g, val_map, return_output_node=True)
    assert old_out is out and rv is val_map[b]
    g2.output(rv)
    g2.lint()
    assert str(g2) == str(g)
    assert g2.graph_copy(fx.Graph(), {}) is None


def test_deepcopy_is_independent():
    g, (_x, a, b, _out) = _chain()
    b.meta["tag"] = "t"
    g2 = copy.deepcopy(g)
    assert str(g2) == str(g)
    assert g2.python_code("self").src == g.python_code("self").src
    n2 = list(g2.nodes)
    assert all(n.graph is g2 for n in n2)
    assert n2[2].meta == {"tag": "t"}
    n2[2].args = (n2[0], 3)
    assert b.args == (a, 2)


def test_find_nodes():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.add, (x, 1))
    m = g.call_method("view", (a, -1))
    b = g.call_function(operator.add, (m, 1))
    g.output(b)
    assert g.find_nodes(op="call_function", target=operator.add) == [a, b]
    assert g.find_nodes(op="call_method") == [m]
    assert g.find_nodes(op="call_method", target="relu") == []
    assert g.find_nodes(op="placeholder") == [x]
    with pytest.raises(AssertionError):
        g.find_nodes(op="call_function")
    assert g.output_node().op == "output"
    # the lookup follows edits: new targets, moved and erased nodes
    a.target = operator.sub
    assert g.find_nodes(op="call_function", target=operator.add) == [b]
    assert g.find_nodes(op="call_function", target=operator.sub) == [a]
    m.append(a)
    b.append(m)
    assert g.find_nodes(op="call_method", target="view") == [m]
    with g.inserting_before(a):
        c = g.call_function(operator.add, (x, 2))
    assert g.find_nodes(op="call_function", target=operator.add) == [c, b]
    assert g.find_nodes(op="call_function", target=operator.add, sort=False) == [b, c]
    m.op = "call_function"
    m.target = ember.Tensor.view
    assert g.find_nodes(op="call_method") == [] and g.find_nodes(op="call_function", target=ember.Tensor.view) == [m]
    b.replace_all_uses_with(c)
    g.erase_node(b)
    assert g.find_nodes(op="call_function", target=operator.add) == [c]


def test_stack_trace_reads_and_writes_meta():
    g, (_x, a, _b, _out) = _chain()
    assert a.stack_trace is None
    a.stack_trace = 'File "f.py", line 3, in g\n    y = x + 1\n'
    assert a.meta["stack_trace"].startswith("File")
    src = g.python_code("self", verbose=True).src
    assert "# File: f.py:3 in g, code: y = x + 1\n    add = x + 1" in src
    assert "# No stacktrace found for following nodes\n    mul = add * 2" in src


def test_print_tabular(capsys):
    g, _ = _chain()
    g.print_tabular()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert set(lines[1]) <= {"-", " "}
    assert lines[3].split()[:2] == ["call_function", "add"]
    assert lines[3].index("add") == lines[0].index("name")
    assert len(lines) == 2 + 4


def test_on_generate_code_transforms_the_body():
    g, _ = _chain()

    def make(prev):
        def insert_comment(body):
            return ["# generated\n", *(prev(body) if prev else body)]

        return insert_comment

    with g.on_generate_code(make):
        assert "    # generated\n    add = x + 1" in g.python_code("self").src
        with g.on_generate_code(make):
            assert g.python_code("self").src.count("# generated") == 2
    assert "# generated" not in g.python_code("self").src


def test_generated_names_never_shadow_globals():
    g = fx.Graph()
    x = g.placeholder("relu")
    r = g.call_function(ember.nn.functional.relu, (x,))
    r2 = g.call_function(operator.not_, (r,))
    e = g.call_function(ember.relu, (r,), name="ember")
    g.output((r2, e))
    code = g.python_code("self")
    assert "ember_1 = ember.relu(relu_1)" in code.src
    assert code.globals["ember"] is ember
    ns = dict(code.globals)
    exec(code.src, ns)
    not_relu, relu = ns["forward"](None, ember.tensor(-1.0))
    assert not_relu is True and relu.item() == 0.0


def test_node_rename_and_repr():
    g, (_x, a, b, _out) = _chain()
    a._rename("renamed")
    assert repr(a) == "renamed" and "renamed = x + 1" in g.python_code("self").src
    c = g.call_function(operator.neg, (b,), name="renamed")
    assert c.name == "renamed_1"


def test_nodes_compare_by_their_place_in_the_graph():
    import random

    g = fx.Graph()
    x = g.placeholder("x")
    nodes = [x]
    rng = random.Random(0)
    for _ in range(300):
        anchor = rng.choice(nodes)
        with g.inserting_before(anchor) if rng.random() < 0.5 else g.inserting_after(anchor):
            nodes.append(g.call_function(operator.neg, (x,)))
        a, b = rng.choice(nodes), rng.choice(nodes)
        if rng.random() < 0.2 and a is not b:
            a.append(b)
    order = list(g.nodes)
    assert all(order[i] < order[i + 1] and order[i + 1] > order[i] for i in range(len(order) - 1))
    assert sorted(reversed(order)) == order
    assert order[0] <= order[0] and order[0] >= order[0]


def test_dead_code_elimination_reaches_child_graph_modules():
    inner_g = fx.Graph()
    y = inner_g.placeholder("y")
    inner_g.call_function(operator.neg, (y,))  # dead
    inner_g.output(y)
    root = ember.nn.Module()
    root.sub = fx.GraphModule(ember.nn.Module(), inner_g)
    g = fx.Graph()
    x = g.placeholder("x")
    sub = g.get_attr("sub")
    g.output((x, sub))
    gm = fx.GraphModule(root, g)
    assert gm.graph.eliminate_dead_code()
    assert [n.op for n in gm.sub.graph.nodes] == ["placeholder", "output"]
    assert "neg" not in gm.sub.code


def test_normalized_arguments_says_it_is_missing():
    _g, (_x, a, _b, _out) = _chain()
    with pytest.raises(NotImplementedError, match="normalized_arguments is not supported"):
        a.normalized_arguments(ember.nn.Module())
