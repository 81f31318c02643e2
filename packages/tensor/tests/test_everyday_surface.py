"""PyTorch's names that add no computation (top-level in-place forms, predicates, housekeeping Tensor
methods) and the index factories, against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")


def _pair(array):
    return ember.tensor(array), torch.tensor(array)


@pytest.mark.parametrize("name", ["abs_", "exp_", "clamp_", "neg_", "sigmoid_", "zero_", "fill_", "trunc_"])
def test_top_level_inplace_forms(name):
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    ours, theirs = _pair(a)
    args = {"clamp_": (-1.0, 1.0), "fill_": (3.0,)}.get(name, ())
    result = getattr(ember, name)(ours, *args)
    getattr(torch, name)(theirs, *args)
    assert result is ours
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_fill_returns_a_new_tensor():
    ours, theirs = _pair(np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(ember.fill(ours, 2.5).numpy(), torch.fill(theirs, 2.5).numpy())
    assert float(ours.sum()) == 0.0


@pytest.mark.parametrize("args", [(3, 4), (4, 3, 1), (5, 5, -2), (0, 3), (3, 3, 7)])
def test_triangle_indices(args):
    for name in ("tril_indices", "triu_indices"):
        ours, theirs = getattr(ember, name)(*args), getattr(torch, name)(*args)
        assert ours.dtype == ember.int64
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ember.tril_indices(3, 3, dtype=ember.int32).dtype == ember.int32


def test_predicates():
    (a, b) = _pair(np.ones((2, 3), np.float32))
    for name in ("is_tensor", "is_complex", "is_floating_point", "is_signed", "numel"):
        assert getattr(ember, name)(a) == getattr(torch, name)(b), name
    assert ember.is_tensor([1]) is False
    u8, t8 = _pair(np.ones(2, np.uint8))
    assert ember.is_signed(u8) == torch.is_signed(t8) and u8.is_signed() is False
    assert ember.is_same_size(a, a) and not a.is_same_size(a[0])
    assert ember.tensor([2]).is_nonzero() and not ember.is_nonzero(ember.tensor([0.0]))
    for values, message in (([], "no values"), ([1, 2], "more than one value")):
        with pytest.raises(RuntimeError, match=message):
            ember.tensor(values).is_nonzero()
    assert ember.scalar_tensor(3).dtype == ember.float32 and ember.scalar_tensor(3).ndim == 0


def test_conjugates_and_transposes_of_real_tensors():
    a = ember.tensor(np.arange(6.0).reshape(2, 3))
    assert ember.conj(a) is a and a.conj_physical() is a and ember.real(a) is a
    np.testing.assert_array_equal(a.H.numpy(), a.numpy().T)
    b = ember.ones(4, 2, 3)
    assert b.mH.shape == (4, 3, 2) and ember.adjoint(b).shape == (4, 3, 2)
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        b.H  # noqa: B018
    with pytest.raises(RuntimeError, match="non-complex"):
        ember.imag(a)


def test_housekeeping_methods():
    a, t = _pair(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    assert a.get_device() == t.get_device() == -1 and ember.get_device(a) == -1
    assert a.is_pinned() is False and a.is_shared() is False
    for size in ((1, 4), (3, 1), (4,), (1, 1)):
        np.testing.assert_array_equal(a.sum_to_size(*size).numpy(), t.sum_to_size(*size).numpy())
    with pytest.raises(RuntimeError, match="is not expandable"):
        a.sum_to_size(2, 4)
    assert a.new(2, 3).shape == t.new(2, 3).shape and a.new([1, 2]).dtype == ember.float32
    assert a.new().shape == (0,)


@pytest.mark.parametrize(("shape", "wrap"), [((7, 3), True), ((7, 3), False), ((3, 5), False), ((3, 3, 3), False)])
def test_fill_diagonal_(shape, wrap):
    ours, theirs = ember.zeros(*shape), torch.zeros(*shape)
    assert ours.fill_diagonal_(2.0, wrap=wrap) is ours
    theirs.fill_diagonal_(2.0, wrap=wrap)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(RuntimeError, match="equal length"):
        ember.zeros(2, 3, 4).fill_diagonal_(1.0)


def test_apply_and_map():
    ours, theirs = _pair(np.arange(6.0).reshape(2, 3))
    ours.apply_(lambda v: v * v + 1)
    theirs.apply_(lambda v: v * v + 1)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    other, other_t = _pair(np.array([1.0, 2.0, 3.0]))
    ours.map_(other, lambda x, y: x - y)
    theirs.map_(other_t, lambda x, y: x - y)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_ldexp_gradient_is_the_derivative_at_negative_exponents():
    # PyTorch's backward gives 0 where the exponent is a negative integer (it powers 2 in integers);
    # the derivative is 2 ** exponent, which Ember gives.
    x = ember.tensor([1.5, -2.0, 3.0], dtype=ember.float64, requires_grad=True)
    exponent = ember.tensor([-2, 0, 3])
    ember.ldexp(x, exponent).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.25, 1.0, 8.0])


def test_float_power_in_place_needs_float64():
    with pytest.raises(RuntimeError, match="requires dtype Double"):
        ember.ones(2).float_power_(2)
    a = ember.ones(2, dtype=ember.float64).float_power_(3)
    assert a.dtype == ember.float64


def test_gcd_refuses_floats():
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        ember.gcd(ember.ones(2), ember.ones(2))


def _layouts(lib):
    return [
        lib.empty(2, 3, 4),
        lib.empty(2, 3, 4).transpose(0, 2),
        lib.empty(2, 3, 4, 5).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),
        lib.empty(1, 3, 1).permute(2, 0, 1),
        lib.empty(3, 1).expand(3, 4),
        lib.empty(4, 3).t()[:, ::2],
        lib.empty(2, 2, 2).permute(1, 2, 0),
        lib.empty(()),
    ]


def test_dim_order():
    for ours, theirs in zip(_layouts(ember), _layouts(torch), strict=True):
        assert ours.stride() == theirs.stride()
        assert ours.dim_order() == theirs.dim_order(), ours.stride()


def test_layout_objects():
    assert ember.ones(2).layout is ember.strided and isinstance(ember.strided, ember.layout)
    assert repr(ember.strided) == "ember.strided"
    assert isinstance(ember.contiguous_format, ember.memory_format)


def test_is_set_to():
    for lib in (ember, torch):
        t = lib.ones(3)
        assert t.is_set_to(t) and t.is_set_to(t.view(3))
        assert not t.is_set_to(t[:2]) and not t.is_set_to(t.clone())


def test_inference_flags():
    with ember.inference_mode():
        made = ember.ones(2) * 2
    assert made.is_inference() and ember.is_inference(made)
    assert not ember.ones(2).is_inference() and not ember.ones(2).is_distributed()


@pytest.mark.parametrize("weight", [[0.1, 0.2, 0.3], [0.25]])
def test_prelu_and_hardshrink_methods(weight):
    a = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    ours, theirs = ember.tensor(a), torch.tensor(a)
    w = np.array(weight, np.float32)
    np.testing.assert_array_equal(ours.prelu(ember.tensor(w)).numpy(), theirs.prelu(torch.tensor(w)).numpy())
    np.testing.assert_array_equal(ours.hardshrink(0.7).numpy(), theirs.hardshrink(0.7).numpy())
    np.testing.assert_array_equal(ours.hardshrink().numpy(), theirs.hardshrink().numpy())
