"""``ember.autograd.forward_ad`` and ``ember.func.jvp``: the API's semantics against PyTorch's.

Levels, ``make_dual``/``unpack_dual`` and their errors, views and in-place ops on duals, ops
without a forward rule (transposed from their backward formula), and forward mode composed with
reverse mode both ways.
"""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember
from ember.autograd import _forward_dispatch, registry
from ember.autograd import forward_ad as fw
from ember.core import dispatch
from ember.core.dispatch import define, undefine
from ember.func.transforms import grad, jvp

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)

X = np.array([[0.3, -1.2, 2.0], [0.7, 1.1, -0.4]])
V = np.array([[1.0, 0.5, -0.25], [-2.0, 0.1, 0.3]])


def e(a):
    return ember.tensor(np.asarray(a), dtype=ember.float64)


def t(a):
    return torch.tensor(np.asarray(a), dtype=torch.float64)


def _raises_like_torch(fn_ember, fn_torch):
    with pytest.raises(Exception) as theirs:
        fn_torch()
    with pytest.raises(type(theirs.value)) as ours:
        fn_ember()
    assert str(ours.value) == str(theirs.value).replace("torch.", "ember.")


# -- levels and their errors --------------------------------------------------------------------


@needs_torch
def test_level_errors_match_pytorch():
    tf = torch.autograd.forward_ad
    _raises_like_torch(lambda: fw.make_dual(e(X), e(V)), lambda: tf.make_dual(t(X), t(V)))
    with fw.dual_level() as ours, tf.dual_level() as theirs:
        assert ours == theirs == 0
        _raises_like_torch(lambda: fw.dual_level().__enter__(), lambda: tf.dual_level().__enter__())
        _raises_like_torch(lambda: fw.exit_dual_level(level=5), lambda: tf.exit_dual_level(level=5))
        _raises_like_torch(lambda: fw.make_dual(e(X), e(V), level=5), lambda: tf.make_dual(t(X), t(V), level=5))
        dual_e, dual_t = fw.make_dual(e(X), e(V)), tf.make_dual(t(X), t(V))
        _raises_like_torch(lambda: fw.unpack_dual(dual_e, level=3), lambda: tf.unpack_dual(dual_t, level=3))
    _raises_like_torch(lambda: fw.exit_dual_level(), lambda: tf.exit_dual_level())
    assert not dispatch.is_level_enabled("forward_ad"), "leaving the level must switch its dispatch level off"


@needs_torch
def test_make_dual_checks_match_pytorch():
    tf = torch.autograd.forward_ad
    with fw.dual_level(), tf.dual_level():
        _raises_like_torch(lambda: fw.make_dual(e(X), e(V[:, :2])), lambda: tf.make_dual(t(X), t(V[:, :2])))
        _raises_like_torch(
            lambda: fw.make_dual(ember.arange(3), e([1.0, 2, 3])), lambda: tf.make_dual(torch.arange(3), t([1.0, 2, 3]))
        )
        _raises_like_torch(
            lambda: fw.make_dual(e([1.0, 2, 3]), ember.arange(3)), lambda: tf.make_dual(t([1.0, 2, 3]), torch.arange(3))
        )
        dual_e, dual_t = fw.make_dual(e(X), e(V)), tf.make_dual(t(X), t(V))
        _raises_like_torch(lambda: fw.make_dual(dual_e, e(V)), lambda: tf.make_dual(dual_t, t(V)))


def test_make_dual_is_a_view_carrying_the_tangent():
    x, v = e(X), e(V)
    with fw.dual_level():
        d = fw.make_dual(x, v)
        assert d._base is x and fw.unpack_dual(x).tangent is None
        unpacked = fw.unpack_dual(d)
        assert isinstance(unpacked, tuple) and unpacked._fields == ("primal", "tangent")
        primal, tangent = unpacked
        assert tangent is v
        assert fw.unpack_dual(primal).tangent is None, "the primal of a dual carries no tangent"
        assert fw.unpack_dual(d.detach()).tangent is None
        np.testing.assert_array_equal(primal.numpy(), X)
    primal, tangent = fw.unpack_dual(d)
    assert primal is d and tangent is None, "leaving the level drops its tangents"
    assert "_fw_grad" not in d.__dict__, "and frees them"


