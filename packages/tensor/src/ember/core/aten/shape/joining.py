"""Joining tensors: ``cat`` (``concat``, ``concatenate``), ``stack``, ``hstack``, ``vstack``, ``dstack``.

One plan serves cat's CPU and meta kernels: the inputs are checked in PyTorch's order (same device,
no 0-dim tensor, the dim wrapped against the first tensor that counts, sizes equal off the cat dim),
the result dtype promotes across every input, and the result takes the memory format PyTorch
computes from the inputs: channels-last (3d) when every input's strides look so, else contiguous.
A 1-D tensor of size 0 is PyTorch's legacy empty tensor: it joins with anything and is skipped.

``stack`` follows PyTorch's construction (cat along the dim, then split it with a view, or cat of
unsqueezed inputs for the last dim), so its strides come out of cat's. The ``*stack`` helpers are
compositions of views and cat.
"""

from __future__ import annotations

import numpy as np

from ember.core.api import public
from ember.core.aten.shape.views import view_strides
from ember.core.dispatch import define
from ember.core.fastpath import native
from ember.core.layout import is_non_overlapping_and_dense, normalize_dim
from ember.core.memory_formats import memory_format_of, memory_format_strides
from ember.core.pointwise import resize_out, type_name
from ember.core.promotion import can_cast, promote_types
from ember.core.tensor import Tensor, empty, from_array


def suggest_memory_format(t: Tensor) -> str:
    return memory_format_of(t._shape, t._stride)


# -- cat ----------------------------------------------------------------------------------------------

cat = define("cat(Tensor[] tensors, int dim=0) -> Tensor", ("core",))
cat_out = define("cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)", ("out",))


def _skipped(t: Tensor) -> bool:
    """PyTorch's legacy empty tensor, shape (0,): it joins with tensors of any shape."""
    return t.ndim == 1 and t._shape[0] == 0


def check_same_device(tensors, first: Tensor | None = None) -> None:
    expected = (tensors[0] if first is None else first).device
    for t in tensors:
        if t.device != expected:
            raise RuntimeError(f"Tensor on device {t.device} is not on the expected device {expected}!")


def _cat_plan(tensors, dim: int):
    """(shape, dtype, strides, the tensors that are copied, the wrapped dim) of ``cat(tensors, dim)``."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"cat(): argument 'dim' must be int, not {type(dim).__name__}")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    check_same_device(tensors)
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    valid = [(i, t) for i, t in enumerate(tensors) if not _skipped(t)]
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = promote_types(dtype, t.dtype)
    formats = {suggest_memory_format(t) for t in tensors}
    memory_format = formats.pop() if len(formats) == 1 else "contiguous_format"
    if not valid:
        # Only legacy empty tensors: PyTorch neither wraps nor checks the dim.
        return (0,), dtype, (1,), [], dim
    first = valid[0][1]
    dim = normalize_dim(dim, first.ndim)
    size = 0
    for i, t in valid:
        if t.ndim != first.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {first.ndim} and {t.ndim}")
        for d in range(first.ndim):
            if d != dim and t._shape[d] != first._shape[d]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {dim}. Expected size {first._shape[d]} but got "
                    f"size {t._shape[d]} for tensor number {i} in the list."
                )
        size += t._shape[dim]
    shape = first._shape[:dim] + (size,) + first._shape[dim + 1 :]
    return shape, dtype, memory_format_strides(shape, memory_format), [t for _, t in valid], dim


def _fill_cat(out: Tensor, parts: list, dim: int) -> Tensor:
    start = 0
    index = [slice(None)] * out.ndim
    for t in parts:
        n = t._shape[dim]
        index[dim] = slice(start, start + n)
        np.copyto(out._array[tuple(index)], t._require_data("cat"), casting="unsafe")
        start += n
    return out


_c_same_kind_arrays = native.same_kind_arrays if native is not None else None


def _same_kind_arrays(tensors, max_ndim: int) -> list | None:
    """The NumPy arrays of plain CPU tensors of one dtype and rank (1 to ``max_ndim``), else None.

    Joining such tensors needs no plan: the result is contiguous (no memory format question arises
    below 4 dims) and its dtype is theirs, so one NumPy call does the work of a per-tensor loop.
    """
    if _c_same_kind_arrays is not None and type(tensors) in (list, tuple):
        return _c_same_kind_arrays(tensors, max_ndim)  # this function in C
    if not tensors:
        return None
    first = tensors[0]
    if type(first) is not Tensor:
        return None
    dtype, ndim = first.dtype, len(first._shape)
    if not 0 < ndim <= max_ndim:
        return None
    arrays = []
    for t in tensors:
        if type(t) is not Tensor or t.dtype is not dtype or len(t._shape) != ndim or t._array is None:
            return None
        arrays.append(t._array)
    return arrays


@cat.register_kernel("cpu")
def _cat_cpu(tensors, dim: int = 0) -> Tensor:
    arrays = _same_kind_arrays(tensors, 3)
    if arrays is not None and type(dim) is int and -len(arrays[0].shape) <= dim < len(arrays[0].shape):
        try:
            return from_array(np.concatenate(arrays, axis=dim), tensors[0].dtype)
        except ValueError:
            pass  # sizes differ off the cat dim: the plan raises PyTorch's error
    shape, dtype, strides, parts, dim = _cat_plan(tensors, dim)
    return _fill_cat(empty(shape, dtype, tensors[0].device, strides), parts, dim)


@cat.register_meta
def _cat_meta(tensors, dim: int = 0) -> Tensor:
    shape, dtype, strides, _, _ = _cat_plan(tensors, dim)
    return empty(shape, dtype, tensors[0].device, strides)


def _overlaps(a: Tensor, b: Tensor) -> bool:
    """PyTorch's ``get_overlap_status`` is Partial or Full (dense tensors sharing bytes of one storage)."""
    if a is b:
        return True
    if a.numel() == 0 or b.numel() == 0 or a._storage is not b._storage:
        return False
    if not (is_non_overlapping_and_dense(a._shape, a._stride) and is_non_overlapping_and_dense(b._shape, b._stride)):
        return False  # "too hard" to tell; PyTorch lets it pass
    a_begin, b_begin = a._offset * a.dtype.itemsize, b._offset * b.dtype.itemsize
    return a_begin < b_begin + b.nbytes and b_begin < a_begin + a.nbytes


