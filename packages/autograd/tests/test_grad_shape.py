"""Gradients of the shape, indexing and random families against PyTorch, beyond the OpInfo runs.

The view table (``opinfo_views``) is sampled in float32; here its samples run again in float64, so
that every view's gradient meets PyTorch's over every layout. The other tests are the special cases
the tables leave out: duplicate indices, accumulation, ``include_self=False``, negative dims, 0-d.
"""

from __future__ import annotations

import numpy as np
import pytest
from grad_harness import _run, grad_case
from opinfo import ORACLE_MISSING, T, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _float64(value):
    if isinstance(value, T):
        return T(value.array.astype(np.float64), value.layout) if value.array.dtype == np.float32 else value
    if isinstance(value, list | tuple):
        return type(value)(_float64(v) for v in value)
    if isinstance(value, dict):
        return {k: _float64(v) for k, v in value.items()}
    return value


def _torch_refuses(op, sample) -> bool:
    try:
        _run(op, torch, sample)
    except Exception:
        return True
    return False


def _view_ops():
    import opinfo_views

    return [pytest.param(op, id=op.name) for op in opinfo_views.OPS if op.name not in ("view_dtype", "detach")]


@needs_torch
@pytest.mark.parametrize("op", _view_ops())
def test_view_gradients_match_pytorch(op):
    from opinfo import Sample

    compared = 0
    for sample in op.samples("float32", np.random.default_rng(0)):
        sample = Sample(_float64(sample.args), _float64(sample.kwargs), sample.name)
        try:
            case = grad_case(op, sample)
        except Exception:
            if _torch_refuses(op, sample):
                continue
            raise
        if case is None:
            continue
        for ours, theirs in zip(*case, strict=True):
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12, err_msg=f"{op.name} {sample}")
        compared += 1
    assert compared


# -- special cases: each is a function of the library and float64 leaves, run in both -------------


def _leaves(lib, shapes, seed=5):
    rng = np.random.default_rng(seed)
    return [lib.tensor(rng.uniform(-2, 2, s), dtype=lib.float64, requires_grad=True) for s in shapes]


def _long(lib, values):
    return lib.tensor(values, dtype=lib.int64)


def _both(fn, shapes, seed=5):
    """Input gradients of ``sum(weights * fn(lib, *leaves))`` in Ember and in PyTorch."""
    grads = []
    for lib in (ember, torch):
        leaves = _leaves(lib, shapes, seed)
        out = fn(lib, *leaves)
        weights = lib.tensor(np.random.default_rng(9).standard_normal(tuple(out.shape)), dtype=lib.float64)
        found = lib.autograd.grad((out * weights).sum(), leaves, allow_unused=True)
        grads.append([np.zeros(s) if g is None else g.detach().numpy() for g, s in zip(found, shapes, strict=True)])
    return grads


