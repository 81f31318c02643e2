"""Advanced indexing: aten ``index.Tensor``, ``index_put_`` and ``index_put``.

``indices`` holds one entry per leading dimension of ``self``: None (the whole dimension), an
integer tensor (positions, negative ones counting from the end) or a bool/uint8 mask spanning as
many dimensions as it has. The index tensors broadcast together; their shape replaces the indexed
dimensions in place when those are adjacent, and goes to the front when they are not. That is
NumPy's rule once ints and None have been turned into views, which the Python ``t[...]`` path
(``aten/indexing/indexing.py``) does first, so the CPU kernels hand the key straight to NumPy after
checking bounds themselves (PyTorch's message, never NumPy's).

The result is laid out as PyTorch's TensorIterator lays out its output: ``self`` restrided (stride 0
in the indexed dimensions) and the index tensors are the operands of a pointwise layout. A mask's
size depends on its data, so the meta kernels refuse masks, as PyTorch's nonzero does on meta.

``index_put_`` with ``accumulate=False`` and repeated positions keeps the last value written (NumPy's
assignment order); PyTorch leaves that case undefined. With ``accumulate=True`` repeated positions sum,
in their order. As in PyTorch, one mask with a one-element value is ``masked_fill_`` (the value casts),
and an empty result checks no position.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.aten.shape.copying import clone
from ember.core.devices import CPU
from ember.core.dispatch import define
from ember.core.layout import broadcast_shapes, contiguous_strides, numel, pointwise_strides
from ember.core.tensor import Tensor, empty, from_array

INDEX_DTYPES = (D.int64, D.int32, D.bool_, D.uint8)

index = define("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", ("core",))
index_put_ = define(
    "index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
    ("inplace", "core"),
)
index_put = define(
    "index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor", ("core",)
)


# -- checking and expanding the indices ------------------------------------------------------------


def _entries(self: Tensor, indices) -> list[tuple[int, Tensor | None, bool]]:
    """``(first dim, tensor or None, is a mask)`` per entry, after PyTorch's checks."""
    if not isinstance(indices, list | tuple):
        raise TypeError(f"index(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    entries, dim = [], 0
    for t in indices:
        if t is None:
            entries.append((dim, None, False))
            dim += 1
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"index(): indices must be Tensors or None, not {type(t).__name__}")
        if t.dtype not in INDEX_DTYPES:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        mask = t.dtype is D.bool_ or t.dtype is D.uint8
        if t.dtype is D.uint8:
            warnings.warn(
                "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.",
                UserWarning,
                stacklevel=4,
            )
        span = t.ndim if mask else 1
        if dim + span > self.ndim:
            raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
        if mask:
            for j in range(t.ndim):
                if t._shape[j] != self._shape[dim + j]:
                    raise IndexError(
                        f"The shape of the mask {list(t._shape)} at index {j} does not match the shape of the "
                        f"indexed tensor {list(self._shape)} at index {dim + j}"
                    )
        entries.append((dim, t, mask))
        dim += span
    return entries


def _positions(entries) -> list[tuple[int, tuple, tuple]]:
    """``(dim, shape, stride)`` of each indexed dimension's positions; masks become nonzero columns."""
    out = []
    for dim, t, mask in entries:
        if t is None:
            continue
        if mask:
            if t._array is None:
                raise NotImplementedError(
                    "indexing with a bool mask has a data-dependent shape (it runs nonzero), which a tensor "
                    f"without data ({t.device.type}) cannot give"
                )
            n = int(np.count_nonzero(t._array))
            out.extend((dim + j, (n,), (1,)) for j in range(t.ndim))  # columns of nonzero's (n, k), strides (1, n)
        else:
            out.append((dim, t._shape, t._stride))
    return out


def _layout(self: Tensor, positions) -> tuple[tuple, tuple]:
    """The shape and strides of ``self[indices]`` (PyTorch's TensorIterator layout)."""
    dims = [p[0] for p in positions]
    try:
        bshape = broadcast_shapes(*(p[1] for p in positions))
    except RuntimeError:
        shapes = " ".join(str(list(p[1])) for p in positions)
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes {shapes}"
        ) from None
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    shape, stride = self._shape, self._stride
    if adjacent:
        before, after = list(range(dims[0])), list(range(dims[-1] + 1, self.ndim))
    else:
        before, after = [], [d for d in range(self.ndim) if d not in dims]
    nb, na, nk = len(before), len(after), len(bshape)
    out_shape = tuple(shape[d] for d in before) + bshape + tuple(shape[d] for d in after)
    operands = [(out_shape, tuple(stride[d] for d in before) + (0,) * nk + tuple(stride[d] for d in after))]
    for _, p_shape, p_stride in positions:
        # PyTorch views each index as [1]*before + its shape + [1]*after: the size-1 dimensions take the strides
        # a view gives them, which decide where size-1 dimensions of the result go.
        outer = p_stride[0] * p_shape[0] if p_shape else 1
        inner = p_stride[-1] if p_shape else 1
        pad = nk - len(p_shape)
        operands.append(
            ((1,) * (nb + pad) + p_shape + (1,) * na, (outer,) * nb + (0,) * pad + p_stride + (inner,) * na)
        )
    return out_shape, pointwise_strides(out_shape, operands)


