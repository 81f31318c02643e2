"""ember.fx.pattern_matcher: matches, wildcards, constraints and replacements on op-level graphs.

No oracle: each replacement is checked by running the graph before and after on the same real
inputs, and by which ops the rewritten graph calls.
"""

import operator

import numpy as np
import pytest

import ember
import ember.fx
from ember.fx.passes.shape_prop import ShapeProp
from ember.fx.pattern_matcher import (
    MULTIPLE,
    Arg,
    CallFunction,
    CallFunctionVarArgs,
    CallMethod,
    Ignored,
    KeywordArg,
    ListOf,
    PatternMatcherPass,
    register_graph_pattern,
    register_replacement,
    trace_fn,
)
from ember.ops import aten


def _rand(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(np.float32))


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op in ("call_function", "call_method")]


def _run_same(gm, rewrite, *inputs):
    """Rewrite ``gm`` with ``rewrite(gm) -> count``; the results must not change."""
    before = gm(*inputs)
    count = rewrite(gm)
    gm.graph.lint()
    after = gm(*inputs)
    before, after = (before, after) if isinstance(before, tuple) else ((before,), (after,))
    for a, b in zip(after, before, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    return count


def linear_pattern(x, w, b):
    return aten.add.Tensor(aten.mm.default(x, aten.t.default(w)), b)


def addmm_replacement(x, w, b):
    return aten.addmm.default(b, x, aten.t.default(w))


def _fuse_pass(**kwargs):
    pm = PatternMatcherPass()
    pm.register(linear_pattern, addmm_replacement, **kwargs)
    return pm


def two_layers(x, w1, b1, w2, b2):
    h = aten.relu.default(aten.add.Tensor(aten.mm.default(x, aten.t.default(w1)), b1))
    return aten.add.Tensor(aten.mm.default(h, aten.t.default(w2)), b2)


TWO_LAYER_INPUTS = (_rand(3, 4), _rand(5, 4, 1)[..., 0], _rand(5), _rand(2, 5, 1)[..., 0], _rand(2))


def test_traced_pattern_is_a_tree_of_calls():
    pm = _fuse_pass()
    (entry,) = pm.patterns[("call_function", aten.add.Tensor)]
    assert repr(entry.pattern) == (
        "CallFunction(aten.add.Tensor, CallFunction(aten.mm.default, KeywordArg('x'), "
        "CallFunction(aten.t.default, KeywordArg('w'))), KeywordArg('b'))"
    )


def test_fuse_every_occurrence():
    gm = trace_fn(two_layers)
    assert _run_same(gm, _fuse_pass().apply, *TWO_LAYER_INPUTS) == 2
    targets = _targets(gm)
    assert targets.count(aten.addmm.default) == 2
    assert aten.mm.default not in targets and aten.add.Tensor not in targets
    # The replacement sits where the matched root was: before its user.
    names = [n.name for n in gm.graph.nodes]
    assert names.index("relu") > names.index(next(n.name for n in gm.graph.nodes if n.target is aten.addmm.default))


def test_graph_built_with_the_graph_api():
    g = ember.fx.Graph()
    x, w, b = g.placeholder("x"), g.placeholder("w"), g.placeholder("b")
    t = g.call_function(aten.t.default, (w,))
    mm = g.call_function(aten.mm.default, (x, t))
    add = g.call_function(aten.add.Tensor, (mm, b), {"alpha": 1})  # the default, spelled out
    g.output(g.call_function(aten.neg.default, (add,)))
    gm = ember.fx.GraphModule(ember.nn.Module(), g)
    assert _run_same(gm, _fuse_pass().apply, _rand(3, 4), _rand(5, 4, 1)[..., 0], _rand(5)) == 1
    assert aten.addmm.default in _targets(gm)


def test_a_different_literal_does_not_match():
    g = ember.fx.Graph()
    x, w, b = g.placeholder("x"), g.placeholder("w"), g.placeholder("b")
    mm = g.call_function(aten.mm.default, (x, g.call_function(aten.t.default, (w,))))
    g.output(g.call_function(aten.add.Tensor, (mm, b), {"alpha": 2}))
    gm = ember.fx.GraphModule(ember.nn.Module(), g)
    code = gm.code
    assert _fuse_pass().apply(gm) == 0
    assert gm.code == code


def test_extra_check_from_shapes():
    # Only fuse when the batch is larger than 4: the first layer's x has 3 rows, so it stays.
    def big_batch(match):
        return match.kwargs["x"].meta["tensor_meta"].shape[0] > 4

    gm = trace_fn(two_layers)
    inputs = (_rand(3, 4), _rand(8, 4), _rand(8), _rand(2, 8), _rand(2))
    ShapeProp(gm).propagate(*inputs)
    assert _run_same(gm, _fuse_pass(extra_check=big_batch).apply, *inputs) == 0

    inputs = (_rand(6, 4), _rand(8, 4), _rand(8), _rand(2, 8), _rand(2))
    gm = trace_fn(two_layers)
    ShapeProp(gm).propagate(*inputs)
    assert _run_same(gm, _fuse_pass(extra_check=big_batch).apply, *inputs) == 2


def test_extra_check_sees_bound_values():
    seen = []

    def check(match):
        seen.append(sorted(match.kwargs))
        return False

    gm = trace_fn(two_layers)
    code = gm.code
    assert _fuse_pass(extra_check=check).apply(gm) == 0
    assert seen == [["b", "w", "x"], ["b", "w", "x"]]
    assert gm.code == code


def test_intermediate_read_elsewhere_is_not_matched():
    def f(x, w, b):
        y = aten.mm.default(x, aten.t.default(w))
        return aten.add.Tensor(y, b), aten.relu.default(y)

    gm = trace_fn(f)
    assert _fuse_pass().apply(gm) == 0

    # Unless the pattern says that the mm may have other users: then it stays for them.
    pm = PatternMatcherPass()
    pattern = CallFunction(
        aten.add.Tensor,
        CallFunction(aten.mm.default, KeywordArg("x"), CallFunction(aten.t.default, KeywordArg("w")), _users=MULTIPLE),
        KeywordArg("b"),
    )
    pm.register(pattern, addmm_replacement)
    assert _run_same(gm, pm.apply, _rand(3, 4), _rand(5, 4, 1)[..., 0], _rand(5)) == 1
    assert _targets(gm).count(aten.mm.default) == 1 and aten.addmm.default in _targets(gm)


def test_keyword_arg_used_twice_binds_one_value():
    def pattern(x):
        return aten.mul.Tensor(x, x)

    def replacement(x):
        return aten.mul.Tensor(aten.abs.default(x), aten.abs.default(x))

    def f(a, b):
        return aten.add.Tensor(aten.mul.Tensor(a, a), aten.mul.Tensor(a, b))

    pm = PatternMatcherPass()
    register_replacement(pattern, replacement, pm)
    gm = trace_fn(f)
    assert _run_same(gm, pm.apply, _rand(3), _rand(3, seed=1)) == 1
    # mul(a, a) was replaced; mul(a, b) is still there.
    assert _targets(gm).count(aten.abs.default) == 2
    assert any(n.target is aten.mul.Tensor and [a.name for a in n.args] == ["a", "b"] for n in gm.graph.nodes)


def test_shared_subexpression_must_be_one_node():
    # The pattern computes neg(x) once and uses it twice; two separate negs do not match.
    def pattern(x):
        n = aten.neg.default(x)
        return aten.mul.Tensor(n, n)

    def replacement(x):
        return aten.mul.Tensor(x, x)

    def one_neg(x):
        n = aten.neg.default(x)
        return aten.mul.Tensor(n, n)

    def two_negs(x):
        return aten.mul.Tensor(aten.neg.default(x), aten.neg.default(x))

    pm = PatternMatcherPass()
    pm.register(pattern, replacement)
    assert _run_same(trace_fn(one_neg), pm.apply, _rand(4)) == 1
    assert pm.apply(trace_fn(two_negs)) == 0


def test_arg_ignored_and_positional_binding():
    calls = []
    pm = PatternMatcherPass()

    @register_graph_pattern(CallFunction(aten.clamp.default, Arg(), Ignored(), Arg()), pm)
    def clamp_max_only(match, x, hi):
        calls.append((x.name, hi))
        match.replace_with(lambda x, hi: aten.clamp_max.default(x, hi))

    def f(x):
        return aten.clamp.default(aten.relu.default(x), -1.0, 0.5)

    gm = trace_fn(f)
    assert _run_same(gm, pm.apply, _rand(6)) == 1
    assert calls == [("relu", 0.5)]
    assert aten.clamp_max.default in _targets(gm)


def test_list_of_and_literal_lists():
    matched = []
    pm2 = PatternMatcherPass()

    @register_graph_pattern(
        CallFunction(aten.cat.default, ListOf(CallFunction(aten.relu.default, Ignored())), KeywordArg("dim")), pm2
    )
    def record(match, dim):
        matched.append((dim, len(match.nodes)))

    def all_relu(x, y):
        return aten.cat.default([aten.relu.default(x), aten.relu.default(y)], 1)

    def one_relu(x, y):
        return aten.cat.default([aten.relu.default(x), y], 1)

    assert pm2.apply(trace_fn(all_relu)) == 1
    assert pm2.apply(trace_fn(one_relu)) == 0
    assert matched == [(1, 3)]

    # A literal list in the pattern matches element by element.
    pm3 = PatternMatcherPass()
    pm3.register(CallFunction(aten.permute.default, KeywordArg("x"), [1, 0]), lambda x: aten.t.default(x))

    def f(x, y):
        return aten.add.Tensor(aten.permute.default(x, [1, 0]), aten.permute.default(y, [0, 1]))

    gm = trace_fn(f)
    assert _run_same(gm, pm3.apply, _rand(3, 3), _rand(3, 3, seed=1)) == 1
    assert _targets(gm).count(aten.permute.default) == 1


def test_var_args_packets_and_alternatives():
    seen = []
    pm = PatternMatcherPass()

    @register_graph_pattern(CallFunctionVarArgs(aten.sum.dim_IntList), pm)
    def any_sum(match):
        seen.append(match.output_node().args[1:])

    @register_graph_pattern(CallFunction([aten.sin.default, aten.cos.default], KeywordArg("x")), pm)
    def trig(match, x):
        seen.append(match.output_node().target)

    @register_graph_pattern(CallFunction(aten.add, Arg(), Arg()), pm)  # an OpOverloadPacket: any overload
    def any_add(match, a, b):
        seen.append((match.output_node().target, b))

    def f(x):
        s = aten.sum.dim_IntList(x, [0], True)
        return aten.add.Tensor(aten.add.Tensor(aten.sin.default(s), aten.cos.default(x)), 2.0)

    assert pm.apply(trace_fn(f)) == 5
    assert aten.cos.default in seen and aten.sin.default in seen and ([0], True) in seen
    assert (aten.add.Tensor, 2.0) in seen


def test_ignore_types_makes_scalars_wildcards():
    def pattern(x):
        return aten.mul.Tensor(aten.add.Tensor(x, 1.0), 2.0)

    def replacement(x):
        return aten.mul.Tensor(aten.add.Tensor(x, 1.0), 2.0)

    def f(x):
        return aten.mul.Tensor(aten.add.Tensor(x, 5.0), 3.0)

    exact, loose = PatternMatcherPass(), PatternMatcherPass()
    seen = []
    exact.register(pattern, replacement)
    loose.register(pattern, replacement, extra_check=lambda m: seen.append(m) or False, ignore_types=(float,))
    assert exact.apply(trace_fn(f)) == 0
    assert loose.apply(trace_fn(f)) == 0 and len(seen) == 1


def test_overlapping_matches_replace_once():
    def pattern(x):
        return aten.neg.default(aten.neg.default(x))

    def replacement(x):
        return aten.clone.default(x)

    def f(x):
        return aten.neg.default(aten.neg.default(aten.neg.default(x)))

    pm = PatternMatcherPass()
    pm.register(pattern, replacement)
    gm = trace_fn(f)
    # The sweep goes from the last node: neg(neg(.)) is replaced at the end; the first neg is left.
    assert _run_same(gm, pm.apply, _rand(5)) == 1
    assert _targets(gm) == [aten.neg.default, aten.clone.default]


def test_replacement_nodes_are_not_revisited():
    # The replacement contains the pattern again: one sweep replaces each original match once.
    def pattern(x):
        return aten.exp.default(x)

    def replacement(x):
        return aten.exp.default(aten.mul.Tensor(x, 1.0))

    pm = PatternMatcherPass()
    pm.register(pattern, replacement)
    gm = trace_fn(lambda x: aten.exp.default(aten.exp.default(x)))
    assert _run_same(gm, pm.apply, _rand(3)) == 2
    assert _targets(gm).count(aten.mul.Tensor) == 2


def test_multi_output_op_and_getitem():
    def pattern(x):
        return aten.max.dim(x, 1)[0]

    def replacement(x):
        return aten.amax.default(x, [1])

    pm = PatternMatcherPass()
    pm.register(pattern, replacement)
    assert _run_same(trace_fn(lambda x: aten.relu.default(aten.max.dim(x, 1)[0])), pm.apply, _rand(3, 4)) == 1

    # The indices are read too: the max node is not only the pattern's, so it is left alone.
    def both(x):
        values, indices = aten.max.dim(x, 1)
        return aten.relu.default(values), indices

    assert pm.apply(trace_fn(both)) == 0


def test_plain_python_functions_and_methods():
    # A graph of ember functions, operators and methods, as symbolic_trace makes it.
    def model(x, y):
        a = ember.relu(x) + y
        return a.sigmoid() * ember.relu(y) + y

    def pattern(p, q):
        return ember.relu(p) + q

    def replacement(p, q):
        return ember.clamp(p, min=0.0) + q

    pm = PatternMatcherPass()
    pm.register(pattern, replacement)
    pm_method = PatternMatcherPass()
    pm_method.register(CallMethod("sigmoid", KeywordArg("x")), lambda x: ember.sigmoid(x))

    gm = ember.fx.symbolic_trace(model)
    x, y = _rand(4), _rand(4, seed=1)
    assert _run_same(gm, pm.apply, x, y) == 1
    assert ember.relu in _targets(gm) and ember.clamp in _targets(gm)
    assert _targets(gm).count(operator.add) == 2
    assert _run_same(gm, pm_method.apply, x, y) == 1
    assert "sigmoid" not in _targets(gm)


def test_apply_on_a_graph():
    gm = trace_fn(two_layers)
    assert _fuse_pass().apply(gm.graph) == 2
    gm.recompile()
    assert aten.addmm.default in _targets(gm)


def test_errors():
    pm = PatternMatcherPass()
    with pytest.raises(TypeError, match="root of a pattern"):
        pm.register(KeywordArg("x"), lambda x: x)
    with pytest.raises(NotImplementedError, match="several outputs"):
        pm.register(lambda x: (aten.neg.default(x), aten.relu.default(x)), lambda x: x)
    with pytest.raises(TypeError, match="plain positional parameters"):
        pm.register(lambda *xs: aten.neg.default(xs[0]), lambda x: x)


def test_replacement_returning_its_argument():
    pm = PatternMatcherPass()
    pm.register(lambda x: aten.neg.default(aten.neg.default(x)), lambda x: x)
    gm = trace_fn(lambda x: aten.relu.default(aten.neg.default(aten.neg.default(x))))
    assert _run_same(gm, pm.apply, _rand(5)) == 1
    assert _targets(gm) == [aten.relu.default]


def test_new_root_takes_the_matched_root_meta():
    gm = trace_fn(two_layers)
    ShapeProp(gm).propagate(*TWO_LAYER_INPUTS)
    expected = [n.meta["tensor_meta"] for n in gm.graph.nodes if n.target is aten.add.Tensor]
    assert _fuse_pass().apply(gm) == 2
    addmms = [n for n in gm.graph.nodes if n.target is aten.addmm.default]
    assert [n.meta["tensor_meta"] for n in addmms] == expected
    # Nodes of the replacement other than its result know nothing yet.
    assert all("tensor_meta" not in n.meta for n in gm.graph.nodes if n.target is aten.t.default)


# -- graphs from make_fx ---------------------------------------------------------------------------


def _model(x, w, b):
    return ember.relu(ember.nn.functional.linear(x, w, b)) + (x @ w.t() + b)


def test_op_pattern_on_a_make_fx_graph():
    from ember.fx.experimental.proxy_tensor import make_fx

    x, w, b = _rand(3, 4), _rand(5, 4, 1)[..., 0], _rand(5)
    gm = make_fx(_model)(x, w, b)
    mms = [n for n in gm.graph.nodes if n.target is aten.mm.default]
    assert _run_same(gm, _fuse_pass().apply, x, w, b) == len(mms) == 1
    assert aten.mm.default not in _targets(gm)


def test_pattern_traced_with_make_fx_from_ember_functions():
    from ember.fx.experimental.proxy_tensor import make_fx

    x, w, b = _rand(3, 4), _rand(5, 4, 1)[..., 0], _rand(5)

    def pattern(x, w, b):
        return x @ w.t() + b

    pm = PatternMatcherPass()
    register_replacement(pattern, addmm_replacement, pm, example_inputs=(x, w, b))
    (entry,) = pm.patterns[("call_function", aten.add.Tensor)]
    assert repr(entry.pattern) == repr(_fuse_pass().patterns[("call_function", aten.add.Tensor)][0].pattern)
    gm = make_fx(_model)(x, w, b)
    assert _run_same(gm, pm.apply, x, w, b) == 1

    with pytest.raises(TypeError, match="3 arguments, 2 example inputs"):
        register_replacement(pattern, addmm_replacement, pm, example_inputs=(x, w))
