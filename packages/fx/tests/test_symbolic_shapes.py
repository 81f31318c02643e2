"""``ShapeEnv``, ``SymInt`` and friends against PyTorch's, where their behaviour can be observed:
values of arithmetic and comparisons (floor division and modulo of negatives included), the symbols
made for sizes (0/1 specialization, duck sizing, strides in terms of sizes), the guards recorded by
the same sequence of decisions, and data-dependent decisions on unbacked symbols.

PyTorch names a backed symbol after a hash of its source (``s77``); Ember counts (``s0``, ``s1``).
Expressions are compared after renaming PyTorch's symbols to ours, pairing them in creation order.
"""

from __future__ import annotations

import itertools
import re
import warnings

import pytest
import sympy

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

from torch._dynamo.source import LocalSource  # noqa: E402
from torch.fx.experimental import symbolic_shapes as theirs  # noqa: E402

import ember  # noqa: E402
from ember.fx.experimental import symbolic_shapes as ours  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)  # PyTorch deprecates _check_is_size


class Pair:
    """One ShapeEnv of each library, making the same symbols."""

    def __init__(self, **options) -> None:
        self.ours = ours.ShapeEnv(**options)
        self.theirs = theirs.ShapeEnv(**options)

    def symints(self, *values: int, dynamic_dim: str = "DUCK") -> tuple[list, list]:
        mine, yours = [], []
        for i, v in enumerate(values):
            name = f"v{len(self.ours.var_to_sources)}_{i}"
            a = self.ours.create_symbol(v, f"L['{name}']", dynamic_dim=getattr(ours.DimDynamic, dynamic_dim))
            b = self.theirs.create_symbol(v, LocalSource(name), dynamic_dim=getattr(theirs.DimDynamic, dynamic_dim))
            mine.append(self.ours.create_symintnode(a, hint=v))
            yours.append(self.theirs.create_symintnode(b, hint=v))
        return mine, yours

    def symbols(self) -> dict:
        """PyTorch's backed symbols to ours, paired in creation order."""
        their_values = getattr(self.theirs, "backed_var_to_val", None) or self.theirs.var_to_val
        return dict(zip(their_values, self.ours.var_to_val, strict=False))

    def rename(self, text: str) -> str:
        """PyTorch's symbol names in ``text`` replaced by ours."""
        names = {str(t): str(o) for t, o in self.symbols().items()}
        return re.sub(r"\bs\d+\b", lambda m: names.get(m.group(0), m.group(0)), text)

    def rename_expr(self, expr) -> str:
        """A PyTorch expression over our symbols, printed (sympy orders the terms by the new names)."""
        return str(expr.xreplace(self.symbols()))

    def guards(self) -> tuple[list[str], list[str]]:
        return [str(g.expr) for g in self.ours.guards], [self.rename(str(g.expr)) for g in self.theirs.guards]


# -- arithmetic and comparisons -----------------------------------------------------------------

INT_EXPRESSIONS = {
    "a + b": lambda a, b: a + b,
    "a - b": lambda a, b: a - b,
    "a * b": lambda a, b: a * b,
    "a // b": lambda a, b: a // b,
    "a % b": lambda a, b: a % b,
    "a // -3": lambda a, b: a // -3,
    "-a // 4": lambda a, b: -a // 4,
    "(a - 3 * b) // 2": lambda a, b: (a - 3 * b) // 2,
    "a % -3": lambda a, b: a % -3,
    "-a % 4": lambda a, b: -a % 4,
    "(a - 3 * b) % 5": lambda a, b: (a - 3 * b) % 5,
    "7 // a": lambda a, b: 7 // a,
    "-7 % a": lambda a, b: -7 % a,
    "a ** 2": lambda a, b: a**2,
    "2 ** a": lambda a, b: 2**a,
    "-a": lambda a, b: -a,
    "sym_max(a, b)": lambda a, b: _lib(a).sym_max(a, b),
    "sym_min(a, 2 * b)": lambda a, b: _lib(a).sym_min(a, 2 * b),
    "sym_ite(a > b, a, b)": lambda a, b: _lib(a).sym_ite(a > b, a, b),
}
FLOAT_EXPRESSIONS = {
    "a / b": lambda a, b: a / b,
    "a / 2": lambda a, b: a / 2,
    "a * 0.5": lambda a, b: a * 0.5,
    "1.5 + a": lambda a, b: 1.5 + a,
    "sym_float(a) / 4": lambda a, b: _lib(a).sym_float(a) / 4,
}
BOOL_EXPRESSIONS = {
    "a == b": lambda a, b: a == b,
    "a != b": lambda a, b: a != b,
    "a < b": lambda a, b: a < b,
    "a <= 2 * b": lambda a, b: a <= 2 * b,
    "a > 3": lambda a, b: a > 3,
    "a >= b + 1": lambda a, b: a >= b + 1,
    "3 < a": lambda a, b: 3 < a,  # noqa: SIM300  (the reflected comparison is what is tested)
    "a == 7": lambda a, b: a == 7,
    "(a > 3) & (b < 4)": lambda a, b: (a > 3) & (b < 4),
    "(a > 30) | (b < 4)": lambda a, b: (a > 30) | (b < 4),
    "sym_not(a > b)": lambda a, b: _lib(a).sym_not(a > b),
}


