"""``ember.func.vmap``'s API against ``torch.func.vmap``: dims, pytrees, nesting, errors, randomness, chunks."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember
from ember.core.dispatch import define, undefine
from ember.func import grad, jacrev, vmap
from ember.func._vmap import missing

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _pair(*shape, seed=0):
    array = np.random.default_rng(seed).standard_normal(shape).astype(np.float64)
    return ember.tensor(array), (torch.tensor(array) if torch is not None else None)


def _close(ours, theirs):
    if isinstance(ours, tuple | list):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            _close(a, b)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(force=True), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


def _same_error(ours_fn, theirs_fn, prefix_only: bool = False):
    with pytest.raises(Exception) as theirs:
        theirs_fn()
    with pytest.raises(type(theirs.value)) as ours:
        ours_fn()
    expected, got = str(theirs.value), str(ours.value)
    if prefix_only:  # pytree structures print differently; the message up to them must agree
        cut = expected.index("structure")
        assert got[:cut] == expected[:cut]
    else:
        assert got == expected


# -- dims and pytrees ------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize(
    ("in_dims", "shapes"),
    [(0, [(4, 3), (4, 3)]), ((0, None), [(4, 3), (3,)]), ((1, 0), [(3, 4), (4, 3)]), ((-1, -2), [(3, 4), (4, 3)])],
)
def test_in_dims(in_dims, shapes):
    (x, tx), (y, ty) = _pair(*shapes[0], seed=1), _pair(*shapes[1], seed=2)
    _close(
        vmap(lambda a, b: a.sin() * b, in_dims=in_dims)(x, y),
        torch.vmap(lambda a, b: a.sin() * b, in_dims=in_dims)(tx, ty),
    )


@needs_torch
def test_pytree_inputs_and_outputs():
    (x, tx), (y, ty) = _pair(5, 2, seed=1), _pair(2, 5, seed=2)

    def f(lib):
        return lambda d, pair: {"sum": d["a"] + pair[0], "prod": (d["a"] * pair[1], pair[0].exp())}

    ours = vmap(f(ember), in_dims=({"a": 0}, (1, None)))({"a": x}, (y, ember.ones(2)))
    theirs = torch.vmap(f(torch), in_dims=({"a": 0}, (1, None)))({"a": tx}, (ty, torch.ones(2, dtype=torch.float64)))
    _close(ours["sum"], theirs["sum"])
    _close(ours["prod"], theirs["prod"])


@needs_torch
@pytest.mark.parametrize("out_dims", [0, 1, -1, (1, 0), (None, 0)])
def test_out_dims(out_dims):
    x, tx = _pair(4, 3, 2)

    def f(lib):
        return lambda a: (lib.ones(2, dtype=lib.float64) if out_dims == (None, 0) else a.cos(), a.sum(0))

    _close(vmap(f(ember), out_dims=out_dims)(x), torch.vmap(f(torch), out_dims=out_dims)(tx))


@needs_torch
def test_unbatched_output_is_expanded_and_kwargs_pass_through():
    x, tx = _pair(3, 2)
    w, tw = _pair(2, seed=5)
    _close(vmap(lambda a, scale: w * scale)(x, scale=2.0), torch.vmap(lambda a, scale: tw * scale)(tx, scale=2.0))


@needs_torch
def test_nested_vmap():
    (x, tx), (y, ty) = _pair(2, 3, 4, seed=1), _pair(3, 4, seed=2)

    def f(lib):
        return lambda a, b: (a * b).sum() + a.max()

    inner = vmap(vmap(f(ember), in_dims=(0, None)), in_dims=(1, None))
    inner_t = torch.vmap(torch.vmap(f(torch), in_dims=(0, None)), in_dims=(1, None))
    _close(inner(x, y[0]), inner_t(tx, ty[0]))
    _close(
        vmap(vmap(lambda a, b: a @ b))(x, ember.ones(2, 3, 4, 5, dtype=ember.float64)),
        torch.vmap(torch.vmap(lambda a, b: a @ b))(tx, torch.ones(2, 3, 4, 5, dtype=torch.float64)),
    )


@needs_torch
@pytest.mark.parametrize("chunk_size", [1, 2, 3, 10])
def test_chunk_size(chunk_size):
    x, tx = _pair(5, 3)
    _close(
        vmap(lambda a: (a.exp(), a.sum()), chunk_size=chunk_size)(x),
        torch.vmap(lambda a: (a.exp(), a.sum()), chunk_size=chunk_size)(tx),
    )


@needs_torch
def test_matmul_family_mixing_batched_and_unbatched():
    (a, ta), (b, tb), (v, tv) = _pair(3, 4, 5, seed=1), _pair(5, 2, seed=2), _pair(3, 5, seed=3)
    _close(vmap(ember.mm, in_dims=(0, None))(a, b), torch.vmap(torch.mm, in_dims=(0, None))(ta, tb))
    _close(vmap(ember.mv)(a, v), torch.vmap(torch.mv)(ta, tv))
    _close(vmap(ember.dot)(v, v), torch.vmap(torch.dot)(tv, tv))
    _close(
        vmap(lambda m: ember.addmm(m[:, :2].sum(0), m, b, beta=0.5))(a),
        torch.vmap(lambda m: torch.addmm(m[:, :2].sum(0), m, tb, beta=0.5))(ta),
    )


@needs_torch
def test_conv_folds_the_batch_into_n():
    (x, tx), (w, tw) = _pair(3, 2, 4, 6, 6, seed=1), _pair(5, 4, 3, 3, seed=2)
    from ember.core.functional import conv2d

    _close(
        vmap(lambda i: conv2d(i, w, padding=1))(x),
        torch.vmap(lambda i: torch.nn.functional.conv2d(i, tw, padding=1))(tx),
    )


# -- in-place ops ------------------------------------------------------------------------------


@needs_torch
def test_inplace_into_batched_and_unbatched():
    (x, tx), (y, ty) = _pair(3, 4, seed=1), _pair(4, seed=2)

    def into_batched(a, b):
        a = a.clone()
        a.mul_(b)
        return a

    _close(vmap(into_batched, in_dims=(0, None))(x, y), torch.vmap(into_batched, in_dims=(0, None))(tx, ty))
    for method in ("add_", "mul_", "copy_", "pow_", "fill_"):

        def into_unbatched(a, b, method=method):
            return getattr(b, method)(a.sum() if method == "fill_" else a)

        _same_error(
            lambda f=into_unbatched: vmap(f, in_dims=(0, None))(x, y.clone()),
            lambda f=into_unbatched: torch.vmap(f, in_dims=(0, None))(tx, ty.clone()),
        )


# -- errors ---------------------------------------------------------------------------------------


@needs_torch
def test_errors_match_pytorch():
    (x, tx), (y, ty) = _pair(3, 2, seed=1), _pair(4, 2, seed=2)

    def f(a, b=None):
        return a

    cases = [
        (lambda v: v(f)(), False),
        (lambda v: v(f, in_dims=[0])(x if v is vmap else tx), False),
        (lambda v: v(f, in_dims=(0, 0, 0))(*((x, x) if v is vmap else (tx, tx))), True),
        (lambda v: v(f, in_dims=(0.5,))(x if v is vmap else tx), False),
        (lambda v: v(f, in_dims=(0, 0))(*((x, 1.0) if v is vmap else (tx, 1.0))), False),
        (lambda v: v(f, in_dims=(2,))(x if v is vmap else tx), False),
        (lambda v: v(f)(*((x, y) if v is vmap else (tx, ty))), False),
        (lambda v: v(f, in_dims=(None,))(x if v is vmap else tx), False),
        (lambda v: v(lambda a: 1.0)(x if v is vmap else tx), False),
        (lambda v: v(f, out_dims=None)(x if v is vmap else tx), False),
        (lambda v: v(f, out_dims=(0, 0))(x if v is vmap else tx), True),
        (lambda v: v(f, out_dims="x")(x if v is vmap else tx), False),
        (lambda v: v(f, randomness="sometimes"), False),
        (lambda v: v(f, chunk_size=0), False),
        (lambda v: v(lambda a: a.sum().item())(x if v is vmap else tx), False),
    ]
    for case, prefix_only in cases:
        _same_error(lambda c=case: c(vmap), lambda c=case: c(torch.vmap), prefix_only)


def test_data_dependent_control_flow_is_refused():
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        vmap(lambda a: a if a.sum() > 0 else -a)(ember.ones(3, 2))


def test_dynamic_shapes_are_refused():
    with pytest.raises(RuntimeError, match="dynamic shape"):
        vmap(ember.nonzero)(ember.ones(3, 2))


# -- randomness -----------------------------------------------------------------------------------


@needs_torch
def test_randomness_error_matches_pytorch():
    x, tx = _pair(3, 2)
    _same_error(lambda: vmap(lambda a: a + ember.rand(2))(x), lambda: torch.vmap(lambda a: a + torch.rand(2))(tx))
    _same_error(
        lambda: vmap(lambda a: a.bernoulli())(x.sigmoid()), lambda: torch.vmap(lambda a: a.bernoulli())(tx.sigmoid())
    )


@pytest.mark.parametrize("randomness", ["same", "different"])
def test_randomness_factories_and_batched_inputs(randomness):
    x = ember.zeros(4, 50)
    lanes = vmap(lambda a: a + ember.rand(50), randomness=randomness)(x)
    dropped = vmap(
        lambda a: ember.nn.functional.dropout(a + 1, 0.5) if hasattr(ember, "nn") else ember.bernoulli((a + 1) * 0.5),
        randomness=randomness,
    )(x)
    for out in (lanes, dropped):
        rows = [out[i] for i in range(4)]
        equal = all(bool((rows[0] == r).all()) for r in rows[1:])
        assert equal == (randomness == "same"), randomness


def test_randomness_in_place_on_unbatched_different_is_refused():
    with pytest.raises(RuntimeError, match="different inplace randomness on an unbatched tensor"):
        vmap(lambda a, b: b.uniform_(), in_dims=(0, None), randomness="different")(ember.ones(3), ember.ones(2))


def test_randomness_same_draws_from_one_stream():
    ember.manual_seed(0)
    lanes = vmap(lambda a: ember.randn_like(a), randomness="same")(ember.zeros(3, 5))
    ember.manual_seed(0)
    once = ember.randn(5)
    for i in range(3):
        np.testing.assert_array_equal(lanes[i].numpy(), once.numpy())


# -- composition with autograd --------------------------------------------------------------------


def _loss(lib):
    return lambda w, x: (x * w).tanh().sum() + (w.sin() * x).exp().mean()


@needs_torch
def test_per_sample_gradients_match_a_loop_and_pytorch():
    (w, tw), (x, tx) = _pair(3, seed=1), _pair(6, 3, seed=2)
    ours = vmap(grad(_loss(ember)), in_dims=(None, 0))(w, x)
    loop = ember.stack([grad(_loss(ember))(w, x[i]) for i in range(6)])
    np.testing.assert_allclose(ours.numpy(), loop.numpy(), rtol=1e-12, atol=1e-12)
    _close(ours, torch.vmap(torch.func.grad(_loss(torch)), in_dims=(None, 0))(tw, tx))


@needs_torch
def test_grad_through_vmap_and_of_per_sample_gradients():
    (w, tw), (x, tx) = _pair(3, seed=1), _pair(6, 3, seed=2)
    _close(
        grad(lambda w: vmap(lambda xi: (xi * w).sin().sum())(x).sum())(w),
        torch.func.grad(lambda w: torch.vmap(lambda xi: (xi * w).sin().sum())(tx).sum())(tw),
    )
    _close(
        grad(lambda w: vmap(grad(_loss(ember)), in_dims=(None, 0))(w, x).sum())(w),
        torch.func.grad(lambda w: torch.vmap(torch.func.grad(_loss(torch)), in_dims=(None, 0))(w, tx).sum())(tw),
    )


@needs_torch
def test_jacrev_and_hessian_by_reverse_over_reverse():
    x, tx = _pair(4, seed=3)

    def f(lib):
        return lambda a: a.sin() * a.sum() + a.exp().mean()

    _close(jacrev(f(ember))(x), torch.func.jacrev(f(torch))(tx))
    scalar = lambda lib: lambda a: (f(lib)(a) * a).sum()  # noqa: E731
    _close(jacrev(jacrev(scalar(ember)))(x), torch.func.hessian(scalar(torch))(tx))
    _close(
        vmap(jacrev(f(ember)))(ember.stack([x, x * 2])),
        torch.vmap(torch.func.jacrev(f(torch)))(torch.stack([tx, tx * 2])),
    )


@needs_torch
def test_hessian():
    pytest.importorskip("ember.autograd.forward_ad", reason="hessian runs jacfwd, which needs forward AD")
    from ember.func import hessian

    x, tx = _pair(4, seed=3)
    _close(hessian(lambda a: (a.sin() * a.sum()).sum())(x), torch.func.hessian(lambda a: (a.sin() * a.sum()).sum())(tx))


# -- the rule table -------------------------------------------------------------------------------


def test_every_op_has_a_rule_or_a_decomposition():
    assert not missing(), f"ops without a batching rule or a decomposition: {sorted(map(str, missing()))}"


def test_an_op_without_a_rule_raises_clearly():
    op = define("vmap_probe(Tensor self) -> Tensor", namespace="aten")
    op.register_kernel("cpu")(lambda self: self.clone())
    try:
        assert op in missing()
        with pytest.raises(RuntimeError, match="no batching rule for aten::vmap_probe"):
            vmap(op)(ember.ones(2, 3))
    finally:
        undefine(op)


@needs_torch
def test_functional_call_with_stacked_module_state():
    nn = pytest.importorskip("ember.nn", reason="functional_call over modules needs ember.nn")
    from ember.func import functional_call, stack_module_state

    models = [nn.Linear(3, 2) for _ in range(4)]
    params, buffers = stack_module_state(models)
    x = ember.randn(5, 3)

    def run(p, b, inp):
        return functional_call(models[0], (p, b), (inp,))

    out = vmap(run, in_dims=(0, 0, None))(params, buffers, x)
    expected = ember.stack([m(x) for m in models])
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-6, atol=1e-6)


# -- autograd.Function --------------------------------------------------------------------------


def _functions(lib):
    """``Sin`` with its own vmap rule (counting its calls), ``Cube`` with a generated one, ``Plain`` with none."""
    calls = []

    class Sin(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x.sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x.cos()

        @staticmethod
        def vmap(info, in_dims, x):
            calls.append(info.batch_size)
            return x.sin(), in_dims[0]

    class Cube(lib.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x * x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x * x

    class Plain(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    return Sin, Cube, Plain, calls


@needs_torch
def test_autograd_function_under_vmap():
    pytest.importorskip("ember.autograd.function", reason="ember.autograd.Function is not in this build")
    from ember.func._vmap.autograd_function import install

    install()  # again: a test elsewhere may have replaced the handler
    x, tx = _pair(4, 3, seed=4)
    (sin, cube, plain, calls), (tsin, tcube, tplain, tcalls) = _functions(ember), _functions(torch)
    _close(vmap(sin.apply, in_dims=1)(x), torch.vmap(tsin.apply, in_dims=1)(tx))
    assert calls == tcalls == [3]
    _close(vmap(cube.apply)(x), torch.vmap(tcube.apply)(tx))
    _close(
        vmap(grad(lambda a: cube.apply(a).sum()))(x), torch.vmap(torch.func.grad(lambda a: tcube.apply(a).sum()))(tx)
    )
    _close(vmap(grad(lambda a: sin.apply(a).sum()))(x), torch.vmap(torch.func.grad(lambda a: tsin.apply(a).sum()))(tx))
    _same_error(lambda: vmap(plain.apply)(x), lambda: torch.vmap(tplain.apply)(tx))


def test_forward_ad_tangents_cross_vmap():
    fwAD = pytest.importorskip("ember.autograd.forward_ad", reason="forward AD is not in this build")
    p, t = ember.randn(4, 3), ember.randn(4, 3)
    with fwAD.dual_level():
        through = vmap(ember.sin)(fwAD.make_dual(p, t))
        made_inside = vmap(lambda a, b: fwAD.make_dual(a, b).sin())(p, t)
        for y in (through, made_inside):
            np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), (t * p.cos()).numpy(), rtol=1e-6)


def test_a_batched_tensor_leaked_from_a_finished_vmap_is_refused():
    leaked = []

    def keep(a):
        leaked.append(a)
        return a * 2

    vmap(keep)(ember.ones(3, 2))
    with pytest.raises(RuntimeError, match="leaked out of its vmap"):
        leaked[0] + 1
    with pytest.raises(RuntimeError, match="leaked out of its vmap"):
        vmap(lambda b: b + leaked[0])(ember.ones(3, 2))


def test_a_backward_op_with_an_output_mask_batches_and_keeps_its_left_out_result():
    convolution_backward = ember.ops.aten.convolution_backward.default
    grads, inputs, weight = ember.randn(3, 2, 4, 5, 5), ember.randn(3, 2, 3, 5, 5), ember.randn(4, 3, 3, 3)

    def grads_of(g, x):
        g_input, g_weight, g_bias = convolution_backward(
            g, x, weight, [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, False, True]
        )
        assert g_weight is None
        return g_input, g_bias

    batched = ember.func.vmap(grads_of)(grads, inputs)
    lanes = [grads_of(grads[i], inputs[i]) for i in range(3)]
    for k in range(2):
        assert bool((batched[k] == ember.stack([lane[k] for lane in lanes])).all())
