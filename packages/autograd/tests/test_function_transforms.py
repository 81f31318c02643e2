"""The contracts through which vmap and forward AD take ``Function.apply`` calls, tested with
stand-in handlers: ``set_transform_handler``, ``set_forward_ad_handler``, ``call_jvp``."""

from __future__ import annotations

import numpy as np
import pytest
from test_function import exp_fn, scale_fn

import ember
from ember.autograd import function as function_module


class Tagged(ember.Tensor):
    """A stand-in for a transform's tensor type: ``apply`` must hand calls with one to the handler."""


def tagged(t):
    out = Tagged()
    for name in ("_storage", "_shape", "_stride", "_offset", "dtype", "device", "_array", "_contig"):
        setattr(out, name, getattr(t, name))
    return out


def test_transform_handler_takes_calls_with_subclass_tensors():
    calls = []

    def handler(cls, args, kwargs):
        calls.append((cls.__name__, len(args), sorted(kwargs)))
        if isinstance(args[0], Tagged):
            function_module.require_setup_context(cls)
            return "handled"
        return NotImplemented

    previous = function_module._transform_handler  # vmap's, where it is installed
    function_module.set_transform_handler(handler)
    try:
        exp = exp_fn(ember)
        plain = ember.ones(2, requires_grad=True)
        assert exp.apply(plain).grad_fn is not None  # no subclass: the handler is not consulted
        assert calls == []
        with pytest.raises(RuntimeError, match="must override the setup_context staticmethod"):
            exp.apply(tagged(ember.ones(2)))
        assert scale_fn(ember).apply(tagged(ember.ones(2)), ember.ones(2)) == "handled"
        # a handler runs the Function itself through apply_untransformed, which does not come back to it
        n = len(calls)
        out = function_module.apply_untransformed(scale_fn(ember), tagged(ember.ones(2)), ember.ones(2), 5.0)
        assert len(calls) == n and out[0].tolist() == [5.0, 5.0]
        # the default of ``factor`` is bound before the handler sees the call
        assert calls[-1] == ("Scale", 3, [])
    finally:
        function_module.set_transform_handler(previous)


def test_forward_ad_handler_runs_apply_then_jvp():
    tangents = {}

    class Square(ember.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x * x * k, k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.k = k
            ctx.save_for_forward(x)
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g, _):
            (x,) = ctx.saved_tensors
            return 2 * x * ctx.k * g, None

        @staticmethod
        def jvp(ctx, t, t_k):
            assert t_k is None
            (x,) = ctx.saved_tensors
            return 2 * x * ctx.k * t, None

    def handler(cls, args, kwargs, run):
        if not any(id(a) in tangents for a in args):
            return NotImplemented
        ctx, outputs = run(args, kwargs)
        out_tangents = function_module.call_jvp(ctx, args, [tangents.get(id(a)) for a in args], outputs)
        for o, t in zip(outputs, out_tangents, strict=True):
            if t is not None:
                tangents[id(o)] = t
        return outputs

    previous = function_module._forward_ad_handler  # forward AD's, where it is installed
    function_module.set_forward_ad_handler(handler)
    try:
        x = ember.tensor([1.0, -2.0, 3.0], requires_grad=True)
        tangents[id(x)] = ember.tensor([1.0, 1.0, 0.5])
        y, k = Square.apply(x, 3.0)
        assert k == 3.0
        assert tangents[id(y)].tolist() == [6.0, -12.0, 9.0]
        # the reverse-mode node is there too, and the saved_for_forward tensors are dropped after jvp
        assert type(y.grad_fn).__name__ == "SquareBackward"
        assert y.grad_fn.saved_for_forward is None
        assert ember.autograd.grad(y.sum(), x)[0].tolist() == [6.0, -12.0, 18.0]
        # not dual: the handler declines and apply goes on
        plain = ember.tensor([2.0])
        assert Square.apply(plain, 1.0)[0].tolist() == [4.0]
    finally:
        function_module.set_forward_ad_handler(previous)