def _lib(value):
    return ember if isinstance(value, ember.SymInt) else torch


VALUES = [(7, 3), (3, 7), (5, 5), (12, 4), (2, 9)]


@pytest.mark.parametrize("values", VALUES, ids=str)
@pytest.mark.parametrize("name", list(INT_EXPRESSIONS))
def test_int_arithmetic_matches_pytorch(name, values):
    pair = Pair()
    (a, b), (ta, tb) = pair.symints(*values)
    mine, yours = INT_EXPRESSIONS[name](a, b), INT_EXPRESSIONS[name](ta, tb)
    assert type(mine).__name__ == type(yours).__name__
    assert int(mine) == int(yours) == INT_EXPRESSIONS[name](*values)


@pytest.mark.parametrize("name", list(FLOAT_EXPRESSIONS))
def test_float_arithmetic_matches_pytorch(name):
    pair = Pair()
    (a, b), (ta, tb) = pair.symints(7, 2)
    mine, yours = FLOAT_EXPRESSIONS[name](a, b), FLOAT_EXPRESSIONS[name](ta, tb)
    assert type(mine).__name__ == type(yours).__name__ == "SymFloat"
    assert float(mine) == float(yours) == FLOAT_EXPRESSIONS[name](7, 2)


@pytest.mark.parametrize("values", VALUES, ids=str)
@pytest.mark.parametrize("name", list(BOOL_EXPRESSIONS))
def test_comparisons_and_their_guards_match_pytorch(name, values):
    pair = Pair()
    (a, b), (ta, tb) = pair.symints(*values)
    mine, yours = BOOL_EXPRESSIONS[name](a, b), BOOL_EXPRESSIONS[name](ta, tb)
    assert bool(mine) == bool(yours) == BOOL_EXPRESSIONS[name](*values)
    _assert_same_conditions(pair)


@pytest.mark.parametrize("name", ["a * b", "a + b", "a - b", "a // b", "-a", "a % b"])
def test_expressions_print_as_pytorch_s(name):
    pair = Pair()
    (a, b), (ta, tb) = pair.symints(7, 3)
    mine, yours = INT_EXPRESSIONS[name](a, b), INT_EXPRESSIONS[name](ta, tb)
    assert str(mine) == repr(mine) == pair.rename_expr(yours.node.expr)
    assert repr(yours) == str(yours.node.expr)


def test_a_symint_is_unhashable_as_in_pytorch():
    (a,), (ta,) = Pair().symints(5)
    for value in (a, ta):
        with pytest.raises(TypeError, match="unhashable"):
            hash(value)


def test_python_conversions_guard_as_in_pytorch():
    pair = Pair()
    (a, b), (ta, tb) = pair.symints(6, 4)
    assert [int(a * 2), operator_index(b), float(a)] == [int(ta * 2), operator_index(tb), float(ta)]
    assert range(10)[b] == range(10)[tb]
    assert int(a / b) == int(ta / tb) == 1  # a guard on the truncation, not on the float
    _assert_same_conditions(pair)


