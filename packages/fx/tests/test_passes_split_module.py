"""ember.fx.passes.split_module against torch.fx.passes.split_module on the same programs.

The same model is traced by both libraries and split by the same rule (a function of each node's
position among the computing nodes, or of its name); the children must have the same names and the
same code, the parent the same code, and the split module the same results as the original.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
torch_fx = pytest.importorskip("torch.fx")
import fx_trace_models as models  # noqa: E402
from torch.fx.passes.split_module import split_module as torch_split  # noqa: E402

import ember  # noqa: E402
import ember.fx  # noqa: E402
from ember.fx.passes.split_module import split_module as ember_split  # noqa: E402


def make_docstring_model(lib):
    """The model of PyTorch's split_module docstring: a parameter, a Linear used twice, clamps."""

    class MyModule(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.param = lib.nn.Parameter(lib.rand(3, 4))
            self.linear = lib.nn.Linear(4, 5)

        def forward(self, x, y):
            z = self.linear(x + self.param).clamp(min=0.0, max=1.0)
            w = self.linear(y).clamp(min=0.0, max=1.0)
            return z + w

    return MyModule()


def make_nested(lib):
    """Submodules at dotted paths, a buffer, several values crossing each boundary, two outputs."""

    class Inner(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(4, 4)
            self.register_buffer("shift", lib.ones(4))

        def forward(self, x):
            return lib.relu(self.fc(x)) + self.shift

    class Outer(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Inner()
            self.head = lib.nn.Linear(4, 2)

        def forward(self, x, scale=2.0):
            a = self.block(x)
            b = a * scale
            c = lib.sigmoid(b) + a
            d = self.head(c)
            return d, c.sum()

    return Outer()


def _pair(make):
    tm, em = make(torch), make(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm.eval(), em.eval()


def _by_position(gm, rule):
    """A split callback: ``rule(i)`` for the i-th computing node of ``gm``."""
    positions = {}
    for n in gm.graph.nodes:
        if n.op not in ("placeholder", "get_attr", "output"):
            positions[n.name] = len(positions)
    return lambda node: rule(positions[node.name])


def _as_ember(code):
    # torch.fx's code re-registers autowrapped functions (math.sqrt) with a wrap() line at the top;
    # ember.fx's code generator does not emit that line, which is not split_module's business.
    lines = [line for line in code.split("\n") if not line.startswith("torch.fx._symbolic_trace.wrap(")]
    return "\n".join(lines).replace("torch", "ember")


def _split_both(make, rule, shapes, compare_child_code=True, **options):
    tm, em = _pair(make)
    out = {}
    for lib, model, fx, split in ((torch, tm, torch_fx, torch_split), (ember, em, ember.fx, ember_split)):
        gm = fx.symbolic_trace(model)
        qualname_map = {}
        result = split(gm, model, _by_position(gm, rule), qualname_map, **options)
        result.graph.lint()
        out[lib] = (gm, result, qualname_map)
    (_, tsplit, tmap), (egm, esplit, emap) = out[torch], out[ember]
    t_children = {name: child for name, child in tsplit.named_children() if name.startswith("submod")}
    e_children = {name: child for name, child in esplit.named_children() if name.startswith("submod")}
    assert list(e_children) == list(t_children)
    for name, child in t_children.items():
        nodes = [(n.op, n.name, n.target if isinstance(n.target, str) else "fn") for n in child.graph.nodes]
        assert [
            (n.op, n.name, n.target if isinstance(n.target, str) else "fn") for n in e_children[name].graph.nodes
        ] == nodes
        if compare_child_code:
            assert e_children[name].code.strip() == _as_ember(child.code).strip(), name
    assert esplit.code == _as_ember(tsplit.code)
    assert emap == tmap
    assert esplit.meta["partition_names"] == tsplit.meta["partition_names"]

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    t_out = tsplit(*[torch.tensor(a) for a in arrays])
    e_out, e_ref = esplit(*[ember.tensor(a) for a in arrays]), egm(*[ember.tensor(a) for a in arrays])
    for a, b, ref in zip(_leaves(e_out), _leaves(t_out), _leaves(e_ref), strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a.detach().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-7)
    return esplit


def _leaves(x):
    return [leaf for item in x for leaf in _leaves(item)] if isinstance(x, (tuple, list)) else [x]


def test_round_robin_partitions():
    split = _split_both(make_docstring_model, lambda i: i % 3, [(3, 4), (3, 4)])
    assert [name for name, _ in split.named_children()][:3] == ["submod_0", "submod_1", "submod_2"]


def test_partitions_in_topological_order():
    # Partition numbers against the data flow: the parent calls them in dependency order.
    _split_both(make_docstring_model, lambda i: 5 - i // 2, [(3, 4), (3, 4)])


def test_nested_submodules_and_qualname_map():
    split = _split_both(make_nested, lambda i: i // 3, [(2, 4)])
    assert isinstance(split.submod_0.block_fc, ember.nn.Linear)


@pytest.mark.parametrize(
    "options",
    [
        {"keep_original_order": True},
        {"keep_original_node_name": True},
        {"keep_original_input_name": False},
        {"tuple_return": True},
        {"partition_affix": "pp"},
    ],
    ids=lambda o: next(iter(o)),
)
def test_options(options):
    _split_both(make_nested, lambda i: 3 - i // 2, [(2, 4)], **options)


def test_keep_original_order_with_unordered_partitions():
    _split_both(make_docstring_model, lambda i: 5 - i // 2, [(3, 4), (3, 4)], keep_original_order=True)


def test_gpt_block():
    # torch records F.softmax's defaulted keywords (_stacklevel, dtype) and ember does not, so the
    # children are compared node by node rather than by code.
    _split_both(models.make_gpt_block, lambda i: i // 7, [(2, 8, 16)], compare_child_code=False)


def test_one_partition():
    split = _split_both(make_nested, lambda i: 0, [(2, 4)])
    assert [name for name, _ in split.named_children() if name.startswith("submod")] == ["submod_0"]


def test_cycle_between_partitions():
    for model, fx, split in ((make_nested(torch), torch_fx, torch_split), (make_nested(ember), ember.fx, ember_split)):
        gm = fx.symbolic_trace(model)
        # 0 -> 1 -> 0: the partitions depend on each other.
        with pytest.raises(RuntimeError, match="cycle exists between partitions"):
            split(gm, model, _by_position(gm, lambda i: i % 2))


def apply_module(mod, x):
    return mod(x)


def make_attr_graph(lib):
    """A graph reading a submodule and a parameter with get_attr: the child reads the submodule
    itself, the parameter is passed to it."""
    fx = torch_fx if lib is torch else ember.fx
    root = lib.nn.Module()
    root.sub = lib.nn.Linear(4, 4)
    root.scale = lib.nn.Parameter(lib.ones(4) * 2)
    g = fx.Graph()
    x = g.placeholder("x")
    sub, scale = g.get_attr("sub"), g.get_attr("scale")
    a = g.call_function(apply_module, (sub, x))
    b = g.call_function(lib.mul, (a, scale))
    g.output(g.call_function(apply_module, (sub, b)))
    return fx.GraphModule(root, g)


def test_get_attr_of_a_submodule_and_a_parameter():
    tgm, egm = make_attr_graph(torch), make_attr_graph(ember)
    egm.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tgm.state_dict().items()})
    results = []
    for gm, split in ((tgm, torch_split), (egm, ember_split)):
        results.append(split(gm, gm, _by_position(gm, lambda i: i)))
    tsplit, esplit = results
    for name in ("submod_0", "submod_1", "submod_2"):
        assert getattr(esplit, name).code == _as_ember(getattr(tsplit, name).code)
    assert esplit.code == _as_ember(tsplit.code)
    assert isinstance(esplit.submod_0.sub, ember.nn.Linear)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(
        esplit(ember.tensor(x)).detach().numpy(), tsplit(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6
    )
