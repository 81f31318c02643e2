"""Scans: ``cumsum`` and ``cumprod`` (functional, in-place and ``out=``).

The result has the input's shape, laid out contiguously. Integers and bools scan in int64 unless
``dtype=`` says otherwise; an explicit narrower integer dtype wraps, as PyTorch's does (the int64
running sum cast down is the same number modulo 2**bits). The in-place forms keep the tensor's
dtype and refuse another ``dtype=``. A bool result is refused (PyTorch has no bool scan kernel),
except for 0-dim and empty inputs, which PyTorch copies without one.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core import reduction as R
from ember.core.api import method, public
from ember.core.dispatch import define
from ember.core.layout import normalize_dim
from ember.core.pointwise import check_no_internal_overlap, type_name, unsupported
from ember.core.tensor import Tensor, empty


def _scan(name: str, ufunc):
    functional = define(f"{name}(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", ("core",))
    inplace = define(f"{name}_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)", ("inplace",))
    out_op = define(
        f"{name}.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)", ("out",)
    )

    def plan(self: Tensor, dim: int, dtype) -> tuple[D.dtype, int]:
        dtype = R.check_dtype_arg(dtype)
        result = dtype or (D.int64 if self.dtype.category <= D.INTEGRAL else self.dtype)
        if result is D.bool_ and self.ndim > 0 and self.numel() > 0:  # PyTorch copies 0-dim and empty inputs
            raise unsupported(f"{name}_out", result)
        return result, normalize_dim(dim, self.ndim)

    def kernel(self: Tensor, dim: int, *, dtype=None) -> Tensor:
        result, axis = plan(self, dim, dtype)

        def compute():
            array = R.values(self, result)
            if array.ndim == 0:
                return array
            return ufunc.accumulate(array, axis=axis, dtype=R.accumulator(result))

        return R.computed(self._shape, result, compute)

    def meta(self: Tensor, dim: int, *, dtype=None) -> Tensor:
        result, _ = plan(self, dim, dtype)
        return empty(self._shape, result, self.device)

    def with_out(functional, write):
        def out_kernel(self: Tensor, dim: int, *, dtype=None, out) -> Tensor:
            if dtype is None and isinstance(out, Tensor):
                dtype = out.dtype
            R.check_out_dtype(out, R.check_dtype_arg(dtype))
            return write(out, functional(self, dim, dtype=dtype))

        return out_kernel

    def inplace_plan(self: Tensor, dim: int, dtype) -> None:
        if dtype is not None and dtype is not self.dtype:
            raise RuntimeError(
                f"Bad in-place call: input tensor dtype {type_name(self.dtype)} and output tensor dtype "
                f"{type_name(dtype)} should match"
            )
        plan(self, dim, self.dtype)  # its dtype errors come first, as in PyTorch
        if self.numel():
            check_no_internal_overlap(self)

    def inplace_kernel(self: Tensor, dim: int, *, dtype=None) -> Tensor:
        inplace_plan(self, dim, dtype)
        np.copyto(self._array, kernel(self, dim, dtype=self.dtype)._array)
        self._storage.version += 1
        return self

    def inplace_meta(self: Tensor, dim: int, *, dtype=None) -> Tensor:
        inplace_plan(self, dim, dtype)
        return self

    R.register(functional, kernel, meta)
    R.register(out_op, with_out(kernel, R.write_out), with_out(meta, R.fit_out))
    R.register(inplace, inplace_kernel, inplace_meta)

    def surface(input, dim, *, dtype=None, out=None):
        if isinstance(dim, bool) or not isinstance(dim, int | np.integer):
            raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
        if out is not None:
            return out_op(input, int(dim), dtype=dtype, out=out)
        return functional(input, int(dim), dtype=dtype)

    surface.__name__ = surface.__qualname__ = name
    public(name)(surface)
    method(name)(lambda self, dim, *, dtype=None: surface(self, dim, dtype=dtype))
    method(name + "_")(lambda self, dim, *, dtype=None: inplace(self, dim, dtype=dtype))
    return functional, inplace, out_op


cumsum = _scan("cumsum", np.add)
cumprod = _scan("cumprod", np.multiply)


R.accept_numpy_names(("cumsum", "cumprod", "cumsum_", "cumprod_"))
