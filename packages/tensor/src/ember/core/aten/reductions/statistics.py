"""Moments: ``var``, ``std``, ``var_mean`` and ``std_mean``, with ``correction`` (and the legacy
``unbiased``).

The divisor is ``max(0, N - correction)`` for N elements per result, as in PyTorch: a correction
at or past N gives inf (or nan for 0/0) with a warning, not an error. Sums run in float64 (or
complex128) and round once to the result dtype, which is the input's real dtype: the variance of a
complex tensor is real; its mean (of ``var_mean``) stays complex. Only floating and complex inputs
are accepted.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from ember.core import dtypes as D
from ember.core import reduction as R
from ember.core.api import method, public
from ember.core.dispatch import define
from ember.core.dispatch import ops as _ops
from ember.core.pointwise import type_name
from ember.core.promotion import can_cast
from ember.core.tensor import Tensor, empty

TAGS = ("reduction", "core")


def _correction(correction) -> float:
    if correction is None:
        return 1.0
    if isinstance(correction, Tensor):
        correction = correction.item()
    if isinstance(correction, complex):
        raise TypeError("correction must be a real number")
    return float(correction)


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside Ember (the dispatcher, and autograd when it
    records, add frames of their own), so that the warning names the caller's line as PyTorch's do."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("ember."):
        frame, level = frame.f_back, level + 1
    return level


def _moments_plan(self: Tensor, dim, correction, keepdim: bool, with_mean: bool, root: bool) -> tuple[R.Plan, float]:
    """The checks, the plan and the correction; warns where the divisor is not positive."""
    if self.dtype.category < D.FLOATING:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    p = R.plan(self, dim, keepdim)
    c = _correction(correction)
    if p.count - c <= 0:
        warnings.warn(
            f"{'std' if root else 'var'}{'_mean' if with_mean else ''}(): degrees of freedom is <= 0. Correction "
            "should be strictly less than the reduction factor (input numel divided by output numel).",
            UserWarning,
            stacklevel=_caller_level(),
        )
    return p, c


def _moments_meta(self: Tensor, dim, correction, keepdim: bool, with_mean: bool, root: bool):
    p, _ = _moments_plan(self, dim, correction, keepdim, with_mean, root)
    spread = empty(p.shape, self.dtype.to_real(), self.device)
    return (spread, empty(p.shape, self.dtype, self.device)) if with_mean else spread


def _moments(self: Tensor, dim, correction, keepdim: bool, with_mean: bool, root: bool):
    p, c = _moments_plan(self, dim, correction, keepdim, with_mean, root)
    wide = np.complex128 if self.dtype.category == D.COMPLEX else np.float64
    with np.errstate(all="ignore"):
        x = R.values(self).astype(wide)
        mean = np.sum(x, axis=p.axes, keepdims=True) / p.count
        # A second pass takes out the first's rounding: a slice of equal values then has exactly that
        # mean and a variance of exactly 0, as PyTorch's Welford kernel gives (std's gradient is 0 there).
        residual = np.sum(x - mean, axis=p.axes, keepdims=True) / p.count
        mean = np.where(np.isfinite(residual), mean + residual, mean)
        divisor = max(0.0, p.count - c)
        deviation = x - mean
        # A complex variance is the real part's plus the imaginary part's, each divided on its own
        # (so 0/0 in one part gives nan even where the other part is x/0 = inf), as in PyTorch.
        spread = np.sum(deviation.real**2, axis=p.axes) / divisor
        if np.iscomplexobj(deviation):
            spread = spread + np.sum(deviation.imag**2, axis=p.axes) / divisor
        if root:
            spread = np.sqrt(spread)
    out = R.computed(p.shape, self.dtype.to_real(), lambda: spread)
    if with_mean:
        return out, R.computed(p.shape, self.dtype, lambda: mean)
    return out


def _define(name: str, root: bool):
    functional = define(
        f"{name}.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
        TAGS,
    )
    out_op = define(
        f"{name}.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False, "
        "Tensor(a!) out) -> Tensor(a!)",
        ("reduction", "out"),
    )
    with_mean = define(
        f"{name}_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) "
        "-> (Tensor, Tensor)",
        TAGS,
    )

    def forms(moments, write):
        """The three overloads' kernels (or meta functions), over ``_moments`` (or ``_moments_meta``)."""

        def kernel(self: Tensor, dim=None, *, correction=None, keepdim: bool = False) -> Tensor:
            return moments(self, dim, correction, keepdim, False, root)

        def out_kernel(self: Tensor, dim=None, *, correction=None, keepdim: bool = False, out) -> Tensor:
            result = kernel(self, dim, correction=correction, keepdim=keepdim)
            if isinstance(out, Tensor) and not can_cast(result.dtype, out.dtype):
                raise RuntimeError(
                    f"result type {type_name(result.dtype)} can't be cast to the desired output type "
                    f"{type_name(out.dtype)}"
                )
            return write(out, result)

        def mean_kernel(self: Tensor, dim=None, *, correction=None, keepdim: bool = False):
            return moments(self, dim, correction, keepdim, True, root)

        return kernel, out_kernel, mean_kernel

    for op, cpu, meta in zip(
        (functional, out_op, with_mean), forms(_moments, R.write_out), forms(_moments_meta, R.fit_out), strict=True
    ):
        R.register(op, cpu, meta)


