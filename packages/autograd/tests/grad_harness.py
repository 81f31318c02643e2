"""Gradients of OpInfo samples: Ember against PyTorch, and against finite differences in float64.

``grad_case(op, sample)`` builds the sample in both libraries with every floating-point tensor
requiring grad, runs the op, pulls the same random cotangent back through every floating-point
output, and returns both sets of input gradients (``None`` read as zeros). ``numerical_case``
checks Ember's own gradients against central differences of Ember's forward.
"""

from __future__ import annotations

import warnings

import numpy as np
from opinfo import T, build, to_numpy, torch

import ember

FLOAT_KINDS = ("f", "c")


def with_grad(value):
    """The sample's args with ``requires_grad`` on every floating-point ``T``."""
    if isinstance(value, T):
        if value.array.dtype.kind in FLOAT_KINDS or value.array.dtype.name == "bfloat16":
            return T(value.array, value.layout, requires_grad=True)
        return value
    if isinstance(value, list):
        return [with_grad(v) for v in value]
    if isinstance(value, tuple):
        return tuple(with_grad(v) for v in value)
    if isinstance(value, dict):
        return {k: with_grad(v) for k, v in value.items()}
    return value


def leaves(value, lib) -> list:
    out = []
    if isinstance(value, lib.Tensor):
        if value.requires_grad:
            out.append(value)
    elif isinstance(value, list | tuple):
        for v in value:
            out.extend(leaves(v, lib))
    elif isinstance(value, dict):
        for v in value.values():
            out.extend(leaves(v, lib))
    return out


def outputs(value, lib) -> list:
    if isinstance(value, lib.Tensor):
        return [value] if value.requires_grad else []
    if isinstance(value, list | tuple):
        return [o for v in value for o in outputs(v, lib)]
    return []


def _run(op, lib, sample):
    args, kwargs = build(with_grad(sample.args), lib), build(with_grad(sample.kwargs), lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = op.call(lib, *args, **kwargs)
    return leaves((args, kwargs), lib), result


def grad_case(op, sample, seed: int = 0):
    """(ours, theirs) input gradients as NumPy arrays, or None where PyTorch has nothing to compare."""
    t_inputs, t_result = _run(op, torch, sample)
    t_outs = outputs(t_result, torch)
    if not t_inputs or not t_outs:
        return None
    e_inputs, e_result = _run(op, ember, sample)
    e_outs = outputs(e_result, ember)
    assert len(e_outs) == len(t_outs), f"{sample}: {len(e_outs)} differentiable outputs, PyTorch has {len(t_outs)}"
    rng = np.random.default_rng(seed)
    cots = [rng.standard_normal(tuple(o.shape)).astype(to_numpy(o).dtype) for o in t_outs]
    theirs = torch.autograd.grad(
        t_outs,
        t_inputs,
        [torch.from_numpy(c).to(o.dtype) for c, o in zip(cots, t_outs, strict=True)],
        allow_unused=True,
    )
    ours = ember.autograd.grad(
        e_outs, e_inputs, [ember.tensor(c).to(o.dtype) for c, o in zip(cots, e_outs, strict=True)], allow_unused=True
    )
    ours = [np.zeros(tuple(i.shape)) if g is None else to_numpy(g) for g, i in zip(ours, e_inputs, strict=True)]
    theirs = [np.zeros(tuple(i.shape)) if g is None else to_numpy(g) for g, i in zip(theirs, t_inputs, strict=True)]
    return ours, theirs


def numerical_case(op, sample, eps: float = 1e-6, max_numel: int = 24):
    """(analytical, numerical) gradients of sum(cotangent * outputs) for float64 samples, in Ember only."""
    if _has_expanded((sample.args, sample.kwargs)):
        return None  # one element of an expanded tensor is many: perturbing it is no partial derivative
    args, kwargs = build(with_grad(sample.args), ember), build(with_grad(sample.kwargs), ember)
    inputs = leaves((args, kwargs), ember)
    if not inputs or any(i.numel() > max_numel for i in inputs):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = outputs(op.call(ember, *args, **kwargs), ember)
        if not outs or any(o.dtype != ember.float64 for o in outs):
            return None  # a step of 1e-6 is below the resolution of lower precisions
        rng = np.random.default_rng(1)
        cots = [rng.standard_normal(tuple(o.shape)) for o in outs]

        def scalar() -> float:
            with ember.no_grad():
                result = outputs_nograd(op.call(ember, *args, **kwargs))
            return sum(float((to_numpy(o) * c).sum()) for o, c in zip(result, cots, strict=True))

        analytical = ember.autograd.grad(
            outs, inputs, [ember.tensor(c).to(o.dtype) for c, o in zip(cots, outs, strict=True)], allow_unused=True
        )
        numerical = []
        for t in inputs:
            g = np.zeros(tuple(t.shape))
            view = t.detach()
            for idx in np.ndindex(*tuple(t.shape)):
                old = float(view[idx])
                with ember.no_grad():
                    view[idx] = old + eps
                    plus = scalar()
                    view[idx] = old - eps
                    minus = scalar()
                    view[idx] = old
                g[idx] = (plus - minus) / (2 * eps)
            numerical.append(g)
    analytical = [
        np.zeros(tuple(i.shape)) if a is None else to_numpy(a) for a, i in zip(analytical, inputs, strict=True)
    ]
    return analytical, numerical


def _has_expanded(value) -> bool:
    if isinstance(value, T):
        return value.layout == "expanded"
    if isinstance(value, list | tuple):
        return any(_has_expanded(v) for v in value)
    if isinstance(value, dict):
        return any(_has_expanded(v) for v in value.values())
    return False


def outputs_nograd(value) -> list:
    if isinstance(value, ember.Tensor):
        return [value] if value.dtype.category >= 2 else []
    if isinstance(value, list | tuple):
        return [o for v in value for o in outputs_nograd(v)]
    return []
