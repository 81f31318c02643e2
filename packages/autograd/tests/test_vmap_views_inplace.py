"""In-place ops on views under ``vmap`` composed with ``grad``/``vjp``, against a loop over the samples.

The batched answer of each program in ``vmap_view_programs`` must equal what ``grad`` gives one sample
at a time; programs that cannot be differentiated must raise under ``vmap`` as they do without it.
"""

from __future__ import annotations

import numpy as np
import pytest
from vmap_view_programs import IDS, PROGRAMS

import ember
from ember.func import grad, jacrev, vjp, vmap

BATCH = 3


def _batch(shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal((BATCH, *shape)))


def _loop(fn, xs):
    return np.stack([fn(xs[i]).numpy() for i in range(BATCH)])


def _close(ours, expected):
    np.testing.assert_allclose(ours.numpy(), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("program", "shape"), PROGRAMS, ids=IDS)
def test_vmap_grad_matches_per_sample_grad(program, shape):
    def f(x):
        return program(ember, x)

    xs = _batch(shape)
    _close(vmap(grad(f))(xs), _loop(grad(f), xs))


@pytest.mark.parametrize(("program", "shape"), PROGRAMS, ids=IDS)
def test_vmap_vjp_matches_per_sample_vjp(program, shape):
    def f(x):
        return program(ember, x)

    def pullback(x, ct):
        return vjp(f, x)[1](ct)[0]

    xs = _batch(shape)
    cts = ember.tensor([0.5, -2.0, 3.0], dtype=ember.float64)
    expected = np.stack([pullback(xs[i], cts[i]).numpy() for i in range(BATCH)])
    _close(vmap(pullback)(xs, cts), expected)


@pytest.mark.parametrize(("program", "shape"), PROGRAMS, ids=IDS)
def test_grad_of_vmap_matches_per_sample_grad(program, shape):
    def f(x):
        return program(ember, x)

    xs = _batch(shape)
    _close(grad(lambda x: vmap(f)(x).sum())(xs), _loop(grad(f), xs))


def test_nested_vmap_and_batch_not_first():
    def f(x):
        r = x.clone()
        r[1:].mul_(x[:-1])
        r.view(2, 3)[:, 0].add_(x[4:] * x[:2].sum())
        return (r * r).sum()

    xs = ember.tensor(np.random.default_rng(1).standard_normal((2, BATCH, 6)))
    expected = np.stack([_loop(grad(f), xs[i]) for i in range(2)])
    _close(vmap(vmap(grad(f)))(xs), expected)
    moved = xs[0].t().contiguous()  # (6, BATCH): each sample is a column
    _close(vmap(grad(f), in_dims=1)(moved), _loop(grad(f), xs[0]))


def test_second_order_through_an_in_place_op_on_a_view():
    def f(x):
        r = x * x
        r[1:].mul_(x[:-1])
        r[::2].add_(x[1::2].sin())
        return (r * x).sum()

    xs = _batch((6,))
    _close(vmap(jacrev(jacrev(f)))(xs), _loop(jacrev(jacrev(f)), xs))


def test_in_place_on_a_view_of_the_input_refuses_as_without_vmap():
    def f(x):
        x[1:].mul_(2)
        return x.sum()

    xs = _batch((6,))
    with pytest.raises(RuntimeError, match="view of a leaf Variable that requires grad"):
        grad(f)(xs[0])
    with pytest.raises(RuntimeError, match="view of a leaf Variable that requires grad"):
        vmap(grad(f))(xs)


def test_in_place_on_an_unbind_output_refuses_as_without_vmap():
    def f(x):
        r = x.clone()
        r.unbind(0)[1].mul_(x[0])
        return r.sum()

    xs = _batch((6,))
    with pytest.raises(RuntimeError, match="output of a function that returns multiple views"):
        grad(f)(xs[0])
    with pytest.raises(RuntimeError, match="output of a function that returns multiple views"):
        vmap(grad(f))(xs)


def test_views_of_batched_tensors_know_their_base():
    seen = {}

    def f(x):
        r = x.clone()
        v = r[1:].view(5, 1)
        seen["same_base"] = v._base is r
        v.mul_(2)
        seen["base_written"] = r
        return r

    xs = _batch((6,))
    out = vmap(f)(xs)
    assert seen["same_base"]
    expected = xs.numpy().copy()
    expected[:, 1:] *= 2
    _close(out, expected)


def test_in_place_on_a_view_whose_rule_copied_raises():
    from ember.core.dispatch import define, undefine
    from ember.core.tensor import make_view
    from ember.func._vmap.table import RULES, batch_rule

    op = define("vmap_copying_view(Tensor(a) self) -> Tensor(a)", tags=("view",), namespace="aten")
    op.register_kernel("cpu")(lambda self: make_view(self, self._shape, self._stride, self._offset))
    batch_rule(op)(lambda call: call.args[0].clone())  # a faulty rule: no alias of the value
    try:

        def f(x):
            r = x.clone()
            op(r).mul_(2)
            return r

        with pytest.raises(RuntimeError, match="view op whose batching rule had to copy"):
            vmap(f)(_batch((6,)))
    finally:
        del RULES[op]
        undefine(op)


def test_reshape_that_copies_is_a_new_tensor_as_without_vmap():
    def f(x):
        r = x.t().reshape(6)  # not viewable: a copy, which the write below does not reach through
        r.mul_(2)
        return x + r.sum()

    xs = _batch((2, 3))
    _close(vmap(f)(xs), _loop(f, xs))
