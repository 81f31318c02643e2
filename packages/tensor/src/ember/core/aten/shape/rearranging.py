"""Rearranging copies: ``flip`` (``fliplr``, ``flipud``), ``roll``, ``repeat``, ``tile``, ``tril``, ``triu``.

Each result's layout is the one PyTorch's kernel gives, and the meta kernels compute the same:

- ``flip`` writes into ``empty_like(self)`` (preserve format: a dense input's strides, else dense
  strides in the input's order);
- ``roll`` is PyTorch's construction, run on any device: an empty input is cloned (preserve format),
  otherwise the two slices of each rolled dim are joined with ``cat``, and with no dims the flattened
  tensor is rolled and viewed back;
- ``repeat`` and ``tril``/``triu`` give contiguous results; ``tile`` pads its reps with leading ones
  and repeats. In-place ``tril_``/``triu_`` only write zeros, so an input whose elements share memory
  ends as PyTorch's does (an element zeroed through any alias stays zero).
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.aten.shape.joining import cat, memory_format_of, memory_format_strides
from ember.core.dispatch import define
from ember.core.layout import contiguous_strides, dense_strides_like, normalize_dim, normalize_dims, numel
from ember.core.pointwise import resize_out, type_name
from ember.core.symbolic import INT_LIKE
from ember.core.tensor import Tensor, empty

# -- flip -----------------------------------------------------------------------------------------------

flip = define("flip(Tensor self, int[] dims) -> Tensor", ("core",))


def _flip_plan(self: Tensor, dims) -> tuple[tuple, tuple]:
    if isinstance(dims, int) and not isinstance(dims, bool):
        dims = (dims,)
    return normalize_dims(tuple(dims), self.ndim), dense_strides_like(self._shape, self._stride)


@flip.register_kernel("cpu")
def _flip_cpu(self: Tensor, dims) -> Tensor:
    dims, strides = _flip_plan(self, dims)
    out = empty(self._shape, self.dtype, self.device, strides)
    np.copyto(out._array, np.flip(self._array, dims) if dims and self.ndim else self._array)
    return out


@flip.register_meta
def _flip_meta(self: Tensor, dims) -> Tensor:
    _, strides = _flip_plan(self, dims)
    return empty(self._shape, self.dtype, self.device, strides)


fliplr = define("fliplr(Tensor self) -> Tensor")
flipud = define("flipud(Tensor self) -> Tensor")


@fliplr.register_decomposition
def _fliplr(self: Tensor) -> Tensor:
    if self.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(self, (1,))


@flipud.register_decomposition
def _flipud(self: Tensor) -> Tensor:
    if self.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(self, (0,))


# -- roll -----------------------------------------------------------------------------------------------------

roll = define("roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor")  # decomposes into slices and cat


def _int_list(name: str, value) -> tuple:
    if isinstance(value, INT_LIKE) and not isinstance(value, bool):
        return (value,)
    if not isinstance(value, list | tuple) or not all(
        isinstance(v, INT_LIKE) and not isinstance(v, bool) for v in value
    ):
        raise TypeError(f"roll(): argument '{name}' must be tuple of ints, not {type(value).__name__}")
    return tuple(value)


def _roll_any(self: Tensor, shifts, dims=()) -> Tensor:
    shifts, dims = _int_list("shifts", shifts), _int_list("dims", dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) == 1:
        flat = self.contiguous().view((self.numel(),))
        return _roll_any(flat, shifts, (0,)).view(self._shape)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    result = self
    for shift, dim in zip(shifts, dims, strict=True):
        result = _roll_one(result, shift, dim)
    return result


def _roll_one(self: Tensor, shift: int, dim: int) -> Tensor:
    if self.numel() == 0:
        # PyTorch returns clone(preserve_format): nothing to copy, but the result carries autograd history.
        return self.clone()
    if self.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    dim = normalize_dim(dim, self.ndim)
    size = self._shape[dim]
    start = (size - shift) % size  # Python's % is already non-negative here
    return cat([self.narrow(dim, start, size - start), self.narrow(dim, 0, start)], dim)


@roll.register_meta
def _roll_meta(self: Tensor, shifts, dims=()) -> Tensor:
    """The layout ``_roll_any`` ends with: contiguous when the flattened tensor rolls, else, per rolled
    dim, a clone's (preserve format) for an empty tensor or the layout cat gives the two slices."""
    shifts, dims = _int_list("shifts", shifts), _int_list("dims", dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) == 1:
        return empty(self._shape, self.dtype, self.device)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    shape, stride = self._shape, self._stride
    for shift, dim in zip(shifts, dims, strict=True):
        if numel(shape) == 0:
            stride = dense_strides_like(shape, stride)
            continue
        if not shape:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        dim = normalize_dim(dim, len(shape))
        size = shape[dim]
        start = (size - shift) % size
        formats = {memory_format_of(shape[:dim] + (n,) + shape[dim + 1 :], stride) for n in (size - start, start)}
        stride = memory_format_strides(shape, formats.pop() if len(formats) == 1 else "contiguous_format")
    return empty(shape, self.dtype, self.device, stride)