_define("var", root=False)
_define("std", root=True)

# -- the Python surface: PyTorch's three signatures ------------------------------------------------
#   (input, dim=None, *, correction=None, keepdim=False, out=None)
#   (input, dim, unbiased=True, keepdim=False, *, out=None)
#   (input, unbiased=True)

_MISSING = object()


def _parse(name: str, args: tuple, kwargs: dict):
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    unbiased = kwargs.pop("unbiased", _MISSING)
    correction = kwargs.pop("correction", _MISSING)
    dim = kwargs.pop("dim", _MISSING)
    keepdim = kwargs.pop("keepdim", _MISSING)
    if kwargs:
        raise TypeError(f"{name}() got unexpected keyword arguments {sorted(kwargs)}")
    args = list(args)
    if args and isinstance(args[0], bool):
        if len(args) > 1 or dim is not _MISSING or unbiased is not _MISSING:
            raise TypeError(f"{name}(input, unbiased) takes no other arguments")
        unbiased = args.pop(0)
    elif args:
        if dim is not _MISSING:
            raise TypeError(f"{name}() got multiple values for argument 'dim'")
        dim = args.pop(0)
        if args:
            if unbiased is not _MISSING:
                raise TypeError(f"{name}() got multiple values for argument 'unbiased'")
            unbiased = args.pop(0)
        if args:
            if keepdim is not _MISSING:
                raise TypeError(f"{name}() got multiple values for argument 'keepdim'")
            keepdim = args.pop(0)
        if args:
            raise TypeError(f"{name}() takes at most 4 positional arguments")
    if unbiased is not _MISSING and correction is not _MISSING:
        raise TypeError(f"{name}(): pass either 'unbiased' or 'correction', not both")
    if unbiased is not _MISSING:
        if not isinstance(unbiased, bool):
            raise TypeError(f"{name}(): argument 'unbiased' must be bool, not {type(unbiased).__name__}")
        correction = 1 if unbiased else 0
    correction = None if correction is _MISSING else correction
    if (correction is not None and not isinstance(correction, int | float | Tensor)) or isinstance(correction, complex):
        raise TypeError(f"{name}(): argument 'correction' must be Number, not {type(correction).__name__}")
    dim = None if dim is _MISSING else dim
    R.as_dims(dim)
    keepdim = False if keepdim is _MISSING else keepdim
    if not isinstance(keepdim, bool):
        raise TypeError(f"{name}(): argument 'keepdim' must be bool, not {type(keepdim).__name__}")
    return dim, correction, keepdim, out


def _surface(name: str):
    packet = getattr(_ops.aten, name)
    mean_packet = getattr(_ops.aten, f"{name}_mean")

    def fn(input, *args, **kwargs):
        dim, correction, keepdim, out = _parse(name, args, kwargs)
        if out is not None:
            return packet.correction_out(input, dim, correction=correction, keepdim=keepdim, out=out)
        return packet.correction(input, dim, correction=correction, keepdim=keepdim)

    def fn_mean(input, *args, **kwargs):
        dim, correction, keepdim, out = _parse(f"{name}_mean", args, kwargs)
        if out is not None:
            raise TypeError(f"{name}_mean() got an unexpected keyword argument 'out'")
        return tuple(mean_packet.correction(input, dim, correction=correction, keepdim=keepdim))

    fn.__name__ = fn.__qualname__ = name
    fn_mean.__name__ = fn_mean.__qualname__ = f"{name}_mean"
    public(name)(fn)
    public(f"{name}_mean")(fn_mean)
    method(name)(lambda self, *args, **kwargs: fn(self, *args, **kwargs))


_surface("var")
_surface("std")


R.accept_numpy_names(("var", "std", "var_mean", "std_mean"))