def test_call_jvp_checks_its_result():
    class Bad(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, (x > 0).long()

        @staticmethod
        def backward(ctx, g, _):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return ctx.result

    x = ember.ones(2)
    ctx, outputs = function_module._run(Bad, (x,), {})
    ctx.result = (x,)
    with pytest.raises(RuntimeError, match=r"invalid number of forward gradients \(expected 2 but got 1\)"):
        function_module.call_jvp(ctx, (x,), [x], outputs)
    ctx.result = (x, x)
    with pytest.raises(RuntimeError, match="is not a differentiable Tensor"):
        function_module.call_jvp(ctx, (x,), [x], outputs)


def test_call_jvp_materializes_missing_tangents_unless_told_not_to():
    seen = []

    class Mul(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, materialize):
            ctx.set_materialize_grads(materialize)
            ctx.save_for_forward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, g):
            return None

        @staticmethod
        def jvp(ctx, tx, ty, _):
            seen.append(ty if ty is None else ty.tolist())
            x, y = ctx.saved_tensors
            return tx * y if ty is None else tx * y + x * ty

    x, y = ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])
    for materialize in (True, False):
        ctx, out = function_module._run(Mul, (x, y, materialize), {})
        (t,) = function_module.call_jvp(ctx, (x, y, materialize), [ember.ones(2), None, None], out)
        assert t.tolist() == [3.0, 4.0]
    assert seen == [[0.0, 0.0], None]


def _vmap_or_skip():
    try:
        from ember.func import vmap
    except ImportError:
        pytest.skip("ember.func.vmap is not available")
    return vmap


def test_vmap_over_functions_with_a_generated_or_own_rule():
    vmap = _vmap_or_skip()
    torch = pytest.importorskip("torch")

    def make(lib, own_rule: bool):
        class Cube(lib.autograd.Function):
            generate_vmap_rule = not own_rule

            @staticmethod
            def forward(x, k):
                return x**3 * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(inputs[0])
                ctx.k = inputs[1]

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 3 * x * x * g * ctx.k, None

            if own_rule:

                @staticmethod
                def vmap(info, in_dims, x, k):
                    return Cube.apply(x, k), in_dims[0]

        return Cube

    values = [[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]]
    for own_rule in (False, True):
        t_cls, e_cls = make(torch, own_rule), make(ember, own_rule)
        expected = torch.func.vmap(lambda x, cls=t_cls: cls.apply(x, 2.0))(torch.tensor(values))
        got = vmap(lambda x, cls=e_cls: cls.apply(x, 2.0))(ember.tensor(values))
        np.testing.assert_allclose(got.tolist(), expected.tolist())
    per_sample = vmap(ember.func.grad(lambda x: make(ember, False).apply(x, 2.0).sum()))(ember.tensor(values))
    np.testing.assert_allclose(per_sample.tolist(), 6 * np.asarray(values) ** 2)


def _forward_ad_or_skip():
    try:
        from ember.autograd import forward_ad
    except ImportError:
        pytest.skip("ember.autograd.forward_ad is not available")
    return forward_ad


def test_forward_ad_through_functions_uses_their_jvp():
    _forward_ad_or_skip()
    torch = pytest.importorskip("torch")
    from test_function import data, outcome

    def custom(lib):
        class Scaled(lib.autograd.Function):
            @staticmethod
            def forward(x, k):
                return x * k, k

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_forward(inputs[0])
                ctx.k = inputs[1]

            @staticmethod
            def backward(ctx, g, _):
                return g * ctx.k, None

            @staticmethod
            def jvp(ctx, t, _):
                (x,) = ctx.saved_tensors
                return t * ctx.k + x * 0.5, None  # not the true derivative: the jvp is what counts

        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(data(lib, 3, requires_grad=False), data(lib, 3, seed=1, requires_grad=False))
            y, k = Scaled.apply(x, 3.0)
            return fw.unpack_dual(y).tangent, k

    def inplace(lib):
        class MulInplace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.mark_dirty(a)
                return a.mul_(2)

            @staticmethod
            def backward(ctx, g):
                return g * 2

            @staticmethod
            def jvp(ctx, t):
                return t.mul_(2)

        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(data(lib, 3, requires_grad=False), data(lib, 3, seed=1, requires_grad=False))
            MulInplace.apply(x)
            return x, fw.unpack_dual(x).tangent

    def wrong_count(lib):
        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                return g1 * 2 + g2 * 3

            @staticmethod
            def jvp(ctx, t):
                return t * 2

        fw = lib.autograd.forward_ad
        with fw.dual_level():
            Two.apply(fw.make_dual(data(lib, 2, requires_grad=False), data(lib, 2, requires_grad=False)))

    for program in (custom, inplace, wrong_count):
        assert outcome(program, ember) == outcome(program, torch)
