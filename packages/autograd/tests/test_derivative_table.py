"""The derivative table covers the core: every op taking a tensor is differentiable, marked not, or decomposed."""

from __future__ import annotations

import pytest

import ember
from ember.autograd import registry
from ember.core.dispatch import define, undefine


def test_every_op_has_a_derivative_or_a_mark():
    missing = sorted(str(op) for op in registry.missing())
    assert not missing, f"ops without a derivative, a nondifferentiable mark or a decomposition: {missing}"


def test_inplace_ops_use_their_functional_entry():
    aten = ember.ops.aten
    assert registry.lookup(aten.mul_.Tensor) is registry.lookup(aten.mul.Tensor)


def test_a_new_op_without_entry_is_reported_and_refuses_to_record():
    op = define("autograd_table_probe(Tensor self) -> Tensor", namespace="ember_test")
    op.register_kernel("cpu")(lambda self: self.clone())
    try:
        x = ember.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="derivative for 'ember_test::autograd_table_probe' is not implemented"):
            op(x)
        with ember.no_grad():
            assert not op(x).requires_grad
    finally:
        undefine(op)


def test_a_formula_is_registered_once():
    with pytest.raises(RuntimeError, match="defined twice"):
        registry.derivative(ember.ops.aten.mul.Tensor)(lambda grad, **_: None)


def test_out_overloads_refuse_to_record():
    x = ember.ones(3, requires_grad=True)
    out = ember.empty(3)
    with pytest.raises(RuntimeError, match=r"out=\.\.\. arguments don't support automatic differentiation"):
        ember.add(x, x, out=out)