def test_a_tangent_is_laid_out_like_its_primal():
    x = e(X).t()
    with fw.dual_level():
        d = fw.make_dual(x, e(V.T.copy()))
        tangent = fw.unpack_dual(d).tangent
        assert tangent.stride() == x.stride()
        np.testing.assert_array_equal(tangent.numpy(), V.T)


def test_tangent_dtype_may_differ_from_the_primal():
    with fw.dual_level():
        d = fw.make_dual(e(X).float(), e(V))
        assert fw.unpack_dual(d).tangent.dtype == ember.float64


# -- ops on duals ------------------------------------------------------------------------------


def _both(fn):
    """``fn(lib, x)``'s output tangents in Ember and PyTorch, x dual with tangent V."""
    results = []
    for lib, make in ((ember, e), (torch, t)):
        f = lib.autograd.forward_ad
        with f.dual_level():
            out = fn(lib, f.make_dual(make(X), make(V)))
            outs = out if isinstance(out, tuple | list) else (out,)
            results.append([f.unpack_dual(o).tangent for o in outs])
    return results


def _same(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x: (x.sin() * x + x.exp() / (x * x + 1)).sum(0),
        lambda lib, x: lib.atan2(x, x.cos()) + lib.hypot(x, x) * lib.maximum(x, x.cos()),
        lambda lib, x: x.reshape(3, 2)[1:].t().tanh().mm(x[:, :2].sigmoid()),
        lambda lib, x: lib.where(x > 0, x.pow(2), x.clamp(-1.0, 0.5)).mean(),
        lambda lib, x: (x.sum(), x.argmax(), x > 0, x.floor()),
    ],
    ids=["pointwise", "transposed", "views_and_mm", "where_clamp", "nondifferentiable_outputs"],
)
def test_ops_on_duals_match_pytorch(fn):
    _same(*_both(fn))


@needs_torch
def test_forward_ad_runs_under_no_grad():
    def fn(lib, x):
        with lib.no_grad():
            return x.sin().mul(x)

    _same(*_both(fn))


@needs_torch
def test_inplace_ops_update_the_tangent():
    def fn(lib, x):
        y = x.clone()
        y.mul_(x).add_(x.exp(), alpha=2.0)
        y[0].copy_(x[1])
        return (y,)

    _same(*_both(fn))


@needs_torch
def test_inplace_op_on_a_view_gives_its_base_a_tangent():
    def fn(lib, x):
        base = lib.zeros(3, 3, dtype=lib.float64)
        early = base[2]  # made before the base has a tangent: it reads its region of the base's later
        base[:2].copy_(x)
        base[:, 1].mul_(x[0])
        return base, early, base.sum()

    _same(*_both(fn))


@needs_torch
def test_a_view_tangent_is_a_view_of_the_base_tangent():
    def fn(lib, x):
        y = x * 1.0
        v = y[:, 1:]
        v.mul_(3.0)  # through the view: y's tangent changes too
        return y, v

    _same(*_both(fn))


def test_op_without_derivative_refuses_forward_ad():
    op = define("forward_ad_probe(Tensor self) -> Tensor", namespace="ember_test")
    op.register_kernel("cpu")(lambda self: self.clone())
    try:
        with fw.dual_level():
            d = fw.make_dual(e(X), e(V))
            with pytest.raises(NotImplementedError, match="Trying to use forward AD with ember_test::forward_ad_probe"):
                op(d)
    finally:
        undefine(op)


def _probe_with_derivative(jvp_rule=None):
    """An op ``x * x * 3`` whose table entry has only a backward formula (or the given ``jvp``)."""
    op = define("forward_ad_probe_sq(Tensor self) -> Tensor", namespace="ember_test")
    op.register_kernel("cpu")(lambda self: (self * self) * 3.0)

    def formula(grad, self, **_):
        return grad * self * 6.0

    registry.derivative(op, save=("self",), jvp=jvp_rule)(formula)
    return op


