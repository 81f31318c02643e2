"""The three forms of an op that writes into ``self`` by index (index_add, scatter, masked_fill, ...):
``op_`` (in place), ``op`` (on a copy) and ``op.out``, from one in-place kernel and one check.

The kernel ``write(self, *args)`` works on ``self._array`` and is called after ``check(self,
*args)``, which raises PyTorch's errors without reading data, so the meta kernels run it too. The
functional form writes into a contiguous copy of ``self`` (PyTorch's structured kernels give their
result ``self``'s sizes with contiguous strides); ``out=`` takes that result, resized as needed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ember.core import dtypes as D
from ember.core.devices import CPU
from ember.core.dispatch import OpOverload, define
from ember.core.layout import dense_strides_like
from ember.core.pointwise import check_no_internal_overlap, resize_out
from ember.core.tensor import Tensor, empty

INDEX_NAMES = D.SCALAR_TYPE_NAMES


def schemas(name: str, overload: str, args: str, out_overload: str | None) -> tuple[str, str, str | None]:
    """The functional, in-place and out= schemas of ``name(args)`` (``args`` starts with ``Tensor self``)."""
    dot = f".{overload}" if overload else ""
    functional = f"{name}{dot}({args}) -> Tensor"
    inplace = f"{name}_{dot}({args.replace('Tensor self', 'Tensor(a!) self', 1)}) -> Tensor(a!)"
    out = None
    if out_overload is not None:
        sep = ", " if "*" in args else ", *, "
        out = f"{name}.{out_overload}({args}{sep}Tensor(a!) out) -> Tensor(a!)"
    return functional, inplace, out


def define_writing(
    name: str,
    overload: str,
    args: str,
    write: Callable,
    check: Callable,
    out_overload: str | None = None,
    preserve: bool = False,
    overlap_check: bool = True,
) -> tuple[OpOverload, OpOverload, OpOverload | None]:
    """``preserve``: the copy keeps ``self``'s strides (ops that PyTorch writes as clone + op_).
    ``overlap_check``: refuse an expanded ``self`` in place (PyTorch's index_fill_ does not)."""
    f_schema, i_schema, o_schema = schemas(name, overload, args, out_overload)
    functional, inplace = define(f_schema, ("core",)), define(i_schema, ("inplace", "core"))

    @inplace.register_kernel("cpu")
    def _inplace(self, *args, **kwargs):
        check(self, *args, **kwargs)
        if overlap_check:
            check_no_internal_overlap(self)
        write(self, *args, **kwargs)
        self._storage.version += 1
        return self

    @inplace.register_meta
    def _inplace_meta(self, *args, **kwargs):
        check(self, *args, **kwargs)
        if overlap_check:
            check_no_internal_overlap(self)
        return self

    @functional.register_kernel("cpu")
    def _functional(self, *args, **kwargs):
        check(self, *args, **kwargs)
        result = empty(self._shape, self.dtype, CPU, _strides(self, preserve))
        np.copyto(result._array, self._array)
        write(result, *args, **kwargs)
        return result

    @functional.register_meta
    def _functional_meta(self, *args, **kwargs):
        check(self, *args, **kwargs)
        return empty(self._shape, self.dtype, self.device, _strides(self, preserve))

    out_op = None
    if o_schema is not None:
        out_op = define(o_schema, ("out", "core"))

        @out_op.register_kernel("cpu")
        def _out(self, *args, out, **kwargs):
            result = functional(self, *args, **kwargs)
            return write_out(out, result)

        @out_op.register_meta
        def _out_meta(self, *args, out, **kwargs):
            return fit_out(out, _functional_meta(self, *args, **kwargs))

    return functional, inplace, out_op


def _strides(self: Tensor, preserve: bool) -> tuple | None:
    return dense_strides_like(self._shape, self._stride) if preserve else None


def fit_out(out: Tensor, result: Tensor) -> Tensor:
    """Check an ``out=`` tensor against a result (a CPU one or a meta function's) and resize it to
    the result's shape, as PyTorch does; an ``out=`` meta function ends here."""
    if not isinstance(out, Tensor):
        raise TypeError(f"out must be a Tensor, not {type(out).__name__}")
    if out.dtype is not result.dtype:
        raise RuntimeError(
            f"Expected out tensor to have dtype {INDEX_NAMES[result.dtype]}, but got {INDEX_NAMES[out.dtype]} instead"
        )
    if out.device != result.device:
        raise RuntimeError(f"Expected out tensor on {result.device}, but got {out.device}")
    if out._shape != result._shape:
        resize_out(out, result._shape)
    return out


def write_out(out: Tensor, result: Tensor) -> Tensor:
    """Copy a computed CPU result into an ``out=`` tensor of the same dtype, after ``fit_out``."""
    fit_out(out, result)
    if out.device.type == "meta":  # a meta result has no values to copy: the fitted out is the answer
        return out
    if out._array is None or result._array is None:
        # No host values here (a fake tensor's, a device plugin's): the copy goes through the op.
        return out.copy_(result)
    np.copyto(out._array, result._array)
    out._storage.version += 1
    return out


def check_index_dtype(index, message: str, allowed=(D.int64,), error=RuntimeError) -> None:
    if not isinstance(index, Tensor):
        raise TypeError(f"index must be a Tensor, not {type(index).__name__}")
    if index.dtype not in allowed:
        raise error(message.format(dtype=INDEX_NAMES[index.dtype]))


def out_of_bounds(array: np.ndarray, size: int, negative: bool = False) -> int | None:
    """The first position outside ``[-size, size)`` (``negative``) or ``[0, size)``, or None."""
    if array.size == 0:
        return None
    low = -size if negative else 0
    if array.min() < low or array.max() >= size:
        return int(array[(array < low) | (array >= size)].flat[0])
    return None


def compute_dtype(d: D.dtype) -> np.dtype:
    """Half types accumulate in float32, as PyTorch's CPU kernels do."""
    return np.dtype(np.float32) if d in (D.float16, D.bfloat16) else d.np
