"""View ops: new sizes, strides and offset over the same storage, on every device.

A view's kernel only computes metadata, so one kernel (registered for ``"*"``) serves CPU, meta and
plugin devices alike. Views share their base's storage and so its version counter: an in-place op
through a view shows in the base and bumps the version both see.
"""

from __future__ import annotations

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.aten.shape.copying import _clone as clone_function
from ember.core.dispatch import define
from ember.core.fastpath import native
from ember.core.layout import broadcast_shapes, contiguous_strides, normalize_dim, normalize_dims, numel
from ember.core.symbolic import INT_LIKE
from ember.core.tensor import Tensor, _array_view, _new, make_view, note_view

VIEW = ("view", "core")
# The C common case of each kernel below (None where the extension is absent): it returns the view, or
# None for anything else (other devices' metadata, symbolic sizes, every error), which the Python runs.
_c = native


def _view_op(schema: str, tags: tuple[str, ...] = VIEW):
    op = define(schema, tags)

    def register(fn):
        op.register_kernel("*")(fn)
        return op

    return register


def _sizes(args, name: str = "view", what: str = "size") -> tuple:
    """``view(2, 3)`` and ``view((2, 3))`` alike; ``view()`` is PyTorch's TypeError."""
    if not args:
        raise TypeError(f'{name}() missing 1 required positional arguments: "{what}"')
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = tuple(args[0])
    for a in args:
        if not isinstance(a, INT_LIKE):
            raise TypeError(f"sizes must be ints, got {type(a).__name__}")
    return tuple(args)