def _cleanup(op):
    registry.DERIVATIVES.pop(op, None)
    _forward_dispatch._plans.pop(op, None)
    undefine(op)


def test_backward_formula_is_transposed_into_a_jvp():
    op = _probe_with_derivative()
    try:
        with fw.dual_level():
            out = op(fw.make_dual(e(X), e(V)))
            np.testing.assert_allclose(fw.unpack_dual(out).tangent.numpy(), 6 * X * V)
            assert not out.requires_grad, "the primal output keeps no history of the transposition"
    finally:
        _cleanup(op)


def test_a_callable_jvp_is_used():
    op = _probe_with_derivative(jvp_rule=lambda tangents, self, **_: tangents[0] * self * 6.0 + 1.0)
    try:
        with fw.dual_level():
            out = op(fw.make_dual(e(X), e(V)))
            np.testing.assert_allclose(fw.unpack_dual(out).tangent.numpy(), 6 * X * V + 1.0)
    finally:
        _cleanup(op)


# -- composed with reverse mode -----------------------------------------------------------------


@needs_torch
def test_reverse_over_forward_matches_pytorch():
    results = []
    for lib, make in ((ember, e), (torch, t)):
        f = lib.autograd.forward_ad
        x = make(X).requires_grad_()
        with f.dual_level():
            d = f.make_dual(x, make(V))
            tangent = f.unpack_dual(lib.atan2(d, d.cos() + 2) * d.sin()).tangent
            results.append(lib.autograd.grad(tangent.sum(), x))
    _same(*results)


@needs_torch
def test_func_jvp_matches_pytorch():
    def f(lib):
        return lambda x, y: (x.sin() * y, (x @ y.t()).tanh())

    y = np.array([[0.5, 0.25, -1.0], [1.5, -0.5, 0.2]])
    ours = jvp(f(ember), (e(X), e(y)), (e(V), e(V[::-1].copy())))
    theirs = torch.func.jvp(f(torch), (t(X), t(y)), (t(V), t(V[::-1].copy())))
    _same([*ours[0], *ours[1]], [*theirs[0], *theirs[1]])


@needs_torch
def test_jvp_of_grad_matches_pytorch():
    def f(lib):
        return lambda x: (x.exp() * x.sin() + lib.hypot(x, x.cos())).sum()

    ours = jvp(grad(f(ember)), (e(X),), (e(V),))
    theirs = torch.func.jvp(torch.func.grad(f(torch)), (t(X),), (t(V),))
    _same(list(ours), list(theirs))


def test_jvp_has_aux_and_errors():
    out, tangent, aux = jvp(lambda x: (x * 2, x.sum()), (e(X),), (e(V),), has_aux=True)
    np.testing.assert_allclose(tangent.numpy(), 2 * V)
    np.testing.assert_allclose(out.numpy(), 2 * X)
    assert fw.unpack_dual(aux).tangent is None and aux.item() == pytest.approx(X.sum())
    with pytest.raises(RuntimeError, match="same shape"):
        jvp(lambda x: x, (e(X),), (e(V[:, :1]),))
    with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
        jvp(lambda x: jvp(lambda y: y * 2, (x,), (x,))[1], (e(X),), (e(V),))


@needs_torch
def test_hessian_and_jacfwd_match_pytorch():
    func = pytest.importorskip("ember.func")
    if not hasattr(func, "vmap"):
        pytest.skip("ember.func.vmap is not available")

    def f(lib):
        return lambda x: (x.sin() * x.exp()).sum() + (x * x).prod() + lib.atan2(x, x.cos() + 2).sum()

    x = np.array([0.3, -1.2, 2.0])
    _same([func.hessian(f(ember))(e(x))], [torch.func.hessian(f(torch))(t(x))])
    _same([func.jacfwd(lambda x: x.sin() * x.sum())(e(x))], [torch.func.jacfwd(lambda x: x.sin() * x.sum())(t(x))])


