"""``SymInt``, ``SymFloat``, ``SymBool`` and ``ShapeEnv`` on their own (no oracle needed): Python's
numeric rules, guards and what is decided without them, assertions, and guards as code."""

from __future__ import annotations

import pytest
import sympy

import ember
from ember.core import symbolic
from ember.core.storage import Storage
from ember.core.tensor import Tensor, _new
from ember.fx.experimental.symbolic_shapes import (
    GuardOnDataDependentSymNode,
    ShapeEnv,
    guard_or_false,
    is_concrete_int,
    statically_known_true,
)


def _symints(env: ShapeEnv, *values: int) -> list:
    return [env.create_symintnode(env.create_symbol(v, f"L['v{i}']"), hint=v) for i, v in enumerate(values)]


def _meta(env: ShapeEnv, tensor, source: str):
    sizes, strides, offset = env.create_symbolic_sizes_strides_storage_offset(tensor, source)
    storage = Storage(None, tensor.untyped_storage().nbytes(), ember.device("meta"))
    return _new(Tensor, storage, sizes, strides, offset, tensor.dtype, None)


def test_the_top_level_offers_pytorch_s_names():
    for name in ("SymInt", "SymFloat", "SymBool", "sym_int", "sym_float", "sym_not", "sym_max", "sym_min"):
        assert getattr(ember, name) is getattr(symbolic, name)
    for name in ("sym_ite", "_check", "_check_is_size", "_check_with", "_check_index", "_check_value"):
        assert getattr(ember, name) is getattr(symbolic, name)


@pytest.mark.parametrize(
    "expression",
    [
        lambda a, b: a + 1,
        lambda a, b: 1 + a,
        lambda a, b: a - b,
        lambda a, b: 10 - a,
        lambda a, b: a * b * 2,
        lambda a, b: a // b,
        lambda a, b: -a // b,
        lambda a, b: 17 // a,
        lambda a, b: a % b,
        lambda a, b: -a % b,
        lambda a, b: a % -b,
        lambda a, b: a**2,
        lambda a, b: -a,
        lambda a, b: abs(a - 3 * b),
        lambda a, b: a / b,
        lambda a, b: a * 2.5,
        lambda a, b: 1.5 / a,
        lambda a, b: a == b,
        lambda a, b: a != 7,
        lambda a, b: a < b,
        lambda a, b: a >= b + 4,
        lambda a, b: (a > b) & (b > 2),
        lambda a, b: (a < b) | (b > 2),
    ],
)
@pytest.mark.parametrize("values", [(7, 3), (3, 7), (9, 9), (10, 2)])
def test_arithmetic_follows_python(expression, values):
    env = ShapeEnv()
    a, b = _symints(env, *values)
    result, expected = expression(a, b), expression(*values)
    kind = {int: ember.SymInt, float: ember.SymFloat, bool: ember.SymBool}[type(expected)]
    assert isinstance(result, kind)
    assert type(expected)(result) == expected


