"""Fake tensors with a ``ShapeEnv``: symbolic sizes from conversion, unbacked sizes from data-dependent
ops and ``item()``, and the errors when the environment does not allow them."""

from __future__ import annotations

import pytest

import ember
from ember._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensor,
    FakeTensorMode,
)
from ember.core.symbolic import SymBool, SymFloat, SymInt
from ember.fx.experimental.symbolic_shapes import ShapeEnv


def _names(values) -> list[str]:
    return [str(v) for v in values]


def test_from_tensor_gives_symbolic_sizes_strides_and_offset():
    env = ShapeEnv()
    mode = FakeTensorMode(shape_env=env)
    x = mode.from_tensor(ember.randn(4, 3), source="L['x']")
    assert isinstance(x.shape[0], SymInt) and _names(x.shape) == ["s0", "s1"]
    assert _names(x.stride()) == ["s1", "1"] and x.storage_offset() == 0
    assert env.var_to_sources[x.shape[0].node.expr] == ["L['x'].size()[0]"]
    with mode:
        y = x.t() @ x
        z = x.view(-1)
    assert _names(y.shape) == ["s1", "s1"] and _names(z.shape) == ["s0*s1"] and z._base is x
    assert mode.from_tensor(ember.randn(4, 3), static_shapes=True).shape == (4, 3)
    assert FakeTensorMode(shape_env=ShapeEnv(), static_shapes=True).from_tensor(ember.randn(4, 3)).shape == (4, 3)


def test_a_symbolic_view_is_a_view_of_the_symbolic_base():
    mode = FakeTensorMode(shape_env=ShapeEnv())
    base = ember.randn(5, 7)
    view = mode.from_tensor(base[1:], source="v")
    fake_base = mode.from_tensor(base)
    assert view._base is fake_base and view.untyped_storage() is fake_base.untyped_storage()
    assert _names(view.shape) == ["s0", "s1"] and _names(fake_base.shape) == ["s2", "s1"]
    assert str(view.storage_offset()) == "s1"


def test_data_dependent_ops_give_unbacked_sizes_when_allowed():
    env = ShapeEnv(allow_dynamic_output_shape_ops=True)
    mode = FakeTensorMode(shape_env=env)
    x = mode.from_tensor(ember.randn(4, 3))
    with mode:
        nz = ember.nonzero(x)
        selected = x[x[:, 0] > 0]
        values, inverse, counts = ember.unique(x, return_inverse=True, return_counts=True)
        masked = x.masked_select(x > 0)
    assert isinstance(nz, FakeTensor) and _names(nz.shape) == ["u0", "2"] and _names(nz.stride()) == ["1", "u0"]
    assert _names(selected.shape) == ["u1", "s1"] and _names(selected.stride()) == ["s1", "1"]
    assert _names(values.shape) == ["u2"] and inverse.shape == x.shape and counts.shape == values.shape
    assert _names(masked.shape) == ["u3"]
    # Each unbacked size is a size: at least 0, and size-like for size-oblivious reasoning.
    assert {str(s) for s in env.size_like} == {"u0", "u1", "u2", "u3"}


def test_data_dependent_ops_raise_when_the_environment_does_not_allow_them():
    mode = FakeTensorMode(shape_env=ShapeEnv(allow_dynamic_output_shape_ops=False))
    x = mode.from_tensor(ember.randn(4, 3))
    with mode, pytest.raises(DynamicOutputShapeException):
        ember.nonzero(x)


def test_item_gives_an_unbacked_symbol_of_the_dtype_s_kind():
    mode = FakeTensorMode(shape_env=ShapeEnv())
    x = mode.from_tensor(ember.randn(4, 3))
    with mode:
        f = x.sum().item()
        i = x.long().sum().item()
        b = (x.sum() > 0).item()
    assert isinstance(f, SymFloat) and isinstance(i, SymInt) and isinstance(b, SymBool)
    strict = FakeTensorMode(shape_env=ShapeEnv(allow_scalar_outputs=False))
    with strict, pytest.raises(DataDependentOutputException):
        strict.from_tensor(ember.randn(2)).sum().item()
