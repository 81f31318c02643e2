"""``gradcheck`` and ``gradgradcheck``: they pass correct derivatives, catch wrong ones (backward and
forward mode, slow and fast), and raise PyTorch's errors for bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember
from ember.autograd import GradcheckError, _forward_dispatch, gradcheck, gradgradcheck, registry
from ember.core.dispatch import define, undefine

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 3))
B = RNG.standard_normal(3)


def e(a, requires_grad=True, dtype=None):
    return ember.tensor(np.asarray(a), dtype=dtype or ember.float64).requires_grad_(requires_grad)


def t(a, requires_grad=True, dtype=None):
    return torch.tensor(np.asarray(a), dtype=dtype or torch.float64).requires_grad_(requires_grad)


def f(lib):
    return lambda a, b: (a.sin() * b + lib.atan2(a, b.exp()), (a * a).sum())


@pytest.mark.parametrize("fast_mode", [False, True])
def test_correct_derivatives_pass(fast_mode):
    assert gradcheck(f(ember), (e(A), e(B)), fast_mode=fast_mode, check_forward_ad=True)
    assert gradgradcheck(lambda a, b: a.sin() * b.exp() * a, (e(A), e(B)), fast_mode=fast_mode, check_fwd_over_rev=True)
    assert gradgradcheck(lambda a: a.tanh() * a, (e(A),), gen_non_contig_grad_outputs=True)


def test_inputs_not_requiring_grad_and_non_tensors_are_passed_through():
    assert gradcheck(lambda a, b, k: a * b * k, (e(A), e(B, requires_grad=False), 3.0))


@pytest.fixture
def wrong_op():
    """``probe(x) = sin(x)`` with a backward formula that is wrong by a factor of 2 and no forward rule,
    and ``probe_fw`` whose backward is right and forward rule wrong."""
    ops = []

    def make(name, formula, jvp=None):
        op = define(f"{name}(Tensor self) -> Tensor", namespace="ember_test")
        op.register_kernel("cpu")(lambda self: self.sin())
        registry.derivative(op, save=("self",), jvp=jvp)(formula)
        ops.append(op)
        return op

    wrong = make("gradcheck_probe", lambda grad, self, **_: 2 * grad * self.cos())
    wrong_jvp = make(
        "gradcheck_probe_fw",
        lambda grad, self, **_: grad * self.cos(),
        jvp=lambda tangents, self, **_: tangents[0] * self.cos() + 1.0,
    )
    yield wrong, wrong_jvp
    for op in ops:
        registry.DERIVATIVES.pop(op, None)
        _forward_dispatch._plans.pop(op, None)
        undefine(op)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_a_wrong_backward_is_caught(wrong_op, fast_mode):
    wrong, _ = wrong_op
    with pytest.raises(GradcheckError, match=r"^Jacobian mismatch for output 0 with respect to input 0,\nnumerical:"):
        gradcheck(lambda a: wrong(a), (e(A),), fast_mode=fast_mode)
    assert gradcheck(lambda a: wrong(a), (e(A),), raise_exception=False, fast_mode=fast_mode) is False
    # The second input is the wrong one.
    with pytest.raises(GradcheckError, match="for output 1 with respect to input 1"):
        gradcheck(lambda a, b: (a * 2, wrong(b)), (e(A), e(B)), fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_a_wrong_forward_rule_is_caught(wrong_op, fast_mode):
    _, wrong_jvp = wrong_op
    assert gradcheck(lambda a: wrong_jvp(a), (e(A),), fast_mode=fast_mode)
    with pytest.raises(
        GradcheckError, match=r"^Jacobian computed with forward mode mismatch for output 0 with respect"
    ):
        gradcheck(lambda a: wrong_jvp(a), (e(A),), check_forward_ad=True, fast_mode=fast_mode)
    # A transposed backward formula is as wrong in forward mode as in reverse mode.
    wrong, _ = wrong_op
    with pytest.raises(GradcheckError, match="forward mode mismatch"):
        gradcheck(lambda a: wrong(a), (e(A),), check_forward_ad=True, check_backward_ad=False)


def test_fast_mode_failure_shows_the_full_jacobians(wrong_op):
    wrong, _ = wrong_op
    with pytest.raises(GradcheckError, match="The max per-element difference \\(slow mode\\) is"):
        gradcheck(lambda a: wrong(a), (e(A),), fast_mode=True)


def test_wrong_second_derivative_is_caught():
    op = define("gradcheck_probe2(Tensor self) -> Tensor", namespace="ember_test")
    op.register_kernel("cpu")(lambda self: self.sin())
    # Right first derivative, but cut off from the input: second derivatives through it are zero.
    registry.derivative(op, save=("self",))(lambda grad, self, **_: grad * self.detach().cos())
    try:
        assert gradcheck(lambda a: op(a), (e(A),))
        with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
            gradgradcheck(lambda a: op(a), (e(A),))
    finally:
        registry.DERIVATIVES.pop(op, None)
        undefine(op)


def test_backward_not_multiplied_by_grad_output():
    op = define("gradcheck_probe3(Tensor self) -> Tensor", namespace="ember_test")
    op.register_kernel("cpu")(lambda self: self.sum())
    registry.derivative(op)(lambda grad, self, **_: ember.ones(tuple(self.shape), dtype=ember.float64))
    try:
        with pytest.raises(GradcheckError, match=r"^backward not multiplied by grad_output$"):
            gradcheck(lambda a: op(a), (e(A),), check_undefined_grad=False)
    finally:
        registry.DERIVATIVES.pop(op, None)
        undefine(op)


def test_outputs_without_gradient():
    assert gradcheck(lambda a: a.detach() * 0 + 1, (e(A),))
    with pytest.raises(GradcheckError, match=r"^Numerical gradient for function expected to be zero$"):
        gradcheck(lambda a: a.detach() * 2, (e(A),))


# -- errors, against PyTorch ----------------------------------------------------------------------


def _same_error(ours, theirs):
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(type(expected.value)) as got:
        ours()
    assert str(got.value) == str(expected.value)


@needs_torch
def test_input_errors_match_pytorch():
    _same_error(
        lambda: gradcheck(lambda a: a * 2, (e(A, requires_grad=False),)),
        lambda: torch.autograd.gradcheck(lambda a: a * 2, (t(A, requires_grad=False),)),
    )
    ours_expanded = ember.tensor(A[:1], dtype=ember.float64).expand(2, 3).requires_grad_()
    theirs_expanded = torch.tensor(A[:1], dtype=torch.float64).expand(2, 3).requires_grad_()
    _same_error(
        lambda: gradcheck(lambda a: a * 2, (ours_expanded,)),
        lambda: torch.autograd.gradcheck(lambda a: a * 2, (theirs_expanded,)),
    )
    for kwargs in (
        {"check_forward_ad": False, "check_backward_ad": False},
        {"check_batched_grad": True, "check_backward_ad": False, "check_forward_ad": True},
        {"check_batched_forward_grad": True},
    ):
        _same_error(
            lambda kwargs=kwargs: gradcheck(lambda a: a * 2, (e(A),), **kwargs),
            lambda kwargs=kwargs: torch.autograd.gradcheck(lambda a: a * 2, (t(A),), **kwargs),
        )


@needs_torch
def test_single_precision_warns_as_pytorch():
    with pytest.warns(UserWarning) as theirs:
        torch.autograd.gradcheck(lambda a: a * 2, (t(A, dtype=torch.float32),), atol=1e-2, rtol=1e-2)
    with pytest.warns(UserWarning) as ours:
        assert gradcheck(lambda a: a * 2, (e(A, dtype=ember.float32),), atol=1e-2, rtol=1e-2, eps=1e-3)
    assert str(ours[0].message) == str(theirs[0].message)


def test_batched_checks_need_vmap():
    try:
        from ember.func import vmap  # noqa: F401
    except ImportError:
        with pytest.raises(NotImplementedError, match="vmap"):
            gradcheck(lambda a: a * 2, (e(A),), check_batched_grad=True)
        return
    assert gradcheck(lambda a: a.sin() * 2, (e(A),), check_batched_grad=True)
    assert gradcheck(lambda a: a.sin() * 2, (e(A),), check_forward_ad=True, check_batched_forward_grad=True)


def test_complex_inputs_and_outputs_are_checked_as_real_and_imaginary_parts():
    rng = np.random.default_rng(0)
    z = ember.tensor(rng.standard_normal(3) + 1j * rng.standard_normal(3)).requires_grad_()
    x = ember.tensor(rng.standard_normal(3)).requires_grad_()
    assert gradcheck(lambda a, b: (a * a.conj() * b).exp() / (a + 3), (z, x))
    assert gradcheck(lambda a: (a.abs(), a.angle(), ember.view_as_real(a.log())), (z,))
    assert gradcheck(lambda a, b: ember.polar(b.abs() + 1, b) * a, (z, x), check_forward_ad=True)


def test_complex_gradcheck_catches_a_wrong_formula():
    rng = np.random.default_rng(1)
    z = ember.tensor(rng.standard_normal(3) + 1j * rng.standard_normal(3)).requires_grad_()

    class MissingConjugate(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, grad):
            (a,) = ctx.saved_tensors
            return grad * 2 * a  # PyTorch's convention needs conj(2 a)

    assert gradcheck(lambda a: a * a, (z,))
    with pytest.raises(GradcheckError):
        gradcheck(MissingConjugate.apply, (z,))
