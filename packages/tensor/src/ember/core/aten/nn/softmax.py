"""Softmax and log-softmax along one dimension: aten ``_softmax``/``_log_softmax`` (the kernels) and
``softmax.int``/``log_softmax.int`` (the ``dtype=`` front ends, which cast and call them).

The CPU kernel is fused on NumPy: shift by the maximum into the result buffer (skipped when every
value is small enough that exp cannot overflow), exponentiate it in place, sum once, then scale
(softmax) or subtract the log of the sum (log-softmax, so that it is a logsumexp and never takes
the log of a rounded probability). float16/bfloat16 compute in float32 and round once, as PyTorch's
CPU kernels do. The result is contiguous whatever the input's layout.
The decompositions say the same in core ops (amax, sub, exp, sum, div, log).
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core import reduction as R
from ember.core.api import method, public
from ember.core.dispatch import define
from ember.core.dispatch import ops as _ops
from ember.core.layout import normalize_dim
from ember.core.quiet import restore, silence
from ember.core.tensor import Tensor, empty, from_array

softmax_op = define("_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", ("core",))
log_softmax_op = define("_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", ("core",))
softmax_int = define("softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
log_softmax_int = define("log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")


def compute_array(self: Tensor) -> np.ndarray:
    """The input's data in the dtype the arithmetic runs in (float32 for the half types)."""
    array = self._array
    if self.dtype.itemsize == 2:
        array = array.astype(np.float32)
    return array


def row_sums(a: np.ndarray, axis: int) -> np.ndarray:
    """Sums along ``axis``, kept. Along the last axis ``einsum`` is used: its contiguous inner loop
    is several times faster than NumPy's per-row reduction, and unlike a BLAS product it runs on
    one thread, so it does not slow down on a busy machine."""
    if axis == a.ndim - 1:
        return np.einsum("...i->...", a)[..., None]
    return np.add.reduce(a, axis=axis, keepdims=True)


# Inputs within [-SAFE, SAFE] need no shift by the maximum: exp neither overflows (nor does a sum of
# up to 1e12 such terms) nor leaves the normal range, and softmax is shift-invariant. Checking the
# range reads the data twice but saves the subtraction pass, which writes it.
SAFE = 60.0


def unshifted(x: np.ndarray) -> bool:
    """Whether ``x`` may be exponentiated without the shift (NaN fails both comparisons)."""
    if x.size == 0:
        return False
    return bool(np.minimum.reduce(x, axis=None) >= -SAFE) and bool(np.maximum.reduce(x, axis=None) <= SAFE)


def softmax_into(x: np.ndarray, axis: int, out: np.ndarray, log: bool) -> np.ndarray:
    """(log-)softmax of ``x`` along ``axis`` written into the C-contiguous ``out`` (same shape)."""
    if x.size == 0:
        return out
    if unshifted(x):
        np.exp(x, out=out)
        total = row_sums(out, axis)
        if log:
            np.log(total, out=total)
            return np.subtract(x, total, out=out)
    else:
        np.subtract(x, np.maximum.reduce(x, axis=axis, keepdims=True), out=out)
        if log:
            total = row_sums(np.exp(out), axis)
            np.log(total, out=total)
            return np.subtract(out, total, out=out)
        np.exp(out, out=out)
        total = row_sums(out, axis)
    np.divide(1, total, out=total)
    return np.multiply(out, total, out=out)


def _check(self: Tensor, dim: int, half_to_float: bool, name: str) -> int:
    """The checks of both kernels; the normalized ``dim``."""
    if self.dtype.category != D.FLOATING:
        # PyTorch names the kernel it would have run: the last-dim one or the general one.
        kernel_name = f"{name}_lastdim_kernel_impl" if dim in (-1, self.ndim - 1) else f"{name}_kernel_impl"
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for '{D.SCALAR_TYPE_NAMES[self.dtype]}'")
    if half_to_float:
        raise RuntimeError(f"{name} with half to float conversion is not supported on CPU")
    return normalize_dim(dim, self.ndim)


def _meta(name: str):
    def meta(self: Tensor, dim: int, half_to_float: bool) -> Tensor:
        _check(self, dim, half_to_float, name)
        return empty(self._shape, self.dtype, self.device)

    return meta