def operator_index(value) -> int:
    return [0, 1, 2, 3, 4, 5, 6, 7][value]


# -- guards recorded by a sequence of decisions ---------------------------------------------------

DECISIONS = [
    lambda x, y: bool(x > 3),
    lambda x, y: bool(x * 2 == 10),
    lambda x, y: bool(y <= 6),
    lambda x, y: bool(x == y),
    lambda x, y: bool(x + y > 8),
    lambda x, y: bool(x // 2 == 2),
    lambda x, y: bool(x % 2 == 1),
    lambda x, y: bool(x == 1),
    lambda x, y: bool(x != 5),
]


@pytest.mark.parametrize("values", [(5, 5), (5, 3), (4, 7), (9, 2)], ids=str)
def test_a_sequence_of_decisions_records_the_same_guards(values):
    pair = Pair()
    (x, y), (tx, ty) = pair.symints(*values)
    for decide in DECISIONS:
        assert decide(x, y) == decide(tx, ty)
    _assert_same_conditions(pair)


def test_guards_read_as_pytorch_s():
    pair = Pair()
    (x, y), (tx, ty) = pair.symints(5, 3)
    for a, b in ((x, y), (tx, ty)):
        bool(a > 3)
        bool(a * 2 == 10)
        bool(b > 6)
    mine, yours = pair.guards()
    assert mine == yours
    assert pair.ours.format_guards() == pair.rename(pair.theirs.format_guards())


def _assert_same_conditions(pair: Pair) -> None:
    """Both environments' guards allow exactly the same sizes (checked on a grid of values)."""
    symbols = list(pair.ours.var_to_val)
    mine = [g.expr for g in pair.ours.guards]
    yours = [g.expr.xreplace(pair.symbols()) for g in pair.theirs.guards]
    for point in itertools.product(range(2, 12), repeat=len(symbols)):
        at = dict(zip(symbols, map(sympy.Integer, point), strict=True))
        assert all(bool(g.xreplace(at)) for g in mine) == all(bool(g.xreplace(at)) for g in yours), (
            f"at {at}: ours {mine} and PyTorch's {yours} disagree"
        )


# -- the symbols of sizes -------------------------------------------------------------------------


def test_sizes_zero_and_one_specialize():
    pair = Pair()
    for v in (0, 1):
        assert pair.ours.create_symbol(v, "L['a']") == pair.theirs.create_symbol(v, LocalSource("a")) == v
    assert isinstance(pair.ours.create_symbol(2, "L['b']"), sympy.Symbol)
    assert isinstance(pair.theirs.create_symbol(2, LocalSource("b")), sympy.Symbol)
    free = Pair(specialize_zero_one=False)
    assert isinstance(free.ours.create_symbol(1, "L['a']"), sympy.Symbol)
    assert isinstance(free.theirs.create_symbol(1, LocalSource("a")), sympy.Symbol)


@pytest.mark.parametrize("dynamic_dim", ["DUCK", "DYNAMIC"])
def test_duck_sizing(dynamic_dim):
    pair = Pair()
    (a, b, c), (ta, tb, tc) = pair.symints(4, 4, 5, dynamic_dim=dynamic_dim)
    assert (a.node.expr == b.node.expr) == (ta.node.expr == tb.node.expr) == (dynamic_dim == "DUCK")
    assert (a.node.expr == c.node.expr) is (ta.node.expr == tc.node.expr) is False
    assert str(a + b) == pair.rename_expr((ta + tb).node.expr)


def _layouts(lib):
    return {
        "contiguous": lib.empty(5, 3, 4),
        "sliced": lib.empty(3, 4)[:, ::2],
        "permuted": lib.empty(4, 1, 6).permute(2, 0, 1),
        "expanded": lib.empty(1, 5).expand(3, 5),
        "offset": lib.empty(20)[3:],
        "transposed": lib.empty(6, 7).t(),
        "with ones": lib.empty(1, 7, 1),
    }


def test_sizes_strides_and_offsets_of_inputs_match_pytorch():
    pair = Pair()
    mine_inputs, their_inputs = _layouts(ember), _layouts(torch)
    for name in mine_inputs:
        mine = pair.ours.create_symbolic_sizes_strides_storage_offset(mine_inputs[name], f"L['{name}']")
        yours = pair.theirs.create_symbolic_sizes_strides_storage_offset(their_inputs[name], LocalSource(name))
        assert _flat(mine, str) == _flat(yours, pair.rename_expr), name


def _flat(result, show) -> list:
    sizes, strides, offset = result
    return [show(v.node.expr) if hasattr(v, "node") else str(v) for v in (*sizes, *strides, offset)]


def test_produce_guards_over_sources_as_pytorch():
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import StatelessSymbolicContext

    pair = Pair()
    mode = FakeTensorMode(shape_env=pair.theirs)
    shapes = {"x": (5, 3), "y": (5, 1), "z": (4,)}
    fakes, metas = [], []
    for name, shape in shapes.items():
        context = StatelessSymbolicContext(dynamic_sizes=[theirs.DimDynamic.DUCK] * len(shape))
        fakes.append(mode.from_tensor(torch.empty(shape), source=LocalSource(name), symbolic_context=context))
        metas.append(_meta_input(pair.ours, ember.empty(shape), f"L['{name}']"))
    for x in (fakes[0], metas[0]):
        assert bool(x.shape[0] > 3)
    yours = pair.theirs.produce_guards(fakes, [LocalSource(n) for n in shapes])
    mine = pair.ours.produce_guards(metas, [f"L['{n}']" for n in shapes])
    assert set(yours) <= set(mine), f"PyTorch's guards {yours} are not all among ours {mine}"
    scope = {"L": {"x": torch.empty(5, 3), "y": torch.empty(5, 1), "z": torch.empty(4)}}
    assert all(eval(g, {}, scope) for g in mine)
    scope["L"]["y"] = torch.empty(6, 1)
    assert not all(eval(g, {}, scope) for g in mine)  # y's size was x's: a guard says so


def _meta_input(env, tensor, source):
    from ember.core.storage import Storage
    from ember.core.tensor import Tensor, _new

    sizes, strides, offset = env.create_symbolic_sizes_strides_storage_offset(tensor, source)
    storage = Storage(None, tensor.untyped_storage().nbytes(), ember.device("meta"))
    return _new(Tensor, storage, sizes, strides, offset, tensor.dtype, None)


# -- unbacked symbols -------------------------------------------------------------------------------


def test_a_decision_on_an_unbacked_symbol_raises():
    pair = Pair()
    u, tu = pair.ours.create_unbacked_symint(), pair.theirs.create_unbacked_symint()
    assert str(u) == str(tu) == "u0"
    with pytest.raises(theirs.GuardOnDataDependentSymNode):
        bool(tu > 2)
    with pytest.raises(ours.GuardOnDataDependentSymNode, match="data-dependent"):
        bool(u > 2)
    assert issubclass(ours.GuardOnDataDependentSymNode, RuntimeError)


def test_check_tells_the_environment_a_fact():
    pair = Pair()
    u, tu = pair.ours.create_unbacked_symint(), pair.theirs.create_unbacked_symint()
    ember._check(u > 2)
    torch._check(tu > 2)
    assert bool(u > 1) is bool(tu > 1) is True
    assert str(pair.ours.var_to_range[u.node.expr]) == "VR[3, oo]"
    assert str(pair.theirs.var_to_range[tu.node.expr]) == "VR[3, int_oo]"
    assert not pair.ours.guards and not pair.theirs.guards
    assert [str(a.expr) for a in pair.ours.deferred_runtime_asserts[u.node.expr]] == ["u0 > 2"]


def test_check_is_size_and_size_oblivious_decisions():
    pair = Pair()
    u, tu = pair.ours.create_unbacked_symint(), pair.theirs.create_unbacked_symint()
    ember._check_is_size(u)
    torch._check_is_size(tu)
    assert ours.statically_known_true(u >= 0) is theirs.statically_known_true(tu >= 0) is True
    assert ours.guard_size_oblivious(u == 1) is theirs.guard_size_oblivious(tu == 1) is False
    with pytest.raises(ours.GuardOnDataDependentSymNode):
        bool(u == 1)
    assert ours.guard_or_false(u == 1) is theirs.guard_or_false(tu == 1) is False
    assert ours.guard_or_true(u == 1) is theirs.guard_or_true(tu == 1) is True


def test_statically_known_true_never_guards():
    pair = Pair()
    (a,), (ta,) = pair.symints(5)
    for cond in (lambda x: x > 1, lambda x: x >= 2, lambda x: x > 5, lambda x: x == 5, lambda x: x * 2 != 3):
        assert ours.statically_known_true(cond(a)) is theirs.statically_known_true(cond(ta))
    assert not pair.ours.guards and not pair.theirs.guards


def test_helpers_over_plain_and_symbolic_values():
    pair = Pair()
    (a,), (ta,) = pair.symints(5)
    for f in ("is_concrete_int", "has_free_symbols"):
        for v, tv in ((a, ta), (3, 3), (a - a, ta - ta)):
            assert getattr(ours, f)(v) == getattr(theirs, f)(tv), (f, v)
    assert ours.hint_int(a * 3) == 15 and not pair.ours.guards  # PyTorch 2.13 has no hint_int to compare
    assert ours.guard_int(a + 1) == theirs.guard_int(ta + 1) == 6
    assert {str(s) for s in ours.free_symbols(a * a + 1)} == {
        pair.rename(str(s)) for s in theirs.free_symbols(ta * ta + 1)
    }
    # PyTorch 2.13 no longer has definitely_true/false: their earlier meaning (guard where there is a hint).
    assert ours.definitely_true(a > 3) is True and ours.definitely_false(a > 3) is False
    u = pair.ours.create_unbacked_symint()
    assert ours.definitely_true(u > 3) is False and ours.definitely_false(u > 3) is False


# -- the functions of the top level -----------------------------------------------------------------

PLAIN_CALLS = [
    ("sym_max", (2, 3.0)),
    ("sym_max", (2.0, 3)),
    ("sym_max", (4, 3)),
    ("sym_min", (2, 3.0)),
    ("sym_min", (5, 3)),
    ("sym_int", (-2.5,)),
    ("sym_int", (2.7,)),
    ("sym_float", (3,)),
    ("sym_not", (True,)),
    ("sym_ite", (True, 1, 2)),
    ("sym_ite", (False, 1, 2)),
]


@pytest.mark.parametrize("name, args", PLAIN_CALLS, ids=[f"{n}{a}" for n, a in PLAIN_CALLS])
def test_sym_functions_on_plain_values_match_pytorch(name, args):
    mine, yours = getattr(ember, name)(*args), getattr(torch, name)(*args)
    assert (mine, type(mine)) == (yours, type(yours))


@pytest.mark.parametrize(
    "check, error", [("_check", RuntimeError), ("_check_index", IndexError), ("_check_value", ValueError)]
)
def test_checks_raise_as_pytorch_s(check, error):
    for lib in (ember, torch):
        getattr(lib, check)(True)
        with pytest.raises(error, match="the reason"):
            getattr(lib, check)(False, lambda: "the reason")
    with pytest.raises(RuntimeError, match="Expected cond to be True"):
        ember._check(False)
    for lib in (ember, torch):
        with pytest.raises(TypeError, match="cond must be a bool"):
            lib._check(1)


def test_sym_functions_on_symbolic_values_match_pytorch():
    pair = Pair()
    (a, b), (ta, tb) = pair.symints(7, 3)
    assert int(ember.sym_max(a, b)) == int(torch.sym_max(ta, tb)) == 7
    assert float(ember.sym_float(a) / 2) == float(torch.sym_float(ta) / 2) == 3.5
    assert int(ember.sym_int(ember.sym_float(a) / 2)) == int(torch.sym_int(torch.sym_float(ta) / 2)) == 3
    assert type(ember.sym_ite(a > b, a, b)).__name__ == type(torch.sym_ite(ta > tb, ta, tb)).__name__
    _assert_same_conditions(pair)