def test_a_formula_that_cannot_be_differentiated_is_transposed_row_by_row(monkeypatch):
    from ember.autograd import _forward_rules

    helper = define("forward_ad_probe_double(Tensor self) -> Tensor", namespace="ember_test")
    helper.register_kernel("cpu")(
        lambda self: self.clone() * 2.0
    )  # no derivative: the formula's is not twice-differentiable
    op = define("forward_ad_probe_rows(Tensor self) -> Tensor", namespace="ember_test")
    op.register_kernel("cpu")(lambda self: (self * self) * 3.0)
    registry.derivative(op, save=("self",))(lambda grad, self, **_: helper(grad) * self * 3.0)
    try:
        with fw.dual_level():
            out = op(fw.make_dual(e(X), e(V)))
            np.testing.assert_allclose(fw.unpack_dual(out).tangent.numpy(), 6 * X * V)
            monkeypatch.setattr(_forward_rules, "ROWS_LIMIT", 4)
            with pytest.raises(NotImplementedError, match="limited to 4 elements"):
                op(fw.make_dual(e(X), e(V)))
    finally:
        _cleanup(op)
        undefine(helper)


def test_outputs_marked_not_differentiable_get_no_tangent():
    op = define("forward_ad_probe_two(Tensor self) -> (Tensor, Tensor)", namespace="ember_test")
    op.register_kernel("cpu")(lambda self: (self * 2.0, self * 3.0))
    registry.derivative(op, output_differentiable=(True, False))(lambda grads, self, **_: grads[0] * 2.0)
    try:
        with fw.dual_level():
            first, second = op(fw.make_dual(e(X), e(V)))
            np.testing.assert_allclose(fw.unpack_dual(first).tangent.numpy(), 2 * V)
            assert fw.unpack_dual(second).tangent is None
    finally:
        _cleanup(op)


def test_an_op_without_entry_goes_through_its_decomposition():
    op = define("forward_ad_probe_decomposed(Tensor self, Tensor other) -> Tensor", namespace="ember_test")
    op.register_kernel("cpu")(lambda self, other: self * other + self)
    op.register_decomposition(lambda self, other: self.sin() * other)  # differs from the kernel on purpose
    try:
        with fw.dual_level():
            out = op(fw.make_dual(e(X), e(V)), e(X))
            np.testing.assert_allclose(fw.unpack_dual(out).tangent.numpy(), np.cos(X) * V * X)
            np.testing.assert_allclose(out.numpy(), np.sin(X) * X)
            plain = op(e(X), e(X))  # no dual argument: the kernel runs
            np.testing.assert_allclose(plain.numpy(), X * X + X)
    finally:
        undefine(op)


@needs_torch
def test_custom_function_uses_its_jvp():
    pytest.importorskip("ember.autograd.function")

    def make(lib, with_jvp: bool):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                ctx.save_for_forward(x)
                return x * x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 3 * x * x * g

        if with_jvp:
            # Deliberately not the derivative of forward: the Function's jvp is what counts.
            Cube.jvp = staticmethod(lambda ctx, t: 2 * ctx.saved_tensors[0] * t)
        return Cube

    results = []
    for lib, make_tensor in ((ember, e), (torch, t)):
        f = lib.autograd.forward_ad
        with f.dual_level():
            out = make(lib, True).apply(f.make_dual(make_tensor(X), make_tensor(V)))
            results.append([f.unpack_dual(out).tangent])
            plain = make(lib, True).apply(make_tensor(X))
            assert f.unpack_dual(plain).tangent is None
    _same(*results)
    with fw.dual_level(), torch.autograd.forward_ad.dual_level():
        _raises_like_torch(
            lambda: make(ember, False).apply(fw.make_dual(e(X), e(V))),
            lambda: make(torch, False).apply(torch.autograd.forward_ad.make_dual(t(X), t(V))),
        )