# The same composition computes on the CPU and decomposes for autograd: narrow is a view and cat
# has both kernels.
roll.register_kernel("cpu")(_roll_any)
roll.register_decomposition(_roll_any)


# -- repeat, tile -------------------------------------------------------------------------------------------------

repeat = define("repeat(Tensor self, SymInt[] repeats) -> Tensor", ("core",))


def _repeat_plan(self: Tensor, repeats) -> tuple[tuple, tuple]:
    repeats = tuple(repeats)
    if len(repeats) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    padded = (1,) * (len(repeats) - self.ndim) + self._shape
    shape = tuple(n * r for n, r in zip(padded, repeats, strict=True))
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    return padded, shape


@repeat.register_kernel("cpu")
def _repeat_cpu(self: Tensor, repeats) -> Tensor:
    padded, shape = _repeat_plan(self, repeats)
    out = empty(shape, self.dtype, self.device)
    if numel(shape):
        np.copyto(out._array, np.tile(self._array.reshape(padded), tuple(repeats)))
    return out


@repeat.register_meta
def _repeat_meta(self: Tensor, repeats) -> Tensor:
    _, shape = _repeat_plan(self, repeats)
    return empty(shape, self.dtype, self.device)


tile = define("tile(Tensor self, SymInt[] dims) -> Tensor")


@tile.register_decomposition
def _tile(self: Tensor, dims) -> Tensor:
    dims = tuple(dims)
    return repeat(self, (1,) * (self.ndim - len(dims)) + dims)


# -- tril, triu ------------------------------------------------------------------------------------------------------


def _keep_mask(self: Tensor, diagonal: int, upper: bool) -> np.ndarray:
    """Where the result keeps the input, for the last two dims (broadcast over the batch)."""
    rows, cols = self._shape[-2:]
    if upper:
        return ~np.tri(rows, cols, diagonal - 1, dtype=bool)
    return np.tri(rows, cols, diagonal, dtype=bool)


