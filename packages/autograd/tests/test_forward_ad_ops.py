"""Forward-mode AD of every op in every OpInfo table, in float64, against PyTorch's forward AD.

Every floating-point tensor of a sample becomes a dual tensor with a random tangent (the same in
both libraries); the tangents of the op's floating-point outputs must match PyTorch's. Samples that
PyTorch itself refuses (an op without a forward formula there) are skipped. Ops whose reverse-mode
derivative is not written yet (``PENDING_GRAD``) xfail while the error says so.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import numpy as np
import pytest
import test_gradients
from opinfo import T, build, to_numpy, torch
from test_gradients import OPS, PENDING_GRAD, RANDOM

import ember

needs_torch = pytest.mark.skipif(torch is None, reason="the oracle torch==2.13.0 is installed only in 3.11 sessions")
SAMPLES_PER_OP = 3
NOT_DERIVATIVES = getattr(test_gradients, "NOT_DERIVATIVES", set())
# Ops expected to fail while a derivative they need is missing: PENDING_GRAD's entries, and argsort
# (it runs sort, whose values need a tangent). They xfail while the error names a missing derivative
# and pass once it lands; any other failure (a wrong tangent) fails.
MAY_LACK_DERIVATIVE = PENDING_GRAD | {"argsort"}
# Ops whose forward mode PyTorch refuses (no derivative, or none yet for forward mode): ours refuse too.
REFUSED_BY_PYTORCH = frozenset(
    {"floor_divide", "heaviside", "scatter_legacy_reduce", "unique", "unique_consecutive"}
    | {"special.zeta", "special.gammainc", "special.gammaincc"}  # in their first argument
    | {"linalg.ldl_factor", "linalg.ldl_factor_ex", "linalg.ldl_solve", "geqrf", "igamma", "igammac"}
)
# Ops whose outputs PyTorch does not differentiate at all (no tangent, no gradient), as ours.
NOT_DIFFERENTIABLE = frozenset(
    f"special.{name}"
    for name in (
        "bessel_j0",
        "bessel_j1",
        "bessel_y0",
        "bessel_y1",
        "modified_bessel_i0",
        "modified_bessel_i1",
        "modified_bessel_k0",
        "modified_bessel_k1",
        "scaled_modified_bessel_k0",
        "scaled_modified_bessel_k1",
        "spherical_bessel_j0",
    )
)
CASES = [pytest.param(op, id=op.name) for op in OPS if op.name not in RANDOM]


@contextmanager
def _pending(op, reverse: bool = False):
    """xfail while a derivative is missing. With ``reverse`` (the test runs backward too), also for
    any op whose backward reports a missing derivative, and for any error of a PENDING_GRAD entry:
    the reverse-mode tests own those."""
    try:
        yield
    except Exception as error:
        text = str(error)
        missing = "not implemented" in text or "not been implemented" in text
        if (op.name in MAY_LACK_DERIVATIVE and missing) or (reverse and (missing or op.name in PENDING_GRAD)):
            pytest.xfail(f"{op.name}: a derivative it needs is not written yet ({text.splitlines()[0]})")
        raise


def _is_float(spec: T) -> bool:
    return spec.array.dtype.kind in ("f", "c")


def _dualize(value, lib, fw, rng: np.random.Generator):
    """``value`` built in ``lib`` with each floating-point tensor made dual; the tangents drawn in order."""
    if isinstance(value, T):
        primal = build(value, lib)
        if not _is_float(value):
            return primal
        tangent = rng.standard_normal(value.array.shape).astype(value.array.dtype)
        return fw.make_dual(primal, build(T(tangent), lib))
    if isinstance(value, list):
        return [_dualize(v, lib, fw, rng) for v in value]
    if isinstance(value, tuple):
        return tuple(_dualize(v, lib, fw, rng) for v in value)
    if isinstance(value, dict):
        return {k: _dualize(v, lib, fw, rng) for k, v in value.items()}
    return value


def _has_float(value) -> bool:
    if isinstance(value, T):
        return _is_float(value)
    if isinstance(value, list | tuple):
        return any(_has_float(v) for v in value)
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    return False


def _output_tangents(result, lib, fw) -> list:
    if isinstance(result, lib.Tensor):
        if not (result.is_floating_point() or result.is_complex()):
            return []
        primal, tangent = fw.unpack_dual(result)
        return [np.zeros(tuple(primal.shape)) if tangent is None else to_numpy(tangent)]
    if isinstance(result, list | tuple):
        return [t for r in result for t in _output_tangents(r, lib, fw)]
    return []


def jvp_case(op, sample, lib, seed: int) -> list:
    fw = lib.autograd.forward_ad
    with fw.dual_level(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rng = np.random.default_rng(seed)
        args = _dualize(sample.args, lib, fw, rng)
        kwargs = _dualize(sample.kwargs, lib, fw, rng)
        return _output_tangents(op.call(lib, *args, **kwargs), lib, fw)


def _unique_gradient_samples(op):
    samples = op.samples("float64", np.random.default_rng(1234))
    return [s for s in samples if op.no_unique_gradient is None or not op.no_unique_gradient(s)]


@needs_torch
@pytest.mark.parametrize("op", CASES)
def test_forward_ad_matches_pytorch(op):
    compared = 0
    samples = [s for s in _unique_gradient_samples(op) if _has_float((s.args, s.kwargs))]
    for sample in samples[:SAMPLES_PER_OP]:
        try:
            theirs = jvp_case(op, sample, torch, seed=7)
        except Exception:
            continue  # PyTorch refuses this op or sample in forward mode
        with _pending(op):
            try:
                ours = jvp_case(op, sample, ember, seed=7)
            except Exception as error:
                raise AssertionError(f"{op.name} {sample}: {type(error).__name__}: {error}") from error
        assert len(ours) == len(theirs), f"{op.name} {sample}: {len(ours)} tangents, PyTorch gives {len(theirs)}"
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-7, equal_nan=True, err_msg=f"{op.name} {sample}")
        compared += 1
    if compared == 0:
        pytest.skip(f"{op.name}: PyTorch refuses forward mode for every sample")


def inplace_case(op, sample, lib, seed: int, dual_target: bool) -> list:
    """The target's tangent after the in-place variant, the target dual or not (the other tensors dual)."""
    fw = lib.autograd.forward_ad
    with fw.dual_level(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rng = np.random.default_rng(seed)
        first, *rest = sample.args
        target = _dualize(first, lib, fw, rng) if dual_target else build(first, lib)
        args = _dualize(tuple(rest), lib, fw, rng)
        kwargs = _dualize(sample.kwargs, lib, fw, rng)
        op.inplace(lib, target, *args, **kwargs)
        return _output_tangents(target, lib, fw)


INPLACE_CASES = [pytest.param(op, id=op.name) for op in OPS if op.inplace is not None and op.name not in RANDOM]


@needs_torch
@pytest.mark.parametrize("op", INPLACE_CASES)
def test_inplace_forward_ad_matches_pytorch(op):
    compared = 0
    samples = [s for s in _unique_gradient_samples(op) if s.args and isinstance(s.args[0], T)]
    for sample in samples[:2]:
        for dual_target in (True, False):
            if not dual_target and not _has_float((sample.args[1:], sample.kwargs)):
                continue
            try:
                theirs = inplace_case(op, sample, torch, 11, dual_target)
            except Exception:
                continue
            with _pending(op):
                try:
                    ours = inplace_case(op, sample, ember, 11, dual_target)
                except Exception as error:
                    raise AssertionError(f"{op.name} {sample} dual target {dual_target}: {error!r}") from error
            for a, b in zip(ours, theirs, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-7, equal_nan=True, err_msg=f"{op.name} {sample}")
            compared += 1
    if compared == 0:
        pytest.skip(f"{op.name}: PyTorch refuses every in-place sample in forward mode")


def _shifted(value, rng: np.random.Generator, step: float):
    """``value`` with each floating-point array moved by ``step`` times its tangent (drawn as ``_dualize`` draws)."""
    if isinstance(value, T):
        if not _is_float(value):
            return value
        tangent = rng.standard_normal(value.array.shape).astype(value.array.dtype)
        return T(value.array + step * tangent, value.layout)
    if isinstance(value, list):
        return [_shifted(v, rng, step) for v in value]
    if isinstance(value, tuple):
        return tuple(_shifted(v, rng, step) for v in value)
    if isinstance(value, dict):
        return {k: _shifted(v, rng, step) for k, v in value.items()}
    return value


def _float_outputs(result) -> list:
    if isinstance(result, ember.Tensor):
        return [to_numpy(result)] if result.dtype == ember.float64 else []
    if isinstance(result, list | tuple):
        return [o for r in result for o in _float_outputs(r)]
    return []


def _small(value, limit: int = 64) -> bool:
    if isinstance(value, T):
        return value.array.size <= limit and value.layout != "expanded"
    if isinstance(value, list | tuple):
        return all(_small(v, limit) for v in value)
    if isinstance(value, dict):
        return all(_small(v, limit) for v in value.values())
    return True


def _numerical_jvp(op, sample, seed: int, eps: float = 1e-6) -> list:
    sides = []
    for step in (eps, -eps):
        rng = np.random.default_rng(seed)
        args, kwargs = _shifted(sample.args, rng, step), _shifted(sample.kwargs, rng, step)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sides.append(_float_outputs(op.call(ember, *build(args, ember), **build(kwargs, ember))))
    return [(p - m) / (2 * eps) for p, m in zip(*sides, strict=True)]


# Ops with an argument whose tangent does not reach the output, as in PyTorch (class weights, running
# statistics): central differences along every argument measure something else.
TANGENT_IGNORED = frozenset({"F.batch_norm", "F.cross_entropy", "F.nll_loss", "aten.nll_loss.default"})


@pytest.mark.parametrize("op", [c for c in CASES if c.id not in NOT_DERIVATIVES | TANGENT_IGNORED])
def test_forward_ad_matches_finite_differences(op):
    """Without the oracle too: the tangent against central differences along it, in Ember alone."""
    if op.name in NOT_DIFFERENTIABLE or "polynomial" in op.name:
        pytest.skip(f"{op.name}: not differentiable, in PyTorch as here")
    checked = 0
    samples = [s for s in _unique_gradient_samples(op) if _has_float((s.args, s.kwargs))]
    for sample in [s for s in samples if _small((s.args, s.kwargs))][:2]:
        try:
            numerical = _numerical_jvp(op, sample, seed=3)
        except Exception:
            continue  # the op refuses this sample
        if not numerical:
            continue
        if op.name in REFUSED_BY_PYTORCH:
            with pytest.raises((NotImplementedError, RuntimeError), match=r"not implemented|does not support"):
                jvp_case(op, sample, ember, seed=3)
            checked += 1
            continue
        with _pending(op):
            ours = jvp_case(op, sample, ember, seed=3)
        ours = [o for o in ours if o.dtype == np.float64]
        for a, n in zip(ours, numerical, strict=True):
            np.testing.assert_allclose(a, n, rtol=1e-5, atol=1e-5, err_msg=f"{op.name} {sample}")
        checked += 1
    if checked == 0:
        pytest.skip(f"{op.name}: no small sample with a floating-point output")


def _dual_leaves(value, lib, fw, rng, leaves: list):
    """Like ``_dualize``, each dual made of a primal that requires grad; the duals collected in ``leaves``."""
    if isinstance(value, T):
        primal = build(value, lib)
        if not _is_float(value):
            return primal
        tangent = rng.standard_normal(value.array.shape).astype(value.array.dtype)
        dual = fw.make_dual(primal.requires_grad_(True), build(T(tangent), lib))
        leaves.append(dual)
        return dual
    if isinstance(value, list | tuple):
        return type(value)(_dual_leaves(v, lib, fw, rng, leaves) for v in value)
    if isinstance(value, dict):
        return {k: _dual_leaves(v, lib, fw, rng, leaves) for k, v in value.items()}
    return value


def _grad_outputs(result, lib) -> list:
    if isinstance(result, lib.Tensor):
        return [result] if result.requires_grad else []
    if isinstance(result, list | tuple):
        return [o for r in result for o in _grad_outputs(r, lib)]
    return []


def forward_over_reverse_case(op, sample, lib, seed: int) -> list:
    """The tangents of the input gradients (a random cotangent pulled back) when the inputs are dual."""
    fw = lib.autograd.forward_ad
    with fw.dual_level(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rng = np.random.default_rng(seed)
        leaves: list = []
        args = _dual_leaves(sample.args, lib, fw, rng, leaves)
        kwargs = _dual_leaves(sample.kwargs, lib, fw, rng, leaves)
        outs = _grad_outputs(op.call(lib, *args, **kwargs), lib)
        if not outs or not leaves:
            return []
        cots = [build(T(rng.standard_normal(tuple(o.shape))), lib).to(o.dtype) for o in outs]
        grads = lib.autograd.grad(outs, leaves, cots, allow_unused=True)
        result = []
        for g, x in zip(grads, leaves, strict=True):
            tangent = None if g is None else fw.unpack_dual(g).tangent
            result.append(np.zeros(tuple(x.shape)) if tangent is None else to_numpy(tangent))
        return result


# Backward formulas that read saved outputs carrying no tangent (layer_norm's mean and rstd, which are
# not differentiable outputs): the gradient's tangent misses their terms until the formula recomputes
# them from an input that has a tangent, as it does for double backward.
FORWARD_OVER_REVERSE_GAPS = frozenset({"F.layer_norm", "aten.layer_norm.default"})
_GAP = pytest.mark.xfail(strict=True, reason="the backward formula reads saved statistics without tangents")
# Ops whose gradients PyTorch computes without their tangents (or with wrong ones) unless asked for
# create_graph: ours are checked against finite differences in test_linalg_autograd.py.
ORACLE_DROPS_TANGENTS = frozenset(
    {
        "linalg.det",
        "det",
        "Tensor.det",
        "linalg.slogdet",
        "logdet",
        "slogdet",
        "linalg.solve",
        "linalg.solve_ex",
        "triangular_solve",
        "linalg.tensorsolve",
    }
)


@needs_torch
@pytest.mark.parametrize(
    "op", [pytest.param(*c.values, id=c.id, marks=[_GAP] if c.id in FORWARD_OVER_REVERSE_GAPS else []) for c in CASES]
)
def test_forward_over_reverse_matches_pytorch(op):
    """Gradients computed inside a dual level carry the tangents of the gradients (``jvp(grad(f))``)."""
    if op.name in ORACLE_DROPS_TANGENTS:
        pytest.skip(f"{op.name}: PyTorch's gradient carries no correct tangent here")
    compared = 0
    samples = [s for s in _unique_gradient_samples(op) if _has_float((s.args, s.kwargs))]
    for sample in samples[:1]:
        try:
            theirs = forward_over_reverse_case(op, sample, torch, seed=13)
        except Exception:
            continue  # PyTorch refuses forward mode or double backward here
        with _pending(op, reverse=True):
            try:
                ours = forward_over_reverse_case(op, sample, ember, seed=13)
            except Exception as error:
                raise AssertionError(f"{op.name} {sample}: {type(error).__name__}: {error}") from error
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-7, equal_nan=True, err_msg=f"{op.name} {sample}")
        compared += 1
    if compared == 0:
        pytest.skip(f"{op.name}: PyTorch refuses forward over reverse for its sample")
