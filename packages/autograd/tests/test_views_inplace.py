"""Views and in-place ops under autograd, against PyTorch: the same program runs in both libraries.

Each case is a function of the library and a float64 leaf; it returns a tensor whose sum of
``weights *`` elements is differentiated. The cases write through views, write the base while
views of it live, chain views of views, use overlapping and gapped ``as_strided`` geometries, and
use the in-place view ops (``t_``, ``transpose_``, ``squeeze_``, ``unsqueeze_``).
"""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _write_through_view(lib, x):
    y = x * 1
    y[1:3].mul_(x[0:2] + 1)
    return y


def _base_written_after_view(lib, x):
    y = x * 1
    v = y[1]  # its history predates the write below
    y.mul_(3)
    return v * 2


def _base_written_twice(lib, x):
    y = x * 2
    v = y[:, 1:]
    y.add_(1)
    w = v.t()  # a view of a stale view
    y.mul_(y.detach().cos())
    return w.sin()


def _sibling_view_written(lib, x):
    y = x * 2
    a, b = y[0], y[:, 0]
    a.mul_(x[1])
    return b + a.sum()


def _view_of_view_written(lib, x):
    y = x.clone()
    v = y[1:]
    w = v[:, ::2]
    w.pow_(2)
    return y * v.sum()


def _transpose_inplace(lib, x):
    y = x.clone()
    y.t_()
    y.mul_(lib.arange(4.0, dtype=lib.float64).reshape(4, 1))
    return y


def _view_ops_inplace(lib, x):
    y = (x * 1).unsqueeze(0)
    y.squeeze_(0)
    y.unsqueeze_(1)
    y.transpose_(0, 2)
    return y * lib.arange(3.0, dtype=lib.float64).reshape(1, 1, 3)


def _transpose_inplace_on_view(lib, x):
    y = x.clone()
    v = y[:, 1:]
    v.t_()
    v.mul_(2)
    return y


def _overlapping_as_strided(lib, x):
    return x.as_strided((3, 3), (1, 1), 1) * 1


def _as_strided_of_expanded(lib, x):
    return x[0].expand(2, 4).as_strided((2, 2), (1, 1), 0).sin()


def _as_strided_gapped_input(lib, x):
    return x.t()[::2].as_strided((2, 2), (4, 2), 1).exp()


def _write_into_overlapping_as_strided_view(lib, x):
    y = x.clone()
    y.as_strided((2, 2), (4, 1), 1).mul_(3)
    return y


def _overlapping_view_after_base_write(lib, x):
    y = x * 1
    v = y.as_strided((3, 3), (1, 1), 2)  # element i + j: each one read up to three times
    y.mul_(2)
    return v.cos()


def _write_into_gapped_base(lib, x):
    base = lib.empty_strided((3, 4), (8, 2), dtype=lib.float64)
    base.copy_(x)
    base[1].mul_(x[0])
    return base


def _write_into_interleaved_base(lib, x):
    base = lib.empty_strided((2, 3), (3, 2), dtype=lib.float64)  # rows interleave; no position is shared
    base.copy_(x[:2, :3])
    base[:, 1].mul_(x[:2, 3])
    return base


def _index_put_into_view(lib, x):
    y = x * 1
    y[1:].index_put_((lib.tensor([1, 0, 1]), lib.tensor([3, 3, 0])), x[0, :3] * 2, accumulate=True)
    return y


def _masked_fill_view_with_tensor(lib, x):
    y = x * 1
    y[:, 1].masked_fill_(lib.tensor([True, False, True]), x[2, 3])
    return y


def _scatter_reduce_into_transposed_view(lib, x):
    y = x * 1
    index = lib.tensor([[0, 0], [2, 1], [1, 1], [0, 2]])
    y.t().scatter_reduce_(1, index, x.t()[:, :2].exp() + 1, "prod", include_self=True)
    return y


def _view_updated_from_a_sibling(lib, x):
    y = x * 1
    y[0].add_(y[1].exp() - y[2])
    y[:, 0].mul_(y[:, 3].clone())
    return y


def _setitem_into_zeros(lib, x):
    out = lib.zeros(3, 4, dtype=lib.float64)
    out[x.detach() > 1] = x[x.detach() > 1] ** 2
    out[0] = x[1]
    return out


def _index_copy_then_view_use(lib, x):
    y = x * 1
    column = y[:, 2]
    y.index_copy_(0, lib.tensor([2, 0]), x[:2].flip(0) * 3)
    return column.sum() * y[1]


CASES = [
    _write_through_view,
    _base_written_after_view,
    _base_written_twice,
    _sibling_view_written,
    _view_of_view_written,
    _transpose_inplace,
    _view_ops_inplace,
    _transpose_inplace_on_view,
    _overlapping_as_strided,
    _as_strided_of_expanded,
    _as_strided_gapped_input,
    _write_into_overlapping_as_strided_view,
    _overlapping_view_after_base_write,
    _write_into_gapped_base,
    _write_into_interleaved_base,
    _index_put_into_view,
    _masked_fill_view_with_tensor,
    _scatter_reduce_into_transposed_view,
    _index_copy_then_view_use,
    _view_updated_from_a_sibling,
    _setitem_into_zeros,
]