def infer_size(shape: tuple, n: int) -> tuple:
    """Fill in one ``-1`` so that the sizes hold ``n`` elements."""
    # Each size on its own (not min()): symbolic sizes then need no guard ordering them.
    if -1 not in shape and numel(shape) == n and all(size >= 0 for size in shape):
        return shape
    infer, known = None, 1
    for i, size in enumerate(shape):
        if size == -1:
            if infer is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer = i
        elif size < 0:
            raise RuntimeError(f"invalid shape dimension {size}")
        else:
            known *= size
    if infer is not None:
        if known == 0 or n % known != 0:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
        shape = shape[:infer] + (n // known,) + shape[infer + 1 :]
    elif known != n:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
    return shape


def view_strides(old_shape: tuple, old_stride: tuple, new_shape: tuple) -> tuple | None:
    """Strides that show ``old`` as ``new_shape`` without copying, or None when there are none."""
    if not old_shape:
        return (1,) * len(new_shape)
    if numel(old_shape) == 0:
        return old_stride if old_shape == new_shape else contiguous_strides(new_shape)
    new_stride = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = old_stride[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        # The end of a chunk of dimensions that are contiguous with each other.
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and old_stride[tensor_d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_stride[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base = old_stride[tensor_d - 1]
                tensor_numel = view_numel = 1
    return tuple(new_stride) if view_d == -1 else None


@_view_op("view(Tensor(a) self, SymInt[] size) -> Tensor(a)")
def view(self: Tensor, size) -> Tensor:
    if _c is not None and (out := _c.view(self, size)) is not None:
        return out
    shape = infer_size(tuple(size), numel(self._shape))
    stride = contiguous_strides(shape) if self.is_contiguous() else view_strides(self._shape, self._stride, shape)
    if stride is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans "
            "across two contiguous subspaces). Use .reshape(...) instead."
        )
    return make_view(self, shape, stride, self._offset)


@_view_op("as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)")
def as_strided(self: Tensor, size, stride, storage_offset=None) -> Tensor:
    size, stride = tuple(size), tuple(stride)
    offset = self._offset if storage_offset is None else storage_offset
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(size)} sizes and {len(stride)} strides")
    if any(s < 0 for s in size) or any(s < 0 for s in stride) or offset < 0:
        raise RuntimeError(f"as_strided: negative size, stride or offset in {list(size)}, {list(stride)}, {offset}")
    if numel(size) > 0:
        needed = (offset + 1 + sum((n - 1) * s for n, s in zip(size, stride, strict=True))) * self.dtype.itemsize
        if needed > self._storage.nbytes:
            raise RuntimeError(
                f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and itemsize "
                f"{self.dtype.itemsize} requiring a storage size of {needed} are out of bounds for storage of size "
                f"{self._storage.nbytes}"
            )
    return make_view(self, size, stride, offset)


@_view_op("alias(Tensor(a) self) -> Tensor(a)")
def alias(self: Tensor) -> Tensor:
    return make_view(self, self._shape, self._stride, self._offset)


@_view_op("detach(Tensor(a) self) -> Tensor(a)")
def detach(self: Tensor) -> Tensor:
    out = make_view(self, self._shape, self._stride, self._offset)
    out._base = None  # shares the storage but is no view for autograd: in-place changes do not reach self's graph
    return out


@_view_op("permute(Tensor(a) self, int[] dims) -> Tensor(a)")
def permute(self: Tensor, dims) -> Tensor:
    ndim = len(self._shape)
    if len(dims) != ndim:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired "
            f"ordering of dimensions i.e. input.dim() = {ndim} is not equal to len(dims) = {len(dims)}"
        )
    dims = tuple(normalize_dim(d, ndim) for d in dims)
    if len(set(dims)) != ndim:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return make_view(self, tuple(self._shape[d] for d in dims), tuple(self._stride[d] for d in dims), self._offset)


@_view_op("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)")
def transpose(self: Tensor, dim0: int, dim1: int) -> Tensor:
    if _c is not None and (out := _c.transpose(self, dim0, dim1)) is not None:
        return out
    ndim = len(self._shape)
    d0, d1 = normalize_dim(dim0, ndim), normalize_dim(dim1, ndim)
    shape, stride = list(self._shape), list(self._stride)
    if ndim:
        shape[d0], shape[d1] = shape[d1], shape[d0]
        stride[d0], stride[d1] = stride[d1], stride[d0]
    return make_view(self, tuple(shape), tuple(stride), self._offset)


@_view_op("t(Tensor(a) self) -> Tensor(a)")
def t(self: Tensor) -> Tensor:
    if _c is not None and (out := _c.t(self)) is not None:
        return out
    if len(self._shape) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {len(self._shape)}D")
    return (
        transpose.kernel("*")(self, 0, 1)
        if len(self._shape) == 2
        else make_view(self, self._shape, self._stride, self._offset)
    )


@_view_op("expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)")
def expand(self: Tensor, size, *, implicit: bool = False) -> Tensor:
    size = tuple(size)
    if len(size) < len(self._shape):
        raise RuntimeError(
            f"expand(torch.FloatTensor{{{list(self._shape)}}}, size={list(size)}): the number of sizes provided "
            f"({len(size)}) must be greater or equal to the number of dimensions in the tensor ({len(self._shape)})"
        )
    lead = len(size) - len(self._shape)
    shape, stride = [], []
    for i, target in enumerate(size):
        if i < lead:
            if target < 0:
                raise RuntimeError(
                    f"The expanded size of the tensor ({target}) isn't allowed in a leading, non-existing dimension {i}"
                )
            shape.append(target)
            stride.append(0)
            continue
        have, have_stride = self._shape[i - lead], self._stride[i - lead]
        if target == -1:
            target = have
        if have == target:
            shape.append(have)
            stride.append(have_stride)
        elif have == 1:
            shape.append(target)
            stride.append(0)
        else:
            raise RuntimeError(
                f"The expanded size of the tensor ({target}) must match the existing size ({have}) at non-singleton "
                f"dimension {i}.  Target sizes: {list(size)}.  Tensor sizes: {list(self._shape)}"
            )
    return make_view(self, tuple(shape), tuple(stride), self._offset)


@_view_op("squeeze(Tensor(a) self) -> Tensor(a)")
def squeeze(self: Tensor) -> Tensor:
    keep = [i for i, s in enumerate(self._shape) if s != 1]
    return make_view(self, tuple(self._shape[i] for i in keep), tuple(self._stride[i] for i in keep), self._offset)


@_view_op("squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)")
def squeeze_dims(self: Tensor, dim) -> Tensor:
    dims = set(normalize_dims(dim, len(self._shape))) if len(self._shape) else set()
    keep = [i for i, s in enumerate(self._shape) if not (i in dims and s == 1)]
    return make_view(self, tuple(self._shape[i] for i in keep), tuple(self._stride[i] for i in keep), self._offset)


@_view_op("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)")
def squeeze_dim(self: Tensor, dim: int) -> Tensor:
    if not len(self._shape):
        normalize_dim(dim, 1)
        return make_view(self, self._shape, self._stride, self._offset)
    d = normalize_dim(dim, len(self._shape))
    keep = [i for i in range(len(self._shape)) if not (i == d and self._shape[i] == 1)]
    return make_view(self, tuple(self._shape[i] for i in keep), tuple(self._stride[i] for i in keep), self._offset)


@_view_op("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)")
def unsqueeze(self: Tensor, dim: int) -> Tensor:
    if _c is not None and (out := _c.unsqueeze(self, dim)) is not None:
        return out
    d = normalize_dim(dim, len(self._shape) + 1)
    shape, stride = list(self._shape), list(self._stride)
    inner = stride[d] * shape[d] if d < len(self._shape) else 1
    shape.insert(d, 1)
    stride.insert(d, inner)
    return make_view(self, tuple(shape), tuple(stride), self._offset)


@_view_op("select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)")
def select(self: Tensor, dim: int, index: int) -> Tensor:
    if _c is not None and (out := _c.select(self, dim, index)) is not None:
        return out
    if len(self._shape) == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, len(self._shape))
    size = self._shape[d]
    if index < -size or index >= size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(self._shape)} at dimension {d}"
        )
    index = index + size if index < 0 else index
    return make_view(
        self,
        self._shape[:d] + self._shape[d + 1 :],
        self._stride[:d] + self._stride[d + 1 :],
        self._offset + index * self._stride[d],
    )


