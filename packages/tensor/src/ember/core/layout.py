"""Shapes and strides: broadcasting, contiguity, and the layout of pointwise results.

Every function here works on tuples of sizes and strides and never calls ``int()`` on a size, so
that symbolic sizes can flow through them later. Meta kernels and CPU kernels both take their
output layout from here, which is what makes a meta tensor's strides equal the CPU result's.
"""

from __future__ import annotations

from functools import lru_cache

from ember.core.symbolic import GuardOnDataDependentSymNode, guard_size_oblivious, sym_max


def contiguous_strides(shape: tuple) -> tuple:
    try:
        return _contiguous_strides_cached(shape)
    except TypeError:  # symbolic sizes are unhashable (as in PyTorch): computed each time
        return _contiguous_strides(shape)


def _contiguous_strides(shape: tuple) -> tuple:
    strides = []
    running = 1
    for size in reversed(shape):
        strides.append(running)
        if type(size) is int:
            running *= size if size > 1 else 1
        else:
            running *= sym_max(size, 1)  # no guard: a data-dependent size may be anything
    return tuple(reversed(strides))


_contiguous_strides_cached = lru_cache(maxsize=1024)(_contiguous_strides)
# For shapes that are ints by construction (a CPU array's): the cache without the symbolic fallback.
int_contiguous_strides = _contiguous_strides_cached


def is_contiguous(shape: tuple, stride: tuple) -> bool:
    """PyTorch's rule: size-1 dimensions may have any stride; an empty tensor is contiguous."""
    expected = 1
    try:
        for size in shape:
            if size == 0:
                return True
        for size, st in zip(reversed(shape), reversed(stride), strict=True):
            if size != 1:
                if st != expected:
                    return False
                expected *= size
    except GuardOnDataDependentSymNode:
        return _is_contiguous_size_oblivious(shape, stride)
    return True


def _is_contiguous_size_oblivious(shape: tuple, stride: tuple) -> bool:
    """``is_contiguous`` where a size computed from data is taken to be neither 0 nor 1 (PyTorch's
    size-oblivious rule), which is what the tensor's layout means for all other sizes."""
    expected = 1
    for size, st in zip(reversed(shape), reversed(stride), strict=True):
        if guard_size_oblivious(size == 0):
            return True
        if not guard_size_oblivious(size == 1):
            if guard_size_oblivious(st != expected):
                return False
            expected *= size
    return True


def is_non_overlapping_and_dense(shape: tuple, stride: tuple) -> bool:
    """Every element at its own address and no gaps, in some order of dimensions (PyTorch's rule:
    size-1 dimensions may have any stride; an empty tensor qualifies)."""
    if is_contiguous(shape, stride):
        return True
    if len(shape) == 1:
        return shape[0] < 2 or stride[0] == 1
    order = sorted(range(len(shape)), key=lambda d: (bool(shape[d] < 2), stride[d]))
    expected = 1
    for d in order:
        if shape[d] < 2:
            return True
        if stride[d] != expected:
            return False
        expected *= shape[d]
    return True


def numel(shape: tuple) -> int:
    n = 1
    for size in shape:
        n *= size
    return n


def broadcast_shapes(*shapes: tuple) -> tuple:
    try:
        return _broadcast_shapes_cached(*shapes)
    except TypeError:  # symbolic sizes are unhashable: computed each time
        return _broadcast_shapes(*shapes)


def _broadcast_shapes(*shapes: tuple) -> tuple:
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        offset = ndim - len(shape)
        for i, size in enumerate(shape):
            current = out[offset + i]
            if _is_one(size):
                continue
            if _is_one(current):
                out[offset + i] = size
                continue
            if size == current:
                continue
            raise RuntimeError(
                f"The size of tensor a ({current}) must match the size of tensor b ({size}) "
                f"at non-singleton dimension {offset + i}"
            )
    return tuple(out)


_broadcast_shapes_cached = lru_cache(maxsize=1024)(_broadcast_shapes)


def _is_one(size) -> bool:
    # Broadcasting asks whether a size is 1 as PyTorch does, size-obliviously: a size computed from
    # data is taken not to be 1, rather than failing for want of its value.
    return size == 1 if type(size) is int else guard_size_oblivious(size == 1)


def pointwise_strides(shape: tuple, operands: list[tuple[tuple, tuple]]) -> tuple:
    """The strides PyTorch gives the result of a pointwise op of ``operands`` (shape, stride) pairs.

    Dimensions are ordered by the operands' strides (the first operand that tells two dimensions
    apart decides; broadcast dimensions never decide; equal strides put the smaller size inward),
    and the result is dense in that order. All-contiguous operands give a contiguous result.
    """
    ndim = len(shape)
    if ndim == 0:
        return ()
    # TensorIterator's shortcut: contiguous operands all of the result's shape, or all with exactly
    # contiguous strides. Otherwise odd strides of size-1 dims take part in ordering the result's dims.
    if all(is_contiguous(s, st) for s, st in operands) and (
        all(s == shape for s, _ in operands) or all(st == contiguous_strides(s) for s, st in operands)
    ):
        return contiguous_strides(shape)
    # Each operand's strides as seen in the broadcast shape; 0 where it is broadcast.
    seen = []
    for op_shape, op_stride in operands:
        offset = ndim - len(op_shape)
        strides = [0] * ndim
        for i, (size, st) in enumerate(zip(op_shape, op_stride, strict=True)):
            strides[offset + i] = 0 if (size == 1 and shape[offset + i] != 1) else st
        seen.append(strides)

    def should_swap(d0: int, d1: int) -> int:
        for strides in seen:
            s0, s1 = strides[d0], strides[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                return -1
            if s0 > s1:
                return 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(ndim - 1, -1, -1))  # innermost first
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            comparison = should_swap(perm[d0], perm[d1])
            if comparison > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif comparison < 0:
                break
    strides = [0] * ndim
    running = 1
    for dim in perm:
        strides[dim] = running
        running *= shape[dim] if shape[dim] > 1 else 1
    return tuple(strides)


def dense_strides_like(shape: tuple, stride: tuple) -> tuple:
    """The strides of ``empty_like(t)`` in PyTorch's ``preserve_format``: a dense, non-overlapping
    tensor's own strides exactly (odd strides of size-1 dimensions included), else dense strides in
    the order of its dimensions, as a pointwise op would lay out its result."""
    if is_non_overlapping_and_dense(shape, stride):
        return tuple(stride)
    return pointwise_strides(shape, [(shape, stride)])


def normalize_dim(dim: int, ndim: int, wrap_scalar: bool = True) -> int:
    """A dimension index in range, with PyTorch's IndexError for one that is not."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    n = ndim if ndim > 0 or not wrap_scalar else 1
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def normalize_dims(dims, ndim: int) -> tuple:
    """``dim`` arguments that may be an int, a sequence of ints or None (all dimensions)."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    out = tuple(normalize_dim(d, ndim) for d in dims)
    if len(set(out)) != len(out):
        for d in out:
            if out.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return out