def _grad(lib, case, data: np.ndarray) -> np.ndarray:
    x = lib.tensor(data, dtype=lib.float64, requires_grad=True)
    out = case(lib, x)
    weights = lib.tensor(np.random.default_rng(7).standard_normal(tuple(out.shape)), dtype=lib.float64)
    (out * weights).sum().backward()
    return x.grad.numpy()


@needs_torch
@pytest.mark.parametrize("case", [pytest.param(c, id=c.__name__.strip("_")) for c in CASES])
def test_view_and_inplace_gradients_match_pytorch(case):
    data = np.random.default_rng(3).uniform(0.5, 1.5, (3, 4))
    np.testing.assert_allclose(_grad(ember, case, data), _grad(torch, case, data), rtol=1e-12, atol=1e-12)


def test_view_history_regenerated_after_base_write():
    # The view's own node predates the write; its gradient must go through the write all the same.
    ours = _grad(ember, _base_written_after_view, np.ones((3, 4)))
    assert (ours[1] != 0).all() and (ours[[0, 2]] == 0).all()
    y = ember.ones(3, dtype=ember.float64, requires_grad=True) * 1
    v = y[:2]
    y.mul_(5)
    (v * 1).sum()  # a use regenerates the view's history from the base's
    assert v.grad_fn.name() == "AsStridedBackward0"


def test_inplace_view_ops_refuse_leaves():
    x = ember.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x.t_()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0:1].transpose_(0, 1)
    leaf_view = ember.zeros(2, 3)[0].requires_grad_()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        leaf_view.mul_(2)
    with ember.no_grad():
        x.squeeze_().unsqueeze_(0)
    assert x.shape == (1, 2, 3) and x.grad_fn is None and x.requires_grad


def test_inplace_view_ops_record_their_node():
    y = ember.ones(2, 3, requires_grad=True) * 1
    before, version = y.grad_fn, y._version
    y.t_()
    assert y.shape == (3, 2) and y.grad_fn.name() == "TBackward0"
    assert y.grad_fn.next_functions[0][0] is before
    assert y._version == version  # metadata only: no data written


def test_modified_saved_tensor_is_refused_after_a_view_write():
    x = ember.ones(3, dtype=ember.float64, requires_grad=True)
    y = x * 1
    z = y.exp()  # saves its result
    z[0:1].mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    a = x * 1
    b = a * a  # saves a
    a.t_()  # metadata only: the saved value stands
    b.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.ones(3))


@needs_torch
def test_modified_saved_tensor_errors_like_pytorch():
    messages = []
    for lib in (ember, torch):
        x = lib.ones(2, 2, dtype=lib.float64, requires_grad=True)
        y = x.sin()
        z = y * y
        y[0].add_(1)
        with pytest.raises(RuntimeError) as info:
            z.sum().backward()
        messages.append(str(info.value))
    for m in messages:
        assert "one of the variables needed for gradient computation has been modified by an inplace operation" in m
        assert "is at version 1; expected version 0 instead" in m


@needs_torch
@pytest.mark.parametrize("split", ["unbind", "split"])
def test_outputs_of_multi_view_ops_refuse_inplace_like_pytorch(split):
    messages = []
    for lib in (ember, torch):
        y = lib.ones(2, 3, dtype=lib.float64, requires_grad=True) * 1
        first = y.unbind()[0] if split == "unbind" else y.split(1)[0]
        for target in (first, first[1:]):
            with pytest.raises(RuntimeError) as info:
                target.mul_(2)
            messages.append(str(info.value))
    assert messages[:2] == messages[2:]
    with ember.no_grad():
        ember.ones(2, 3, requires_grad=True).unbind()[0].mul_(2)  # not recorded: allowed


def _no_grad_view_facts(lib, leaf: bool):
    x = lib.ones(3, dtype=lib.float64, requires_grad=True)
    source = x if leaf else x * 1
    with lib.no_grad():
        v, parts, detached = source[:2], source.split(2), source.detach()[:2]
        plain = lib.ones(3)[:2]
    y = v * 2
    facts = [v.requires_grad, v.grad_fn is None, v.is_leaf, parts[0].requires_grad, detached.requires_grad]
    facts += [plain.requires_grad, y.requires_grad, [fn for fn, _ in y.grad_fn.next_functions]]
    y.sum().backward()
    facts += [x.grad, v.grad]
    with pytest.raises(RuntimeError) as unused:
        lib.autograd.grad((v * 3).sum(), v)
    with pytest.raises(RuntimeError) as inplace:
        v.mul_(2)
    with lib.no_grad():
        v.mul_(2)  # allowed where it is not recorded
    return facts, str(unused.value), str(inplace.value), x.detach().tolist()


@needs_torch
@pytest.mark.parametrize("leaf", [True, False], ids=["of a leaf", "of a non-leaf"])
def test_views_made_under_no_grad_require_grad_without_history(leaf):
    """As in PyTorch: such a view requires grad, is a leaf without a grad_fn, passes no gradient to
    its base, and refuses in-place ops while grad mode is on."""
    assert _no_grad_view_facts(ember, leaf) == _no_grad_view_facts(torch, leaf)