def check_bounds(array: np.ndarray, size: int, dim: int) -> None:
    """PyTorch's IndexError for the first position outside ``[-size, size)``."""
    if array.size == 0:
        return
    low, high = array.min(), array.max()
    if low < -size or high >= size:
        bad = array[(array < -size) | (array >= size)].flat[0]
        raise IndexError(f"index {int(bad)} is out of bounds for dimension {dim} with size {size}")


def numpy_key(self: Tensor, entries) -> tuple:
    """The NumPy index equal to ``entries`` (bounds checked); the ordinal in messages counts indexed dims."""
    key, ordinal = [], 0
    for dim, t, mask in entries:
        if t is None:
            key.append(slice(None))
            continue
        array = t._require_data("index with it")
        if mask:
            key.append(array if array.dtype == np.bool_ else array.astype(np.bool_))
            ordinal += t.ndim
            continue
        check_bounds(array, self._shape[dim], ordinal)
        key.append(array)
        ordinal += 1
    while key and type(key[-1]) is slice:
        key.pop()
    return tuple(key)


def _check_device(self: Tensor, entries) -> None:
    for _, t, _ in entries:
        if t is not None and t.device != self.device and t.device.type != "cpu":
            raise RuntimeError(
                f"indices should be either on cpu or on the same device as the indexed tensor ({self.device})"
            )


# -- index.Tensor -----------------------------------------------------------------------------------


@index.register_kernel("cpu")
def _index_cpu(self: Tensor, indices) -> Tensor:
    entries = _entries(self, indices)
    _check_device(self, entries)
    if all(t is None for _, t, _ in entries):
        return clone(self)
    shape, strides = _layout(self, _positions(entries))
    if numel(shape) == 0:  # nothing is read, so no position is checked (as in PyTorch)
        return empty(shape, self.dtype, CPU, strides)
    key = numpy_key(self, entries)
    data = self._array
    if len(key) == 1 and key[0].dtype == np.bool_ and key[0].ndim == self.ndim:
        return from_array(data[key[0]], self.dtype)  # x[mask]: one dimension, contiguous
    last = key[-1]
    if last.dtype != np.bool_ and all(type(k) is slice for k in key[:-1]):
        result = np.take(data, last, axis=len(key) - 1)  # one index array: NumPy's take is the fastest gather
    else:
        result = data[key]
    if strides == contiguous_strides(shape) and result.flags.c_contiguous:
        return from_array(result, self.dtype)
    out = empty(shape, self.dtype, CPU, strides)
    np.copyto(out._array, result)
    return out


@index.register_meta
def _index_meta(self: Tensor, indices) -> Tensor:
    entries = _entries(self, indices)
    if all(t is None for _, t, _ in entries):
        return clone(self)
    shape, strides = _layout(self, _positions(entries))
    return empty(shape, self.dtype, self.device, strides)


# -- index_put_ and index_put -----------------------------------------------------------------------


def _check_put(self: Tensor, values) -> None:
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put_(): argument 'values' must be Tensor, not {type(values).__name__}")
    if values.dtype is not self.dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{D.SCALAR_TYPE_NAMES[self.dtype]} for the destination and {D.SCALAR_TYPE_NAMES[values.dtype]} for the source."
        )


def _check_values_shape(values: Tensor, shape: tuple) -> None:
    ok = len(values._shape) <= len(shape) and all(
        v in (1, s) for v, s in zip(reversed(values._shape), reversed(shape), strict=False)
    )
    if not ok:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(values._shape)} cannot be broadcast to indexing result "
            f"of shape {list(shape)}"
        )