SPECIAL = {
    "index_put_accumulate_duplicates": (
        lambda lib, x, v: (x * 1).index_put_((_long(lib, [0, 2, 0]),), v, accumulate=True),
        [(3, 4), (3, 4)],
    ),
    "index_put_duplicates_overwrite": (
        lambda lib, x, v: (x * 1).index_put_((_long(lib, [1, 1]), _long(lib, [2, 2])), v),
        [(3, 4), (2,)],
    ),
    "index_put_broadcast_values": (
        lambda lib, x, v: (x * 1).index_put_((_long(lib, [0, 2]),), v, accumulate=True),
        [(3, 4), (4,)],
    ),
    "index_put_bool_mask": (
        lambda lib, x, v: lib.index_put(x, (x.detach() > 0,), v),
        [(3, 4), ()],
    ),
    "index_leading_none": (lambda lib, x: x[:, _long(lib, [3, 0, 3])], [(3, 4)]),
    "index_two_tensors_apart": (lambda lib, x: x[_long(lib, [1, 0]), :, _long(lib, [2, 2])], [(2, 3, 4)]),
    "index_select_negative_dim": (lambda lib, x: x.index_select(-1, _long(lib, [2, 2, 0])), [(3, 4)]),
    "index_select_0d": (lambda lib, x: x.index_select(0, _long(lib, [0])), [()]),
    "index_add_alpha_negative_dim": (
        lambda lib, x, s: x.index_add(-2, _long(lib, [1, 1]), s, alpha=-2.5),
        [(3, 4), (2, 4)],
    ),
    "index_add_0d": (lambda lib, x, s: x.index_add(0, _long(lib, [0]), s), [(), ()]),
    "index_copy_": (lambda lib, x, s: (x * 1).index_copy_(1, _long(lib, [3, 0]), s), [(3, 4), (3, 2)]),
    "index_fill_tensor_duplicates": (
        lambda lib, x, v: x.index_fill(1, _long(lib, [1, 3, 1]), v),
        [(3, 4), ()],
    ),
    "take_duplicates": (lambda lib, x: x.take(_long(lib, [[0, 5], [5, 11]])), [(3, 4)]),
    "put_accumulate": (lambda lib, x, s: x.put(_long(lib, [1, 1, 7]), s, accumulate=True), [(3, 4), (3,)]),
    "put_overwrite": (lambda lib, x, s: (x * 1).put_(_long(lib, [1, 7]), s), [(3, 4), (2,)]),
    "gather_negative_dim": (lambda lib, x: x.gather(-1, _long(lib, [[0, 0], [3, 1], [2, 2]])), [(3, 4)]),
    "gather_0d": (lambda lib, x: x.gather(0, _long(lib, 0)), [()]),
    "scatter_src_duplicates": (
        lambda lib, x, s: x.scatter(0, _long(lib, [[0, 1, 2, 0]]), s),
        [(3, 4), (1, 4)],
    ),
    "scatter_add_negative_dim": (
        lambda lib, x, s: x.scatter_add(-1, _long(lib, [[0, 0], [1, 3], [2, 2]]), s),
        [(3, 4), (3, 2)],
    ),
    "masked_fill_tensor_broadcast_mask": (
        lambda lib, x, v: x.masked_fill(lib.tensor([True, False, False, True]), v),
        [(3, 4), ()],
    ),
    "masked_scatter_spare_source": (
        lambda lib, x, s: x.masked_scatter(x.detach() > 0, s),
        [(3, 4), (14,)],
    ),
    "masked_select_broadcast_self": (
        lambda lib, x: x.masked_select(lib.tensor([[True, False, True, True], [False, False, True, False]])),
        [(4,)],
    ),
    "cat_legacy_empty": (lambda lib, x, e, y: lib.cat([x, e, y], 1), [(2, 3), (0,), (2, 1)]),
    "split_one_output_used": (lambda lib, x: x.split(2, -1)[1], [(3, 5)]),
    "unbind_partly_used": (lambda lib, x: x.unbind(1)[2] * 3, [(2, 4)]),
    "repeat_more_dims": (lambda lib, x: x.repeat(2, 1, 3), [(2, 2)]),
    "unfold_overlapping": (lambda lib, x: x.unfold(-1, 3, 1), [(2, 5)]),
    "unfold_0d": (lambda lib, x: x.unfold(0, 1, 1), [()]),
    "diagonal_offset": (lambda lib, x: x.diagonal(-1, 2, 0), [(3, 2, 4)]),
    "tril_inplace": (lambda lib, x: (x * 1).tril_(-1), [(3, 4)]),
    "flip_negative_dims": (lambda lib, x: x.flip(-1, 0), [(3, 4)]),
}


def _scatter_reduce_case(reduce, include_self):
    def fn(lib, x, s):
        base = x.detach().clone()
        base[0, 0] = 0.0 if reduce == "prod" else base[0, 0]
        base.requires_grad_()
        src = s * 1
        if reduce in ("amax", "amin"):
            src = src.round()  # ties between src elements, and with self
            x = x.round()
        if reduce == "prod":
            src = src.masked_fill(lib.tensor([[True, False, False], [False, False, False]]), 0.0)
        index = _long(lib, [[0, 0, 1], [2, 2, 2]])
        return (x * 1).scatter_reduce(1, index, src, reduce, include_self=include_self) + base.sum() * 0

    return fn


for _reduce in ("sum", "prod", "mean", "amax", "amin"):
    for _include in (True, False):
        SPECIAL[f"scatter_reduce_{_reduce}_include_self_{_include}"] = (
            _scatter_reduce_case(_reduce, _include),
            [(2, 4), (2, 3)],
        )


@needs_torch
@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_cases_match_pytorch(name):
    fn, shapes = SPECIAL[name]
    ours, theirs = _both(fn, shapes)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)


# -- random ops: PyTorch's rules (zero gradients, or none), compared on any draw -------------------

RANDOM = {
    "bernoulli": lambda lib, p: lib.bernoulli(p.sigmoid()),
    "normal_Tensor_Tensor": lambda lib, p: lib.normal(p, p.exp()),
    "normal_Tensor_float": lambda lib, p: lib.normal(p, 2.0),
    "normal_float_Tensor": lambda lib, p: lib.normal(1.0, p.exp()),
    "uniform_": lambda lib, p: (p * 1).uniform_(),
    "normal_": lambda lib, p: (p * 1).normal_(),
    "exponential_": lambda lib, p: (p * 1).exponential_(),
    "random_": lambda lib, p: (p * 1).random_(0, 5),
    "random_to": lambda lib, p: (p * 1).random_(5),
    "bernoulli_float": lambda lib, p: (p * 1).bernoulli_(0.25),
    "bernoulli_tensor": lambda lib, p: (p * 1).bernoulli_(p.sigmoid()),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(RANDOM))
def test_random_ops_give_zero_gradients_like_pytorch(name):
    grads = []
    for lib in (ember, torch):
        p = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
        out = RANDOM[name](lib, p)
        assert out.requires_grad
        out.sum().backward()
        grads.append(p.grad)
    ours, theirs = grads
    assert ours is not None and theirs is not None
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(ours.numpy(), np.zeros(3))


