"""Two factories of where a tensor's bytes sit: ``empty_permuted`` (a dense tensor whose dims lie in
memory in a given order) and ``from_file`` (a tensor over a memory-mapped file).

``empty_permuted(size, physical_layout)`` lays out the dims so that ``physical_layout[0]`` is the
outermost in memory and ``physical_layout[-1]`` the innermost: the contiguous strides of the sizes
taken in that order, handed back to the dims they belong to.

``from_file`` maps the file with NumPy's ``memmap``: ``shared=False`` (or None) maps it
copy-on-write (PyTorch's ``MAP_PRIVATE``: writes stay in this process), ``shared=True`` maps it for
reading and writing, creating or extending the file as needed, so that writes reach the file (and
other processes mapping it). The storage holds the mapping itself, so it lives as long as a tensor
uses it. There is nothing to map on the meta device: it refuses, as PyTorch's has no meta kernel.
"""

from __future__ import annotations

import os

import numpy as np

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.aten.factories.factories import _OPTIONS, _check_sizes, _dtype, _finish, empty_strided
from ember.core.aten.lowering import lowered
from ember.core.devices import to_device
from ember.core.dispatch import define
from ember.core.layout import contiguous_strides
from ember.core.storage import Storage
from ember.core.tensor import Tensor, _array_view, _new
from ember.core.tensor import empty as allocate

empty_permuted = define(
    "empty_permuted(SymInt[] size, int[] physical_layout, *, ScalarType? dtype=None, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=None) -> Tensor",
    ("factory",),
)
from_file = define(f"from_file(str filename, bool? shared=None, int? size=0, *, {_OPTIONS}) -> Tensor", ("factory",))


def _permuted_strides(size: tuple, physical_layout) -> tuple:
    order = [int(d) for d in physical_layout]
    if len(order) != len(size):
        raise RuntimeError(
            "Number of dimensions in size does not match the length of the physical_layout; i.e. "
            f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}"
        )
    seen = set()
    for i, d in enumerate(order):
        if not 0 <= d < len(size):
            raise RuntimeError(
                f"Dimension out of range (expected to be between 0 and {len(size) - 1}, but got {d} at index {i}).  "
                "NB: negative dims not currently supported; file an issue if you want it."
            )
        if d in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(d)
    physical = contiguous_strides(tuple(size[d] for d in order))
    strides = [0] * len(size)
    for position, d in enumerate(order):
        strides[d] = physical[position]
    return tuple(strides)


# A decomposition only, as empty_like's: it allocates with empty_strided, so every device with that
# kernel has empty_permuted too, and the code generator sees the core op.
@lowered(empty_permuted)
def _empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, pin_memory=None):
    size = _check_sizes(size)
    strides = _permuted_strides(size, physical_layout)
    return empty_strided(list(size), list(strides), dtype=dtype, layout=layout, device=device, pin_memory=pin_memory)


@from_file.register_meta
def _from_file_meta(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=None):
    raise NotImplementedError(
        "aten::from_file reads a file: there is no meta kernel for it (a meta tensor has no bytes to map)"
    )


def _map(filename: str, shared: bool, nbytes: int) -> np.ndarray:
    try:
        if shared:
            handle = os.open(filename, os.O_RDWR | os.O_CREAT, 0o666)
        else:
            handle = os.open(filename, os.O_RDONLY)
    except OSError as error:
        kind = "read-write" if shared else "read-only"
        raise RuntimeError(
            f"unable to open file <{filename}> in {kind} mode: {error.strerror} ({error.errno})"
        ) from None
    try:
        length = os.fstat(handle).st_size
        if length < nbytes:
            if not shared:
                raise RuntimeError(
                    f"file <{filename}> size <{length}> is smaller than the required mapping size <{nbytes}>"
                )
            os.ftruncate(handle, nbytes)
    finally:
        os.close(handle)
    return np.memmap(filename, np.uint8, "r+" if shared else "c", 0, (nbytes,))


@from_file.register_kernel("cpu")
def _from_file_cpu(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = _dtype(dtype)
    count = 0 if size is None else int(size)
    nbytes = count * dtype.itemsize
    if count < 0:
        raise RuntimeError(f"unable to mmap {nbytes} bytes from file <{filename}>: Cannot allocate memory (12)")
    if count == 0:
        if not shared and not os.path.exists(filename):
            raise RuntimeError(f"unable to open file <{filename}> in read-only mode: No such file or directory (2)")
        return allocate((0,), dtype, to_device("cpu"))
    mapping = _map(filename, bool(shared), nbytes)
    # A plain ndarray over the mapping's bytes (views of a memmap subclass would not be plain arrays);
    # it keeps the mapping alive through its base.
    data = mapping.view(np.ndarray)
    storage = Storage(data, nbytes, to_device("cpu"))
    shape, stride = (count,), (1,)
    t = _new(Tensor, storage, shape, stride, 0, dtype, None)
    t._array = _array_view(storage, shape, stride, 0, dtype)
    return t


@public("empty_permuted")
def empty_permuted_function(
    size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
) -> Tensor:
    """An uninitialized dense tensor of ``size`` whose dims lie in memory in the order ``physical_layout``
    (outermost first)."""
    return _finish(empty_permuted(list(size), list(physical_layout), dtype=dtype, device=device), requires_grad, None)


@public("from_file")
def from_file_function(
    filename: str,
    shared: bool | None = None,
    size: int | None = 0,
    *,
    dtype: D.dtype | None = None,
    layout=None,
    device=None,
    pin_memory: bool | None = False,
    requires_grad: bool | None = False,
) -> Tensor:
    """A 1-D CPU tensor of ``size`` elements over the memory-mapped file ``filename`` (written through to
    the file when ``shared``)."""
    if pin_memory:
        raise RuntimeError("from_file: tensors backed by a memory-mapped file cannot be created in pinned memory")
    t = from_file(filename, shared, size, dtype=dtype, device=device)
    return _finish(t, bool(requires_grad), None)