@_view_op("slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)")
def slice_(self: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    if _c is not None and (out := _c.slice(self, dim, start, end, step)) is not None:
        return out
    if len(self._shape) == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if step <= 0:
        raise ValueError("step must be greater than zero")
    d = normalize_dim(dim, len(self._shape))
    size = self._shape[d]
    start = 0 if start is None else start
    end = size if end is None else end
    start = max(0, start + size) if start < 0 else min(start, size)
    end = max(0, end + size) if end < 0 else min(end, size)
    length = max(0, (end - start + step - 1) // step)
    shape = self._shape[:d] + (length,) + self._shape[d + 1 :]
    stride = self._stride[:d] + (self._stride[d] * step,) + self._stride[d + 1 :]
    return make_view(self, shape, stride, self._offset + start * self._stride[d])


@_view_op("narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)")
def narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    if len(self._shape) == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, len(self._shape))
    size = self._shape[d]
    if start < -size or start > size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    start = start + size if start < 0 else start
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return slice_.kernel("*")(self, d, start, start + length, 1)


@_view_op("unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)")
def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
    d = normalize_dim(dimension, len(self._shape))
    have = self._shape[d] if len(self._shape) else 1
    if size > have:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {have} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if len(self._shape) == 0:
        return make_view(self, (size,), (1,), self._offset)
    count = (have - size) // step + 1
    shape = self._shape[:d] + (count,) + self._shape[d + 1 :] + (size,)
    stride = self._stride[:d] + (self._stride[d] * step,) + self._stride[d + 1 :] + (self._stride[d],)
    return make_view(self, shape, stride, self._offset)


@_view_op("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)")
def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    d1, d2 = normalize_dim(dim1, len(self._shape)), normalize_dim(dim2, len(self._shape))
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n1, n2 = self._shape[d1], self._shape[d2]
    if offset >= 0:
        length = max(0, min(n1, n2 - offset))
        start = offset * self._stride[d2] if length else 0
    else:
        length = max(0, min(n1 + offset, n2))
        start = -offset * self._stride[d1] if length else 0
    keep = [i for i in range(len(self._shape)) if i not in (d1, d2)]
    shape = tuple(self._shape[i] for i in keep) + (length,)
    stride = tuple(self._stride[i] for i in keep) + (self._stride[d1] + self._stride[d2],)
    return make_view(self, shape, stride, self._offset + start)


@_view_op("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]")
def unbind(self: Tensor, dim: int = 0) -> list[Tensor]:
    if len(self._shape) == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = normalize_dim(dim, len(self._shape))
    pick = select.kernel("*")
    return [pick(self, d, i) for i in range(self._shape[d])]


@_view_op("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]")
def split(self: Tensor, split_size: int, dim: int = 0) -> list[Tensor]:
    if len(self._shape) == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = normalize_dim(dim, len(self._shape))
    size = self._shape[d]
    if split_size < 0 or (split_size == 0 and size != 0):
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
    if size == 0:
        return [self]
    cut = slice_.kernel("*")
    return [cut(self, d, i, min(i + split_size, size), 1) for i in range(0, size, split_size)]


@_view_op("split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]")
def split_with_sizes(self: Tensor, split_sizes, dim: int = 0) -> list[Tensor]:
    d = normalize_dim(dim, len(self._shape))
    if sum(split_sizes) != self._shape[d] or any(s < 0 for s in split_sizes):
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {self._shape[d]} (input tensor's size at "
            f"dimension {d}), but got split_sizes={list(split_sizes)}"
        )
    cut, out, start = slice_.kernel("*"), [], 0
    for s in split_sizes:
        out.append(cut(self, d, start, start + s, 1))
        start += s
    return out


# -- compositions of views (decompositions, no kernels of their own) ------------------------------


def _composite(schema: str):
    op = define(schema, ("view",))

    def register(fn):
        op.register_decomposition(fn)
        return op

    return register


@_composite("reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)")
def reshape(self: Tensor, shape) -> Tensor:
    shape = infer_size(tuple(shape), self.numel())
    if view_strides(self._shape, self._stride, shape) is not None:
        return view(self, shape)
    return view(clone_function(self, memory_format="contiguous_format"), shape)


@_composite("flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)")
def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    if len(self._shape) == 0:
        return reshape(self, (1,))
    s, e = normalize_dim(start_dim, len(self._shape)), normalize_dim(end_dim, len(self._shape))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self
    return reshape(self, self._shape[:s] + (numel(self._shape[s : e + 1]),) + self._shape[e + 1 :])


@_composite("unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)")
def unflatten(self: Tensor, dim: int, sizes) -> Tensor:
    d = normalize_dim(dim, len(self._shape))
    if len(sizes) == 0:
        raise RuntimeError("unflatten: sizes must be non-empty")
    sizes = infer_size(tuple(sizes), self._shape[d]) if -1 in sizes or numel(sizes) != self._shape[d] else tuple(sizes)
    return view(self, self._shape[:d] + sizes + self._shape[d + 1 :])


@_composite("movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)")
def movedim(self: Tensor, source, destination) -> Tensor:
    if isinstance(source, int):
        source = (source,)
    if isinstance(destination, int):
        destination = (destination,)
    if len(source) != len(destination):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(source)} dims) should contain the same number "
            f"of dims as destination ({list(destination)} dims)"
        )
    src = normalize_dims(source, len(self._shape))
    dst = normalize_dims(destination, len(self._shape))
    order = [None] * len(self._shape)
    for s, d in zip(src, dst, strict=True):
        order[d] = s
    rest = iter(i for i in range(len(self._shape)) if i not in src)
    order = [next(rest) if o is None else o for o in order]
    return permute(self, order)