def _prepare_cat_out(tensors, dim: int, out: Tensor):
    if not isinstance(out, Tensor):
        raise TypeError(f"cat(): argument 'out' must be Tensor, not {type(out).__name__}")
    shape, dtype, strides, parts, dim = _cat_plan(tensors, dim)
    check_same_device([out], tensors[0])
    if not can_cast(dtype, out.dtype):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type {type_name(out.dtype)}")
    for t in tensors:
        if _overlaps(out, t):
            raise RuntimeError(
                "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
                "memory location. Please clone() the tensor before performing the operation."
            )
    if out._shape != shape:
        resize_out(out, shape, strides)
    return parts, dim


@cat_out.register_kernel("cpu")
def _cat_out_cpu(tensors, dim: int = 0, *, out: Tensor) -> Tensor:
    parts, dim = _prepare_cat_out(tensors, dim, out)
    _fill_cat(out, parts, dim)
    out._storage.version += 1
    return out


@cat_out.register_meta
def _cat_out_meta(tensors, dim: int = 0, *, out: Tensor) -> Tensor:
    _prepare_cat_out(tensors, dim, out)
    return out


# -- stack ---------------------------------------------------------------------------------------------

stack = define("stack(Tensor[] tensors, int dim=0) -> Tensor")  # decomposes into unsqueeze and cat
stack_out = define("stack.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)", ("out",))


def _stack_parts(tensors, dim: int) -> tuple[list, int, tuple | None]:
    """What to cat, along which dim, and the shape to view the result as (None: use it as it is)."""
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    first = tensors[0]
    d = normalize_dim(dim, first.ndim + 1)
    for i, t in enumerate(tensors[1:], start=1):
        if t._shape != first._shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(first._shape)} at entry 0 and "
                f"{list(t._shape)} at entry {i}"
            )
    if d < first.ndim:
        # Cat along d, then split d into (len(tensors), size): a view, whatever cat's layout.
        return tensors, d, first._shape[:d] + (len(tensors),) + first._shape[d:]
    return [t.unsqueeze(d) for t in tensors], d, None


def _stack_any(tensors, dim: int = 0) -> Tensor:
    parts, d, shape = _stack_parts(tensors, dim)
    result = cat(parts, d)
    return result if shape is None else result.view(shape)


def _stack_cpu(tensors, dim: int = 0) -> Tensor:
    # Tensors of one shape and at most 2 dims stack into a contiguous result, as cat-and-view gives.
    arrays = _same_kind_arrays(tensors, 2)
    if arrays is not None and type(dim) is int and -len(arrays[0].shape) - 1 <= dim <= len(arrays[0].shape):
        shape = arrays[0].shape
        for a in arrays:
            if a.shape != shape:
                return _stack_any(tensors, dim)  # it raises PyTorch's error
        d = dim + len(shape) + 1 if dim < 0 else dim
        if d == len(shape):
            return from_array(np.stack(arrays, axis=d), tensors[0].dtype)
        # Joined along d, the inputs lie one after another: splitting d gives the stacked shape.
        joined = np.concatenate(arrays, axis=d)
        return from_array(joined.reshape(shape[:d] + (len(arrays),) + shape[d:]), tensors[0].dtype)
    return _stack_any(tensors, dim)


# One composite runs on every device (the layout work is cat's); the CPU has a shortcut.
stack.register_kernel("cpu")(_stack_cpu)
stack.register_meta(_stack_any)
stack.register_decomposition(_stack_any)