def _kernel(name: str, log: bool):
    def kernel(self: Tensor, dim: int, half_to_float: bool) -> Tensor:
        axis = _check(self, dim, half_to_float, name)
        x = compute_array(self)
        token = silence()
        try:
            # A 0-dim input is a row of one (inf and NaN give NaN, as in PyTorch).
            rows = x.reshape(1) if x.ndim == 0 else x
            result = softmax_into(rows, axis, np.empty(rows.shape, rows.dtype), log).reshape(x.shape)
        finally:
            restore(token)
        return from_array(result.astype(self.dtype.np, copy=False), self.dtype)

    return kernel


softmax_op.register_kernel("cpu")(_kernel("softmax", log=False))
softmax_op.register_meta(_meta("softmax"))
log_softmax_op.register_kernel("cpu")(_kernel("log_softmax", log=True))
log_softmax_op.register_meta(_meta("log_softmax"))

_aten = _ops.aten


@softmax_op.register_decomposition
def _softmax_decomposition(self: Tensor, dim: int, half_to_float: bool) -> Tensor:
    x = self.float() if self.dtype.itemsize == 2 else self
    shifted = _aten.sub.Tensor(x, _aten.amax.default(x, [dim], True))
    e = _aten.exp.default(shifted)
    return _aten.div.Tensor(e, _aten.sum.dim_IntList(e, [dim], True)).to(self.dtype)


@log_softmax_op.register_decomposition
def _log_softmax_decomposition(self: Tensor, dim: int, half_to_float: bool) -> Tensor:
    x = self.float() if self.dtype.itemsize == 2 else self
    shifted = _aten.sub.Tensor(x, _aten.amax.default(x, [dim], True))
    lse = _aten.log.default(_aten.sum.dim_IntList(_aten.exp.default(shifted), [dim], True))
    return _aten.sub.Tensor(shifted, lse).to(self.dtype)


def _front(kernel_op):
    def front(self: Tensor, dim: int, dtype=None) -> Tensor:
        if dtype is not None and dtype is not self.dtype:
            self = self.to(dtype)
        return kernel_op(self, dim, False)

    return front


for _op, _kernel_op in ((softmax_int, softmax_op), (log_softmax_int, log_softmax_op)):
    _op.register_decomposition(_front(_kernel_op))


def _check_dim(name: str, dim) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    return int(dim)


def _check_dtype(name: str, dtype):
    if dtype is not None and not isinstance(dtype, D.dtype):
        raise TypeError(f"{name}(): argument 'dtype' must be ember.dtype, not {type(dtype).__name__}")
    return dtype


def softmax_call(input: Tensor, dim, dtype=None, *, log: bool = False) -> Tensor:
    name = "log_softmax" if log else "softmax"
    dim = _check_dim(name, dim)
    dtype = _check_dtype(name, dtype)
    if dtype is not None and dtype is not input.dtype:
        input = input.to(dtype)
    return (log_softmax_op if log else softmax_op)(input, dim, False)


def _write_out(result: Tensor, out) -> Tensor:
    R.check_out_dtype(out, result.dtype)
    R.fit_out(out, result)
    # Through the dispatcher, so that modes (tracing, functionalization) see the write.
    out.copy_(result)
    return out


@public("softmax")
def softmax(input: Tensor, dim, dtype=None, *, out=None) -> Tensor:
    """``ember.softmax``: ``exp(x) / sum(exp(x))`` along ``dim``."""
    result = softmax_call(input, dim, dtype)
    return result if out is None else _write_out(result, out)


@public("log_softmax")
def log_softmax(input: Tensor, dim, dtype=None, *, out=None) -> Tensor:
    """``ember.log_softmax``: ``x - logsumexp(x)`` along ``dim``."""
    result = softmax_call(input, dim, dtype, log=True)
    return result if out is None else _write_out(result, out)


@method("softmax")
def _softmax_method(self: Tensor, dim, dtype=None) -> Tensor:
    return softmax_call(self, dim, dtype)


@method("log_softmax")
def _log_softmax_method(self: Tensor, dim, dtype=None) -> Tensor:
    return softmax_call(self, dim, dtype, log=True)


@public("_softmax")
def _softmax(input: Tensor, dim: int, half_to_float: bool) -> Tensor:
    """``ember._softmax``: the kernel op itself (``half_to_float`` is refused on the CPU, as in PyTorch)."""
    return softmax_op(input, dim, half_to_float)


@public("_log_softmax")
def _log_softmax(input: Tensor, dim: int, half_to_float: bool) -> Tensor:
    """``ember._log_softmax``: the kernel op itself."""
    return log_softmax_op(input, dim, half_to_float)