def _define_triangle(name: str, upper: bool):
    functional = define(f"{name}(Tensor self, int diagonal=0) -> Tensor", ("core",))
    inplace = define(f"{name}_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)", ("inplace",))
    out_op = define(f"{name}.out(Tensor self, int diagonal=0, *, Tensor(a!) out) -> Tensor(a!)", ("out",))

    def check(self: Tensor, diagonal) -> None:
        if not isinstance(diagonal, int) or isinstance(diagonal, bool):
            raise TypeError(f"{name}(): argument 'diagonal' (position 2) must be int, not {type(diagonal).__name__}")
        if self.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")

    def compute(self: Tensor, diagonal: int) -> np.ndarray:
        array = self._require_data(name)
        return np.where(_keep_mask(self, diagonal, upper), array, np.zeros((), array.dtype))

    @functional.register_kernel("cpu")
    def cpu(self: Tensor, diagonal: int = 0) -> Tensor:
        check(self, diagonal)
        out = empty(self._shape, self.dtype, self.device)
        np.copyto(out._array, compute(self, diagonal))
        return out

    @functional.register_meta
    def meta(self: Tensor, diagonal: int = 0) -> Tensor:
        check(self, diagonal)
        return empty(self._shape, self.dtype, self.device)

    @inplace.register_kernel("cpu")
    def cpu_inplace(self: Tensor, diagonal: int = 0) -> Tensor:
        check(self, diagonal)
        if self.numel():
            # Zeros only: where elements alias each other, a zero written through any alias wins.
            zero = ~np.broadcast_to(_keep_mask(self, diagonal, upper), self._shape)
            self._array[zero] = np.zeros((), self.dtype.np)
        self._storage.version += 1
        return self

    @inplace.register_meta
    def meta_inplace(self: Tensor, diagonal: int = 0) -> Tensor:
        check(self, diagonal)
        return self

    def prepare_out(self: Tensor, diagonal, out) -> None:
        check(self, diagonal)
        if not isinstance(out, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
        if out.dtype is not self.dtype:
            raise RuntimeError(
                f"Expected out tensor to have dtype {_c10_name(self.dtype)}, but got {_c10_name(out.dtype)} instead"
            )
        if out.device != self.device:
            raise RuntimeError(f"Expected out tensor to have device {self.device}, but got {out.device} instead")
        if out._shape != self._shape:
            resize_out(out, self._shape, contiguous_strides(self._shape))

    @out_op.register_kernel("cpu")
    def cpu_out(self: Tensor, diagonal: int = 0, *, out: Tensor) -> Tensor:
        prepare_out(self, diagonal, out)
        result = compute(self, diagonal)  # computed before writing: out may alias self
        np.copyto(out._array, result)
        out._storage.version += 1
        return out

    @out_op.register_meta
    def meta_out(self: Tensor, diagonal: int = 0, *, out: Tensor) -> Tensor:
        prepare_out(self, diagonal, out)
        return out

    def fn(input, diagonal=0, *, out=None):
        return functional(input, diagonal) if out is None else out_op(input, diagonal, out=out)

    def method_fn(self, diagonal=0):
        return functional(self, diagonal)

    def method_inplace(self, diagonal=0):
        return inplace(self, diagonal)

    for f, n in ((fn, name), (method_fn, name), (method_inplace, name + "_")):
        f.__name__ = f.__qualname__ = n
    fn.__doc__ = f"``{functional.schema}``"
    public(name)(fn)
    method(name)(method_fn)
    method(name + "_")(method_inplace)
    return functional, inplace, out_op


def _c10_name(d: D.dtype) -> str:
    """The C++ name PyTorch's out= dtype check prints (``float``, ``long``, ``c10::BFloat16``...)."""
    return D.CPP_TYPE_NAMES.get(d, type_name(d))


tril, tril_, tril_out = _define_triangle("tril", upper=False)
triu, triu_, triu_out = _define_triangle("triu", upper=True)


# -- the Python surface -----------------------------------------------------------------------------------------------


def _dims_arg(dims):
    if len(dims) == 1 and isinstance(dims[0], list | tuple):
        return tuple(dims[0])
    return tuple(dims)


@public("flip")
def _flip_function(input, dims):
    return flip(input, _sequence("flip", "dims", dims))


@method("flip")
def _flip_method(self, *dims):
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    return flip(self, _dims_arg(dims))


@method("fliplr")
@public("fliplr")
def _fliplr_function(input):
    return fliplr(input)


@method("flipud")
@public("flipud")
def _flipud_function(input):
    return flipud(input)


@method("roll")
@public("roll")
def _roll_function(input, shifts, dims=None):
    return roll(input, shifts, () if dims is None else dims)


@method("repeat")
def _repeat_method(self, *repeats):
    if not repeats:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    return repeat(self, _sizes("repeat", "repeats", repeats))


@public("tile")
def _tile_function(input, dims):
    return tile(input, _sizes("tile", "dims", (_sequence("tile", "dims", dims),)))


@method("tile")
def _tile_method(self, *dims):
    return tile(self, _sizes("tile", "dims", dims))


def _sequence(name: str, arg: str, value) -> tuple:
    """The functional forms take a sequence only (``torch.flip(x, 0)`` is a TypeError)."""
    if not isinstance(value, list | tuple):
        raise TypeError(f"{name}(): argument '{arg}' (position 2) must be tuple of ints, not {type(value).__name__}")
    return tuple(value)


def _sizes(name: str, arg: str, values) -> tuple:
    values = _dims_arg(values)
    for v in values:
        if not isinstance(v, INT_LIKE) or isinstance(v, bool):
            raise TypeError(
                f"{name}(): argument '{arg}' must be tuple of ints, but found element of type {type(v).__name__}"
            )
    return values