def _stack_out_with(join):
    """``stack.out`` by PyTorch's construction, joining with ``join`` (cat.out, or its meta function)."""

    def stack_out_kernel(tensors, dim: int = 0, *, out: Tensor) -> Tensor:
        parts, d, shape = _stack_parts(tensors, dim)
        if shape is not None:
            # As PyTorch: resize out to the stacked shape, then cat into a view of it that merges d and d + 1.
            if not isinstance(out, Tensor):
                raise TypeError(f"stack(): argument 'out' must be Tensor, not {type(out).__name__}")
            if out._shape != shape:
                resize_out(out, shape)
            merged = shape[:d] + (shape[d] * shape[d + 1],) + shape[d + 2 :]
            if view_strides(out._shape, out._stride, merged) is not None:
                join(parts, d, out=out.view(merged))
                return out
            parts = [t.unsqueeze(d) for t in parts]
        return join(parts, d, out=out)

    return stack_out_kernel


_stack_out_any = _stack_out_with(cat_out)
stack_out.register_kernel("cpu")(_stack_out_any)
stack_out.register_meta(_stack_out_with(_cat_out_meta))
stack_out.register_decomposition(_stack_out_any)


# -- hstack, vstack, dstack: compositions of views and cat -------------------------------------------------


def _at_least(t: Tensor, n: int) -> Tensor:
    """PyTorch's ``atleast_{1,2,3}d`` (views): 0-d to [1]..., 1-d [n] to [1, n], 2-d [m, n] to [m, n, 1]."""
    if t.ndim >= n:
        return t
    if t.ndim == 0:
        return t.reshape((1,) * n)
    if t.ndim == 1:
        t = t.unsqueeze(0)
        return t if n == 2 else t.unsqueeze(-1)
    return t.unsqueeze(-1)


def _stacker(name: str, n: int, dim_of):
    functional = define(f"{name}(Tensor[] tensors) -> Tensor")
    out_op = define(f"{name}.out(Tensor[] tensors, *, Tensor(a!) out) -> Tensor(a!)", ("out",))

    def parts(tensors):
        tensors = list(tensors)
        if not tensors:
            raise RuntimeError(f"{name} expects a non-empty TensorList")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
        joined = [_at_least(t, n) for t in tensors]
        return joined, dim_of(joined[0])

    @functional.register_decomposition
    def compose(tensors):
        joined, d = parts(tensors)
        return cat(joined, d)

    @out_op.register_decomposition
    def compose_out(tensors, *, out):
        joined, d = parts(tensors)
        return cat_out(joined, d, out=out)

    @public(name)
    def fn(tensors, *, out=None):
        return functional(tensors) if out is None else out_op(tensors, out=out)

    fn.__name__ = fn.__qualname__ = name
    return functional


hstack = _stacker("hstack", 1, lambda t: 0 if t.ndim == 1 else 1)
vstack = _stacker("vstack", 2, lambda t: 0)
dstack = _stacker("dstack", 3, lambda t: 2)
column_stack = define("column_stack(Tensor[] tensors) -> Tensor")
column_stack_out = define("column_stack.out(Tensor[] tensors, *, Tensor(a!) out) -> Tensor(a!)", ("out",))


def _columns(tensors) -> list:
    """0-d and 1-d tensors become columns; the rest join as they are, along dim 1."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return [t.reshape((t.numel(), 1)) if t.ndim <= 1 else t for t in tensors]


column_stack.register_decomposition(lambda tensors: cat(_columns(tensors), 1))
column_stack_out.register_decomposition(lambda tensors, *, out: cat_out(_columns(tensors), 1, out=out))


@public("column_stack")
def _column_stack_function(tensors, *, out=None):
    return column_stack(tensors) if out is None else column_stack_out(tensors, out=out)


# -- the Python surface ----------------------------------------------------------------------------------------


def _tensor_list(name: str, tensors):
    if isinstance(tensors, Tensor) or not isinstance(tensors, list | tuple):
        raise TypeError(
            f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not {type(tensors).__name__}"
        )
    return list(tensors)


def _dim_or_axis(name: str, dim, axis):
    if axis is not None:
        if dim is not None:
            raise TypeError(f"{name}() got multiple values for argument 'dim'")
        dim = axis
    dim = 0 if dim is None else dim
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    return dim


def _cat_function(name: str):
    def fn(tensors, dim=None, *, axis=None, out=None):
        tensors = _tensor_list(name, tensors)
        dim = _dim_or_axis(name, dim, axis)
        return cat(tensors, dim) if out is None else cat_out(tensors, dim, out=out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{cat.schema}``: joins ``tensors`` along ``dim`` (PyTorch's ``torch.{name}``)."
    return public(name)(fn)


cat_function = _cat_function("cat")
concat_function = _cat_function("concat")
concatenate_function = _cat_function("concatenate")


@public("stack")
def _stack_function(tensors, dim: int = 0, *, out=None):
    tensors = _tensor_list("stack", tensors)
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"stack(): argument 'dim' must be int, not {type(dim).__name__}")
    return stack(tensors, dim) if out is None else stack_out(tensors, dim, out=out)
