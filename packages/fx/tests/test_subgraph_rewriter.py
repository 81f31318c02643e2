"""ember.fx.subgraph_rewriter against torch.fx.subgraph_rewriter on the same programs.

Each case is written once against a library ``lib`` (``torch`` or ``ember``): the module, the
pattern and the replacement. Both libraries trace and rewrite; the matches (count, anchors and
the pattern-to-graph node map, by name), the rewritten code (modulo ``torch`` -> ``ember``) and the
results on equal inputs must be the same.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
torch_fx = pytest.importorskip("torch.fx")
from torch.fx import subgraph_rewriter as torch_rewriter  # noqa: E402

import ember  # noqa: E402
import ember.fx  # noqa: E402
from ember.fx import subgraph_rewriter as ember_rewriter  # noqa: E402


def _fx(lib):
    return torch_fx if lib is torch else ember.fx


def _rewriter(lib):
    return torch_rewriter if lib is torch else ember_rewriter


def _name(x):
    return x.name if hasattr(x, "op") else x


def _matches(matches):
    return [(m.anchor.name, {pn.name: _name(gn) for pn, gn in m.nodes_map.items()}) for m in matches]


def _replaced(replaced):
    return [
        (r.anchor.name, {pn.name: _name(gn) for pn, gn in r.nodes_map.items()}, [n.name for n in r.replacements])
        for r in replaced
    ]


def _inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return [torch.tensor(a) for a in arrays], [ember.tensor(a) for a in arrays]


def _check_run(tgm, egm, shapes):
    targs, eargs = _inputs(shapes)
    t_out, e_out = tgm(*targs), egm(*eargs)
    t_out = t_out if isinstance(t_out, tuple) else (t_out,)
    e_out = e_out if isinstance(e_out, tuple) else (e_out,)
    for a, b in zip(e_out, t_out, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def _rewrite(case, shapes):
    """Run ``case(lib) -> (module, pattern, replacement)`` under both libraries with replace_pattern."""
    out = {}
    for lib in (torch, ember):
        module, pattern, replacement = case(lib)
        gm = _fx(lib).symbolic_trace(module)
        matches = _rewriter(lib).replace_pattern(gm, pattern, replacement)
        gm.graph.lint()
        out[lib] = (gm, matches)
    (tgm, tm), (egm, em) = out[torch], out[ember]
    assert _matches(em) == _matches(tm)
    assert egm.code == tgm.code.replace("torch", "ember")
    _check_run(tgm, egm, shapes)
    return em


def case_neg_to_relu(lib):
    class M(lib.nn.Module):
        def forward(self, x):
            val = lib.neg(x)
            return lib.add(val, val)

    def pattern(x):
        return lib.neg(x)

    def replacement(x):
        return lib.relu(x)

    return M(), pattern, replacement


def case_cat_to_stack(lib):
    class M(lib.nn.Module):
        def forward(self, x, w1, w2):
            m1 = lib.cat([w1, w2]).sum()
            m2 = lib.cat([w1, w2]).sum()
            return x + lib.max(m1) + lib.max(m2)

    def pattern(w1, w2):
        return lib.cat([w1, w2])

    def replacement(w1, w2):
        return lib.stack([w1, w2])

    return M(), pattern, replacement


def case_internal_value_leaks(lib):
    # The pattern's intermediate (neg) is read outside the match: not self-contained, no match.
    class M(lib.nn.Module):
        def forward(self, x):
            a = lib.neg(x)
            b = lib.relu(a)
            return a + b

    def pattern(x):
        return lib.relu(lib.neg(x))

    def replacement(x):
        return lib.sigmoid(x)

    return M(), pattern, replacement


def case_two_level_chain(lib):
    class M(lib.nn.Module):
        def forward(self, x, y):
            a = lib.sigmoid(x) * y
            b = lib.sigmoid(y) * x
            c = lib.sigmoid(a) * b
            return c.sum(dim=0)

    def pattern(p, q):
        return lib.sigmoid(p) * q

    def replacement(p, q):
        return lib.tanh(p) + q

    return M(), pattern, replacement


def case_methods(lib):
    class M(lib.nn.Module):
        def forward(self, x):
            y = x.transpose(0, 1).contiguous()
            z = y.transpose(0, 1).contiguous()
            return z + 1

    def pattern(x):
        return x.transpose(0, 1).contiguous()

    def replacement(x):
        return x.t()

    return M(), pattern, replacement


def case_two_outputs(lib):
    class M(lib.nn.Module):
        def forward(self, x, y):
            s = lib.sin(x)
            c = lib.cos(y)
            return s * 2, c + s

    def pattern(x, y):
        return lib.sin(x), lib.cos(y)

    def replacement(x, y):
        return lib.cos(x), lib.sin(y)

    return M(), pattern, replacement


def case_overlapping(lib):
    # Three negations in a row: neg(neg(.)) matches at the second and third; the first match wins.
    class M(lib.nn.Module):
        def forward(self, x):
            return lib.neg(lib.neg(lib.neg(x)))

    def pattern(x):
        return lib.neg(lib.neg(x))

    def replacement(x):
        return lib.relu(x)

    return M(), pattern, replacement


def case_shared_input(lib):
    # The pattern uses its parameter twice; the graph must use one value twice too.
    class M(lib.nn.Module):
        def forward(self, x, y):
            return lib.mul(x, x) + lib.mul(x, y)

    def pattern(a):
        return lib.mul(a, a)

    def replacement(a):
        return lib.square(a)

    return M(), pattern, replacement


def case_literal_argument(lib):
    class M(lib.nn.Module):
        def forward(self, x):
            return lib.add(x, 2) + lib.add(x, 3)

    def pattern(x):
        return lib.add(x, 2)

    def replacement(x):
        return lib.mul(x, 2)

    return M(), pattern, replacement


def case_module_calls(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = lib.nn.ReLU()

        def forward(self, x):
            return self.relu(lib.neg(x)) + lib.neg(x)

    def pattern(x):
        return lib.neg(x)

    def replacement(x):
        return x * -1

    return M(), pattern, replacement


def case_placeholder_bound_to_literal(lib):
    # b matches the literal 2; add(x, x) does not match, as one graph node cannot stand for two parameters.
    class M(lib.nn.Module):
        def forward(self, x):
            return lib.add(x, 2) * lib.add(x, x)

    def pattern(a, b):
        return lib.add(a, b)

    def replacement(a, b):
        return b + a

    return M(), pattern, replacement


def case_outputs_used_in_reverse_order(lib):
    class M(lib.nn.Module):
        def forward(self, x):
            a = lib.relu(x)
            b = lib.sigmoid(x)
            c = b * 2
            return c + a

    def pattern(x):
        return lib.relu(x), lib.sigmoid(x)

    def replacement(x):
        return lib.tanh(x), lib.neg(x)

    return M(), pattern, replacement


@pytest.mark.parametrize(
    ("case", "shapes", "count"),
    [
        (case_neg_to_relu, [(3, 4)], 1),
        (case_cat_to_stack, [(1,), (2, 3), (2, 3)], 2),
        (case_internal_value_leaks, [(3, 4)], 0),
        (case_two_level_chain, [(3, 3), (3, 3)], 3),
        (case_methods, [(3, 4)], 2),
        (case_two_outputs, [(3,), (3,)], 1),
        (case_overlapping, [(4,)], 1),
        (case_shared_input, [(3,), (3,)], 1),
        (case_literal_argument, [(3,)], 1),
        (case_module_calls, [(3,)], 2),
        (case_placeholder_bound_to_literal, [(3,)], 1),
        (case_outputs_used_in_reverse_order, [(3,)], 1),
    ],
)
def test_replace_pattern_as_torch(case, shapes, count):
    assert len(_rewrite(case, shapes)) == count


def _rewrite_with_filters(case, shapes, **options):
    out = {}
    for lib in (torch, ember):
        module, pattern, replacement = case(lib)
        gm = _fx(lib).symbolic_trace(module)
        opts = {k: (v(lib) if callable(v) else v) for k, v in options.items()}
        replaced = _rewriter(lib).replace_pattern_with_filters(gm, pattern, replacement, **opts)
        gm.graph.lint()
        out[lib] = (gm, replaced)
    (tgm, tr), (egm, er) = out[torch], out[ember]
    assert _replaced(er) == _replaced(tr)
    assert egm.code == tgm.code.replace("torch", "ember")
    _check_run(tgm, egm, shapes)
    return er


def test_ignore_literals():
    replaced = _rewrite_with_filters(case_literal_argument, [(3,)], ignore_literals=True)
    assert len(replaced) == 2


def test_match_filters():
    def only_first_input_users(lib):
        def keep(match, original_graph, pattern_graph):
            # Only the match of the graph's first cat.
            return any(getattr(n, "name", None) == "cat" for n in match.nodes_map.values())

        return [keep]

    replaced = _rewrite_with_filters(case_cat_to_stack, [(1,), (2, 3), (2, 3)], match_filters=only_first_input_users)
    assert len(replaced) == 1


def test_replacement_callback():
    def callback(lib):
        def make(match, original_graph, pattern_graph):
            def replacement(x):
                return lib.relu(x) * 2

            return _fx(lib).symbolic_trace(replacement).graph

        return make

    replaced = _rewrite_with_filters(case_neg_to_relu, [(3, 4)], replacement_callback=callback)
    assert len(replaced) == 1


def test_graph_module_pattern_and_replacement():
    out = {}
    for lib in (torch, ember):
        module, pattern, replacement = case_two_level_chain(lib)
        fx = _fx(lib)
        gm = fx.symbolic_trace(module)
        matches = _rewriter(lib).replace_pattern(gm, fx.symbolic_trace(pattern), fx.symbolic_trace(replacement))
        out[lib] = (gm, matches)
    assert _matches(out[ember][1]) == _matches(out[torch][1])
    assert out[ember][0].code == out[torch][0].code.replace("torch", "ember")


def case_module_replacement(lib):
    class M(lib.nn.Module):
        def forward(self, x):
            return lib.neg(x) + 1

    class Replacement(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.act = lib.nn.Tanh()

        def forward(self, x):
            return self.act(x)

    def pattern(x):
        return lib.neg(x)

    return M(), pattern, Replacement()


def test_replacement_module_attributes_are_copied():
    # A replacement GraphModule that calls a submodule: the submodule is copied into the rewritten module.
    out = {}
    for lib in (torch, ember):
        fx = _fx(lib)
        module, pattern, replacement = case_module_replacement(lib)
        gm = fx.symbolic_trace(module)
        _rewriter(lib).replace_pattern(gm, pattern, fx.symbolic_trace(replacement))
        out[lib] = gm
    assert out[ember].code == out[torch].code.replace("torch", "ember")
    assert isinstance(out[ember].act, ember.nn.Tanh)
    _check_run(out[torch], out[ember], [(4,)])


def test_pattern_with_dead_code_is_rejected():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    g.call_function(ember.neg, (x,))
    g.output(x)
    from ember.fx.passes.utils.matcher_utils import SubgraphMatcher

    with pytest.raises(AssertionError, match="dead code"):
        SubgraphMatcher(g)


def test_replacement_arity_mismatch():
    def pattern(x):
        return ember.neg(x)

    def replacement(x, y):
        return x + y

    class M(ember.nn.Module):
        def forward(self, x):
            return ember.neg(x)

    with pytest.raises(AssertionError, match="Placeholder count mismatch"):
        ember_rewriter.replace_pattern(ember.fx.symbolic_trace(M()), pattern, replacement)


def case_constant_tensor_in_pattern(lib):
    # The pattern reads a tensor attribute: it matches any tensor attribute, whatever its value.
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("offset", lib.ones(3) * 3)

        def forward(self, x):
            return lib.relu(x + self.offset) + x

    class Pattern(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("offset", lib.zeros(3))

        def forward(self, x):
            return lib.relu(x + self.offset)

    def replacement(x):
        return lib.sigmoid(x)

    return M(), Pattern(), replacement


def test_pattern_with_a_tensor_attribute():
    out = {}
    for lib in (torch, ember):
        module, pattern, replacement = case_constant_tensor_in_pattern(lib)
        fx = _fx(lib)
        gm = fx.symbolic_trace(module)
        matches = _rewriter(lib).replace_pattern(gm, fx.symbolic_trace(pattern), replacement)
        out[lib] = (gm, matches)
    assert _matches(out[ember][1]) == _matches(out[torch][1])
    assert len(out[ember][1]) == 1
    assert out[ember][0].code == out[torch][0].code.replace("torch", "ember")
    _check_run(out[torch][0], out[ember][0], [(3,)])