def test_mixed_values_and_conversions():
    env = ShapeEnv()
    a, b = _symints(env, 6, 4)
    assert str(a * b) == "s0*s1" and repr(a // 2) == "(s0//2)"
    assert [0, 1, 2, 3, 4, 5][b] == 4  # __index__ guards
    assert bool(a) is True and int(ember.sym_float(a)) == 6
    assert isinstance(ember.sym_max(a, 2), ember.SymInt) and int(ember.sym_max(a, 10)) == 10
    assert isinstance(ember.sym_max(a, 2.0), ember.SymFloat)
    assert int(ember.sym_ite(a > b, a, b)) == 6
    assert bool(ember.sym_not(a > b)) is False
    with pytest.raises(TypeError, match="unhashable"):
        hash(a)
    with pytest.raises(ZeroDivisionError):
        a // 0


def test_sizes_are_known_at_least_two_without_a_guard():
    env = ShapeEnv()
    (a,) = _symints(env, 5)
    assert bool(a > 1) and bool(a >= 2) and not bool(a == 1) and not bool(a == 0) and bool(a != 1)
    assert not env.guards
    assert statically_known_true(a * a >= 4) and not statically_known_true(a > 3)
    assert bool(a > 3) and [str(g) for g in env.guards] == ["s0 > 3"]
    assert str(env.var_to_range[a.node.expr]) == "VR[4, oo]"


def test_an_equality_guard_replaces_a_symbol():
    env = ShapeEnv()
    a, b = _symints(env, 6, 6 + 0)  # duck sizing: one symbol
    assert a.node.expr == b.node.expr
    c, d = _symints(env, 7, 8)
    assert bool(c * 2 == 14)  # solved: s1 is 7
    assert env.replacements == {c.node.expr: 7} or str(c) == "7"
    assert is_concrete_int(c) and int(c) == 7
    assert bool(d == d + 0) and not env.guards[1:]


def test_zero_and_one_are_ints():
    env = ShapeEnv()
    sizes, _strides, offset = env.create_symbolic_sizes_strides_storage_offset(ember.empty(1, 5, 0), "L['x']")
    assert sizes[0] == 1 and type(sizes[0]) is int and sizes[2] == 0 and type(sizes[2]) is int
    assert isinstance(sizes[1], ember.SymInt) and offset == 0


def test_strides_of_a_contiguous_input_are_products_of_its_sizes():
    env = ShapeEnv()
    sizes, strides, _ = env.create_symbolic_sizes_strides_storage_offset(ember.empty(2, 3, 4), "L['x']")
    assert [str(s) for s in strides] == ["s1*s2", "s2", "1"]
    sizes, strides, _ = env.create_symbolic_sizes_strides_storage_offset(ember.empty(4, 6).t(), "L['y']")
    assert [str(s) for s in sizes] == ["s3", "s2"] and [str(s) for s in strides] == ["1", "s3"]


def test_checks_on_symbolic_conditions():
    env = ShapeEnv()
    (a,) = _symints(env, 5)
    ember._check(a > 3)
    assert [str(g) for g in env.guards] == ["s0 > 3"]
    with pytest.raises(RuntimeError, match="too small"):
        ember._check(a > 30, lambda: "too small")
    with pytest.raises(ValueError, match="Expected cond"):
        ember._check_value(False)
    with pytest.raises(RuntimeError):
        ember._check_is_size(-1)
    u = env.create_unbacked_symint()
    ember._check_is_size(u)
    ember._check(u < 100)
    assert bool(u >= 0) and bool(u <= 99)
    assert [str(r.expr) for r in env.deferred_runtime_asserts[u.node.expr]] == ["u0 >= 0", "u0 < 100"]


def test_data_dependent_decisions_raise():
    env = ShapeEnv()
    u = env.create_unbacked_symint()
    with pytest.raises(GuardOnDataDependentSymNode, match="u0 > 5"):
        bool(u > 5)
    assert guard_or_false(u > 5) is False
    assert isinstance(u * 2 + 1, ember.SymInt) and u.node.hint is None
    f = env.create_unbacked_symfloat()
    assert str(f) == "zuf0"


def test_produce_guards_evaluate_on_the_inputs():
    env = ShapeEnv()
    x, y = _meta(env, ember.empty(5, 3), "L['x']"), _meta(env, ember.empty(3, 4), "L['y']")
    out = x @ y
    assert [str(s) for s in out.shape] == ["s0", "s2"]
    guards = env.produce_guards([x, y], ["L['x']", "L['y']"])
    assert "L['y'].size()[0] == L['x'].size()[1]" in guards

    def holds(a, b) -> bool:
        return all(eval(g, {}, {"L": {"x": a, "y": b}}) for g in guards)

    assert holds(ember.empty(5, 3), ember.empty(3, 4))
    assert holds(ember.empty(9, 7), ember.empty(7, 2))
    assert not holds(ember.empty(9, 7), ember.empty(6, 2))  # the inner sizes differ
    assert not holds(ember.empty(9, 1), ember.empty(1, 2))  # 1 would have been specialized
    assert env.evaluate_guards_for_args([x, y], [ember.empty(4, 6), ember.empty(6, 2)])


def test_guards_that_mention_expressions_print_as_python():
    env = ShapeEnv()
    x = _meta(env, ember.empty(6, 4), "L['x']")
    assert bool(x.shape[0] // 2 + x.shape[1] % 3 == 4)
    assert bool(ember.sym_max(x.shape[0], x.shape[1] * 2) == 8)
    guards = env.produce_guards([x], ["L['x']"])
    for a, expected in ((ember.empty(6, 4), True), (ember.empty(8, 4), False), (ember.empty(2, 4), False)):
        assert all(eval(g, {}, {"L": {"x": a}}) for g in guards) is expected, guards


def test_schema_matching_accepts_symbolic_ints():
    env = ShapeEnv()
    n, m = _symints(env, 5, 3)
    base = ember.empty(1, 1, device="meta")
    assert [str(s) for s in ember.ops.aten.expand(base, [n, m]).shape] == ["s0", "s1"]
    assert [str(s) for s in ember.ops.aten.narrow(ember.empty(9, device="meta"), 0, 1, m).shape] == ["s1"]


def test_an_expression_follows_later_replacements():
    env = ShapeEnv(duck_shape=False)
    a, b = _symints(env, 4, 4)
    total = a + b
    assert str(total) == "s0 + s1"
    assert bool(a == b)
    assert str(total) == "2*s0"
    assert isinstance(sympy.sympify(total.node.expr), sympy.Expr)


def test_floor_div_of_multiples_plus_a_constant():
    """(b*k + c) // b is k + c // b for integer k: exact, for every sign of c and k."""
    from ember.fx.experimental._sympy import FloorDiv

    k = sympy.Symbol("k", integer=True)
    j = sympy.Symbol("j", integer=True, nonnegative=True)
    assert FloorDiv(2 * k + 1, 2) == k
    assert FloorDiv(4 * k + 8 * j - 5, 4) == k + 2 * j - 2
    for b in (2, 3, 4):
        for c in range(-9, 10):
            expr = FloorDiv(b * k + 6 * j + c, b) if 6 % b == 0 else FloorDiv(b * k + c, b)
            for kv in (-3, 0, 5):
                got = expr.subs({k: kv, j: 2})
                want = (b * kv + (12 if 6 % b == 0 else 0) + c) // b
                assert got == want, (b, c, kv, expr)
    x = sympy.Symbol("x")  # not known to be an integer: left alone
    assert isinstance(FloorDiv(2 * x + 1, 2), FloorDiv)
    assert isinstance(FloorDiv(2 * k + j + 1, 2), FloorDiv)  # j is no multiple of 2