NOT_DIFFERENTIABLE = {
    "rand_like": lambda lib, x: lib.rand_like(x),
    "randn_like": lambda lib, x: lib.randn_like(x),
    "randint_like": lambda lib, x: lib.randint_like(x, 5),
    "multinomial": lambda lib, x: lib.multinomial(x.exp(), 2),
    "searchsorted": lambda lib, x: lib.searchsorted(x.detach().sort().values, x),
    "bucketize": lambda lib, x: lib.bucketize(x, x.detach().sort().values),
    "nonzero": lambda lib, x: lib.nonzero(x),
    "view_dtype_same": lambda lib, x: x.view(lib.float64),
    "view_dtype_other": lambda lib, x: x.view(lib.int64),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(NOT_DIFFERENTIABLE))
def test_nondifferentiable_outputs_like_pytorch(name):
    flags = []
    for lib in (ember, torch):
        x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
        out = NOT_DIFFERENTIABLE[name](lib, x)
        flags.append((out.requires_grad, out.grad_fn is None))
    assert flags[0] == flags[1] == (False, True)


@needs_torch
def test_unique_outputs_require_grad_but_have_no_derivative():
    for lib in (ember, torch):
        x = lib.tensor([[1.0, 2.0, 1.0], [3.0, 2.0, 3.0]], dtype=lib.float64, requires_grad=True)
        values, inverse, counts = lib.unique(x, return_inverse=True, return_counts=True)
        assert (values.requires_grad, inverse.requires_grad, counts.requires_grad) == (True, False, False)
        for out, name in (
            (values, "_unique2"),
            (lib.unique(x, dim=1), "unique_dim"),
            (lib.unique_consecutive(x), "unique_consecutive"),
        ):
            with pytest.raises(NotImplementedError, match=f"the derivative for '{name}' is not implemented"):
                out.sum().backward()


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_ops_without_derivative_in_pytorch_raise_at_backward():
    cases = [
        ("bernoulli", lambda lib, x: lib.bernoulli(x.sigmoid(), 0.5)),
        ("scatter", lambda lib, x: (x * 1).scatter(0, lib.tensor([0, 0]), x[:2] * 1, reduce="add")),
        ("scatter", lambda lib, x: (x * 1).scatter(0, lib.tensor([0, 1]), 2.0, reduce="multiply")),
    ]
    for name, fn in cases:
        for lib in (ember, torch):
            x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
            out = fn(lib, x)
            assert out.requires_grad
            with pytest.raises(RuntimeError, match=f"derivative for aten::{name} is not implemented"):
                out.sum().backward()


# -- double backward: the formulas are themselves differentiable ----------------------------------

TWICE = {
    "index": (lambda lib, x: x[_long(lib, [2, 0, 2])], (3, 4)),
    "index_put_accumulate": (
        lambda lib, x: lib.zeros(3, 4, dtype=lib.float64).index_put((_long(lib, [1, 1]),), x[:2], True),
        (3, 4),
    ),
    "gather": (lambda lib, x: x.gather(1, _long(lib, [[0, 0], [3, 1], [2, 2]])), (3, 4)),
    "index_select": (lambda lib, x: x.index_select(0, _long(lib, [2, 2, 1])), (3, 4)),
    "take": (lambda lib, x: x.take(_long(lib, [0, 0, 5])), (3, 4)),
    "masked_select": (lambda lib, x: x.masked_select(lib.tensor([True, False, True, True])), (3, 4)),
    "cat_split": (lambda lib, x: lib.cat(x.split([1, 3], 1)[::-1], 1), (3, 4)),
    "unfold": (lambda lib, x: x.unfold(1, 2, 1), (3, 4)),
    "as_strided_overlapping": (lambda lib, x: x.as_strided((3, 3), (1, 1), 1), (3, 4)),
    "diagonal": (lambda lib, x: x.diagonal(1), (3, 4)),
    "select_view": (lambda lib, x: x[1], (3, 4)),
    "repeat": (lambda lib, x: x.repeat(2, 1), (3, 4)),
    "scatter_reduce_mean": (
        lambda lib, x: x.scatter_reduce(1, _long(lib, [[0, 0], [1, 1], [3, 0]]), x[:, :2] * 2, "mean"),
        (3, 4),
    ),
    "scatter_reduce_amax": (
        lambda lib, x: x.scatter_reduce(1, _long(lib, [[0, 0], [1, 1], [3, 0]]), x[:, 2:] * 2, "amax"),
        (3, 4),
    ),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(TWICE))
def test_double_backward_matches_pytorch(name):
    fn, shape = TWICE[name]
    results = []
    for lib in (ember, torch):
        x = _leaves(lib, [shape])[0]
        out = fn(lib, x)
        weights = lib.tensor(np.random.default_rng(9).standard_normal(tuple(out.shape)), dtype=lib.float64)
        (g,) = lib.autograd.grad((out.sin() * weights).sum(), [x], create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), [x])
        results.append((g.detach().numpy(), h.numpy()))
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)
