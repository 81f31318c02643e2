"""In-place ops on views under ``vmap`` composed with ``grad``/``vjp``/``jacrev``, against ``torch.func``."""

from __future__ import annotations

import numpy as np
import pytest
from vmap_view_programs import IDS, PROGRAMS, view_taken_before_base_needs_grad

import ember
import ember.func as func

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
tfunc = pytest.importorskip("torch.func", reason="the oracle, PyTorch, is not installed")

BATCH = 3


def _pair(shape, seed=0):
    array = np.random.default_rng(seed).standard_normal(shape)
    return ember.tensor(array), torch.tensor(array)


def _close(ours, theirs):
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("program", "shape"), PROGRAMS, ids=IDS)
def test_vmap_grad(program, shape):
    ours, theirs = _pair((BATCH, *shape))
    _close(
        func.vmap(func.grad(lambda x: program(ember, x)))(ours),
        tfunc.vmap(tfunc.grad(lambda x: program(torch, x)))(theirs),
    )


@pytest.mark.parametrize(("program", "shape"), PROGRAMS, ids=IDS)
def test_vmap_vjp(program, shape):
    def pullback(lib, api, x, ct):
        return api.vjp(lambda y: program(lib, y), x)[1](ct)[0]

    (ours, theirs), (ct_ours, ct_theirs) = _pair((BATCH, *shape)), _pair((BATCH,), seed=1)
    _close(
        func.vmap(lambda x, ct: pullback(ember, func, x, ct))(ours, ct_ours),
        tfunc.vmap(lambda x, ct: pullback(torch, tfunc, x, ct))(theirs, ct_theirs),
    )


@pytest.mark.parametrize(("program", "shape"), PROGRAMS, ids=IDS)
def test_grad_of_vmap(program, shape):
    ours, theirs = _pair((BATCH, *shape))
    _close(
        func.grad(lambda x: func.vmap(lambda y: program(ember, y))(x).sum())(ours),
        tfunc.grad(lambda x: tfunc.vmap(lambda y: program(torch, y))(x).sum())(theirs),
    )


@pytest.mark.parametrize(("program", "shape"), PROGRAMS, ids=IDS)
def test_nested_vmap_grad(program, shape):
    ours, theirs = _pair((2, BATCH, *shape))
    _close(
        func.vmap(func.vmap(func.grad(lambda x: program(ember, x))))(ours),
        tfunc.vmap(tfunc.vmap(tfunc.grad(lambda x: program(torch, x))))(theirs),
    )


@pytest.mark.parametrize(("program", "shape"), PROGRAMS, ids=IDS)
def test_vmap_functionalize_grad(program, shape):
    ours, theirs = _pair((BATCH, *shape))
    _close(
        func.vmap(func.functionalize(func.grad(lambda x: program(ember, x))))(ours),
        # PyTorch cannot batch functionalization's as_strided_scatter: the answer without functionalize
        tfunc.vmap(tfunc.grad(lambda x: program(torch, x)))(theirs),
    )


@pytest.mark.parametrize(("program", "shape"), PROGRAMS, ids=IDS)
def test_vmap_jvp_and_jvp_of_vmap(program, shape):
    (ours, theirs), (t_ours, t_theirs) = _pair((BATCH, *shape)), _pair((BATCH, *shape), seed=1)
    expected = tfunc.vmap(lambda x, t: tfunc.jvp(lambda y: program(torch, y), (x,), (t,))[1])(theirs, t_theirs)
    _close(func.vmap(lambda x, t: func.jvp(lambda y: program(ember, y), (x,), (t,))[1])(ours, t_ours), expected)
    _close(func.jvp(func.vmap(lambda y: program(ember, y)), (ours,), (t_ours,))[1], expected)


def _vector_program(lib, x):
    r = x * 1.5
    r[1:].mul_(x[:-1])
    r.view(2, 3)[:, 2].add_(x[:2] * x[3:5])
    r[lib.tensor([0, 3])] = x[4:] ** 2
    return r


def test_jacrev_and_vmap_jacrev():
    ours, theirs = _pair((BATCH, 6))
    _close(
        func.jacrev(lambda x: _vector_program(ember, x))(ours[0]),
        tfunc.jacrev(lambda x: _vector_program(torch, x))(theirs[0]),
    )
    _close(
        func.vmap(func.jacrev(lambda x: _vector_program(ember, x)))(ours),
        tfunc.vmap(tfunc.jacrev(lambda x: _vector_program(torch, x)))(theirs),
    )
    _close(
        func.vmap(func.jacrev(func.jacrev(lambda x: _vector_program(ember, x).sum())))(ours),
        tfunc.vmap(tfunc.jacrev(tfunc.jacrev(lambda x: _vector_program(torch, x).sum())))(theirs),
    )


def test_saved_view_overwritten_raises_as_in_pytorch():
    def program(lib, x):
        r = x.clone()
        r[2:].add_(r[:-2] * x[:4])  # mul saves r[:-2], which the add then overwrites
        return r.sum()

    ours, theirs = _pair((BATCH, 6))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tfunc.vmap(tfunc.grad(lambda x: program(torch, x)))(theirs)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        func.vmap(func.grad(lambda x: program(ember, x)))(ours)


def test_view_taken_before_its_base_requires_grad_without_transforms():
    ours, theirs = _pair((6,))
    ours.requires_grad_()
    theirs.requires_grad_()
    view_taken_before_base_needs_grad(ember, ours).backward()
    view_taken_before_base_needs_grad(torch, theirs).backward()
    _close(ours.grad, theirs.grad)


def _with_weight(lib, x, w):
    r = x * 1.0
    r[1:].mul_(w[:-1] * x[:-1])
    r.view(2, 3)[:, 0].add_(w[:2])
    return (r * r).sum()


def test_gradient_of_a_captured_weight_through_vmap():
    (xs, xs_t), (w, w_t) = _pair((BATCH, 6)), _pair((6,), seed=1)
    _close(
        func.grad(lambda v: func.vmap(lambda x: _with_weight(ember, x, v))(xs).sum())(w),
        tfunc.grad(lambda v: tfunc.vmap(lambda x: _with_weight(torch, x, v))(xs_t).sum())(w_t),
    )
    w.requires_grad_()
    w_t.requires_grad_()
    func.vmap(lambda x: _with_weight(ember, x, w))(xs).sum().backward()
    tfunc.vmap(lambda x: _with_weight(torch, x, w_t))(xs_t).sum().backward()
    _close(w.grad, w_t.grad)