def add_at(target: np.ndarray, key: tuple, values: np.ndarray, wide: bool = False) -> None:
    """``target[key] += values`` with repeated positions summed, in order of occurrence.

    ``np.add.at`` is slow on rows (index_add, ``x[idx] += v``); there the positions are grouped by a
    stable sort and added in rounds, the r-th occurrence of every row in round r: each round is one
    fancy ``+=`` without repeats, and the sums keep PyTorch's sequential order. ``wide``: half types
    accumulate in float32 and round once (index_add), not once per addition (index_put_, put_).
    """
    if wide and target.dtype in (np.float16, D.bfloat16.np) and 0 not in target.strides:
        widened = target.astype(np.float32)
        add_at(widened, key, values.astype(np.float32))
        target[...] = widened
        return
    rows = key[0] if len(key) == 1 else None
    width = int(np.prod(target.shape[1:])) if target.ndim > 1 else 1
    # An expanded target (stride 0) aliases its rows: only np.add.at adds each value into the shared memory.
    if rows is None or rows.ndim != 1 or rows.dtype == np.bool_ or width < 16 or 0 in target.strides:
        np.add.at(target, key, values)
        return
    n = rows.size
    if n == 0:
        return
    values = np.broadcast_to(values, rows.shape + target.shape[1:])
    rows = np.where(rows < 0, rows + target.shape[0], rows)
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    positions = np.arange(n)
    first = np.empty(n, np.bool_)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    rank = positions - np.maximum.accumulate(np.where(first, positions, 0))
    rounds = int(rank.max()) + 1
    if rounds > 64:  # a few rows repeated many times: the rounds would be a loop over elements
        np.add.at(target, rows, values)
        return
    for r in range(rounds):
        chosen = order[rank == r]
        target[rows[chosen]] += values[chosen]


def _as_masked_fill(self: Tensor, entries, values) -> Tensor | None:
    """PyTorch's shortcut: one mask and a one-element value (any dtype) is ``masked_fill_`` by the value's
    number, the mask given trailing size-1 dimensions for the dimensions it leaves out."""
    if not isinstance(values, Tensor) or values.numel() != 1 or values.device.type not in ("cpu", "meta"):
        return None
    given = [(dim, t, mask) for dim, t, mask in entries if t is not None]
    if len(given) != 1 or not given[0][2]:
        return None
    dim, mask, _ = given[0]
    if mask.device != self.device:
        return None
    from ember.core.aten.indexing.masking import masked_fill_s_, masked_fill_t_

    mask = mask.reshape(mask._shape + (1,) * (self.ndim - dim - mask.ndim))
    if values._array is None:
        return masked_fill_t_(self, mask, values.reshape(()))
    return masked_fill_s_(self, mask, values.item())


def _index_put_cpu(self: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    entries = _entries(self, indices)
    if not accumulate:
        filled = _as_masked_fill(self, entries, values)
        if filled is not None:
            return filled
    _check_put(self, values)
    _check_device(self, entries)
    if all(t is None for _, t, _ in entries):
        shape = self._shape
    elif len(entries) == 1 and entries[0][2] and entries[0][1].ndim == self.ndim:
        shape = (int(np.count_nonzero(entries[0][1]._array)),)
    else:
        shape = _layout(self, _positions(entries))[0]
    _check_values_shape(values, shape)
    if numel(shape) == 0:  # nothing is written, so no position is checked (as in PyTorch)
        self._storage.version += 1
        return self
    key = numpy_key(self, entries)
    data = self._array
    source = values._require_data("write from it")
    if accumulate:
        add_at(data, key, source)
    else:
        data[key] = source
    self._storage.version += 1
    return self


@index_put_.register_meta
def _index_put_meta(self: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    entries = _entries(self, indices)
    if not accumulate and _as_masked_fill(self, entries, values) is not None:
        return self
    _check_put(self, values)
    if not any(mask for _, _, mask in entries):
        if all(t is None for _, t, _ in entries):
            _check_values_shape(values, self._shape)
        else:
            _check_values_shape(values, _layout(self, _positions(entries))[0])
    return self


index_put_.register_kernel("cpu")(_index_put_cpu)


@index_put.register_decomposition
def _index_put(self: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    return index_put_(clone(self), indices, values, accumulate)


# On meta tensors the decomposition is a pure shape function: clone's and index_put_'s meta kernels.
index_put.register_meta(_index_put)


# -- the Python surface ---------------------------------------------------------------------------


def _indices_arg(indices) -> list:
    if isinstance(indices, Tensor) or not isinstance(indices, list | tuple):
        raise TypeError(f"index_put(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    for i, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got {type(t).__name__}")
    return list(indices)


@public("index_put")
def index_put_function(input, indices, values, accumulate: bool = False) -> Tensor:
    return index_put(input, _indices_arg(indices), values, accumulate)


@method("index_put")
def _index_put_method(self, indices, values, accumulate: bool = False) -> Tensor:
    return index_put(self, _indices_arg(indices), values, accumulate)


@public("index_put_")
@method("index_put_")
def _index_put_inplace(self, indices, values, accumulate: bool = False) -> Tensor:
    return index_put_(self, _indices_arg(indices), values, accumulate)