@_composite("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]")
def chunk(self: Tensor, chunks: int, dim: int = 0) -> list[Tensor]:
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = normalize_dim(dim, len(self._shape))
    size = self._shape[d]
    if size == 0:
        # PyTorch gives ``chunks`` empty pieces of an empty dimension.
        return split_with_sizes(self, [0] * chunks, d)
    return split(self, -(-size // chunks), d)


# -- the Python surface -----------------------------------------------------------------------------


@_view_op("view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)")
def view_dtype(self: Tensor, dtype) -> Tensor:
    """The same bytes read as another dtype; with another element size the last dimension (which
    must be contiguous) scales, and so do the other strides and the offset (PyTorch's rules)."""
    dtype = D.to_dtype(dtype)
    old, new = self.dtype.itemsize, dtype.itemsize
    shape, stride, offset = self._shape, self._stride, self._offset
    if old != new:
        names = f"to view {D.SCALAR_TYPE_NAMES[self.dtype]} as {D.SCALAR_TYPE_NAMES[dtype]} (different element sizes)"
        if not shape:
            raise RuntimeError(f"self.dim() cannot be 0 {names}")
        if stride[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {names}, but got {stride[-1]}")
        if old < new:
            ratio = new // old
            if shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {names}, but got {shape[-1]}")
            if offset % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {names}, but got {offset}")
            for d in range(len(shape) - 1):
                if stride[d] % ratio:
                    raise RuntimeError(f"self.stride({d}) must be divisible by {ratio} {names}, but got {stride[d]}")
            shape = shape[:-1] + (shape[-1] // ratio,)
            stride = tuple(st // ratio for st in stride[:-1]) + (1,)
            offset //= ratio
        else:
            ratio = old // new
            shape = shape[:-1] + (shape[-1] * ratio,)
            stride = tuple(st * ratio for st in stride[:-1]) + (1,)
            offset *= ratio
    out = _new(Tensor, self._storage, shape, stride, offset, dtype, None)
    out._array = _array_view(self._storage, shape, stride, offset, dtype)
    note_view(out, self._base if self._base is not None else self)
    return out


@method("view")
def _view_method(self, *shape):
    # The whole call (dispatcher and kernel) in C when it would take the dispatcher's fast path.
    if _c is not None and (out := _c.view_method(self, shape)) is not None:
        return out
    if len(shape) == 1 and isinstance(shape[0], D.dtype):
        return view_dtype(self, shape[0])
    return view(self, _sizes(shape))


@method("reshape")
def _reshape_method(self, *shape):
    return reshape(self, _sizes(shape, "reshape", "shape"))


@public("reshape")
def _reshape_function(input, shape):
    return reshape(input, tuple(shape))


@public("broadcast_shapes")
def _broadcast_shapes(*shapes):
    """The shape tensors of these shapes broadcast to; an int stands for a 1-D shape."""
    from ember.core.tensor import Size

    normalized = []
    for shape in shapes:
        shape = (shape,) if isinstance(shape, INT_LIKE) else tuple(shape)
        for size in shape:
            if not isinstance(size, INT_LIKE) or isinstance(size, bool):
                raise TypeError(f"broadcast_shapes: sizes must be ints, got {type(size).__name__}")
            if size < 0:
                raise ValueError(f"Attempting to broadcast a dimension with negative length: {list(shape)}")
        normalized.append(shape)
    return Size(broadcast_shapes(*normalized))


@method("view_as")
def _view_as(self, other):
    return view(self, other._shape)


@method("reshape_as")
def _reshape_as(self, other):
    return reshape(self, other._shape)


@method("expand")
def _expand_method(self, *sizes):
    return expand(self, _sizes(sizes, "expand"))


@method("expand_as")
def _expand_as(self, other):
    return expand(self, other._shape)


@method("permute")
def _permute_method(self, *dims):
    return permute(self, _sizes(dims, "permute", "dims"))


@public("permute")
def _permute_function(input, dims):
    return permute(input, tuple(dims))


@method("squeeze")
@public("squeeze")
def _squeeze(input, dim=None):
    if dim is None:
        return squeeze(input)
    if isinstance(dim, INT_LIKE):
        return squeeze_dim(input, dim)
    return squeeze_dims(input, tuple(dim))


@method("split")
@public("split")
def _split(tensor, split_size_or_sections, dim: int = 0):
    if isinstance(split_size_or_sections, INT_LIKE):
        return tuple(split(tensor, split_size_or_sections, dim))
    return tuple(split_with_sizes(tensor, list(split_size_or_sections), dim))


@method("unflatten")
@public("unflatten")
def _unflatten(input, dim: int, sizes):
    return unflatten(input, dim, tuple(sizes))


@method("movedim", "moveaxis")
@public("movedim", "moveaxis")
def _movedim(input, source, destination):
    return movedim(input, source, destination)


@method("swapaxes", "swapdims")
@public("swapaxes", "swapdims")
def _swapaxes(input, axis0: int, axis1: int):
    return transpose(input, axis0, axis1)


# The methods whose whole call (dispatcher and kernel) has a C common case, by its number in _c.method.
_C_METHODS = {"t": 0, "transpose": 1, "unsqueeze": 2}


def _plain(op, name: str, function: bool = True):
    kind = _C_METHODS.get(name)
    if _c is None or kind is None:

        def call(*args, **kwargs):
            return op(*args, **kwargs)

    else:

        def call(*args, **kwargs):
            if not kwargs and _c is not None and (out := _c.method(kind, *args)) is not None:
                return out
            return op(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    method(name)(call)
    if function:
        public(name)(call)


for _op, _name in [
    (as_strided, "as_strided"),
    (transpose, "transpose"),
    (t, "t"),
    (unsqueeze, "unsqueeze"),
    (select, "select"),
    (narrow, "narrow"),
    (diagonal, "diagonal"),
    (flatten, "flatten"),
]:
    _plain(_op, _name)
_plain(unfold, "unfold", function=False)
_plain(detach, "detach")


@method("chunk")
@public("chunk")
def _chunk(input, chunks: int, dim: int = 0):
    return tuple(chunk(input, chunks, dim))  # the op gives a list, PyTorch's surface a tuple


@method("unbind")
@public("unbind")
def _unbind(input, dim: int = 0):
    return tuple(unbind(input, dim))


def _take_geometry(self: Tensor, other: Tensor) -> Tensor:
    """Make ``self`` show ``other``'s geometry: the in-place view ops change metadata only.

    ``other`` came from the dispatcher, so where autograd recorded it, it holds the view op's node
    over ``self``'s history; ``self`` takes that node over (PyTorch's in-place view ops record the
    same). Leaves that require grad refuse, as they refuse every in-place op.
    """
    if other.grad_fn is not None:
        base = self._base
        if base is not None and (
            (self.grad_fn is None and self.requires_grad) or (base.grad_fn is None and base.requires_grad)
        ):
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
        if base is None and self.grad_fn is None and self.requires_grad:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        self.grad_fn, self._output_nr = other.grad_fn, 0
    self._shape, self._stride, self._array, self._contig = other._shape, other._stride, other._array, None
    return self


@method("swapaxes_", "transpose_")
def _transpose_inplace(self, dim0: int, dim1: int):
    return _take_geometry(self, transpose(self, dim0, dim1))


@method("unsqueeze_")
def _unsqueeze_inplace(self, dim: int):
    return _take_geometry(self, unsqueeze(self, dim))


@method("t_")
def _t_inplace(self):
    return _take_geometry(self, t(self))


@method("squeeze_")
def _squeeze_inplace(self, dim=None):
    return _take_geometry(self, _squeeze(self, dim))


@method("detach_")
def _detach_inplace(self):
    if self._base is not None and getattr(self._base, "requires_grad", False):
        raise RuntimeError(
            "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP), "
            "this error can be caused by a view of a tensor requiring grad being detached in place"
        )
    self.requires_grad = False
    self.grad_fn = None
    return self


Tensor.T = property(lambda self: permute(self, tuple(range(len(self._shape) - 1, -1, -1))))


def _matrix_transpose(self):
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor.")
    return transpose(self, -2, -1)


Tensor.mT = property(_matrix_transpose)
