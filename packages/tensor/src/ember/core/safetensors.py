"""``ember.core.safetensors``: the safetensors format, with ``safetensors.torch``'s functions.

The format is an 8-byte little-endian header length, a JSON header (dtype, shape and byte range of
each tensor, plus optional ``__metadata__`` of strings) and the raw little-endian bytes. Saving goes
through ``safetensors.numpy``'s writer, which takes ml_dtypes' ``bfloat16`` arrays as they are.
Loading uses the package's parser (its NumPy table has no ``BF16``, so dtypes are mapped here, with
ml_dtypes' ``bfloat16``); ``load_file`` maps the file and views each tensor's byte range, which the
package has validated, as PyTorch's loader does. The checks before saving are ``safetensors.torch``'s: a dict of tensors, contiguous,
no two sharing bytes.
"""

from __future__ import annotations

import json
import mmap
import os
import struct

import numpy as np
import safetensors
import safetensors.numpy

from ember.core import dtypes as D
from ember.core.devices import check_backend
from ember.core.devices import device as _device
from ember.core.tensor import Tensor, from_array

__all__ = ["load", "load_file", "save", "save_file"]

# The format's dtype names; the ones Ember lacks (U16, U32, U64, F8_*) are refused by name.
_DTYPES = {
    "F64": D.float64,
    "F32": D.float32,
    "F16": D.float16,
    "BF16": D.bfloat16,
    "I64": D.int64,
    "I32": D.int32,
    "I16": D.int16,
    "I8": D.int8,
    "U8": D.uint8,
    "BOOL": D.bool_,
    "C64": D.complex64,
}


def _dtype(code: str, name: str) -> D.dtype:
    try:
        return _DTYPES[code]
    except KeyError:
        raise TypeError(f"tensor {name!r} has the safetensors dtype {code}, which Ember does not support") from None


def _arrays(tensors) -> dict[str, np.ndarray]:
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, ember.Tensor] but received {type(tensors)}")
    for name, t in tensors.items():
        if not isinstance(t, Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected ember.Tensor but received {type(t)}")
    _check_shared(tensors)
    out = {}
    for name, t in tensors.items():
        if not t.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. Call `.contiguous()` "
                "on it first, or save only the full tensors and slice them again after loading."
            )
        if t.dtype is D.complex128:
            raise ValueError(f"tensor `{name}`: the safetensors format has no complex128 dtype")
        if t.device.type == "meta":
            raise ValueError(f"tensor `{name}` is on the meta device and has no data to save")
        if t.device.type != "cpu":
            t = t.to("cpu")
        out[name] = t._array
    return out


def _check_shared(tensors: dict) -> None:
    """Refuse tensors whose bytes overlap (they would be written twice and load as strangers)."""
    by_storage: dict[int, list] = {}
    for name, t in tensors.items():
        if t.device.type == "meta" or t.numel() == 0:
            continue
        start = t.storage_offset() * t.dtype.itemsize
        end = start + (1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))) * t.dtype.itemsize
        by_storage.setdefault(id(t.untyped_storage()), []).append((start, end, name))
    failing = []
    for areas in by_storage.values():
        areas.sort()
        group, stop = [areas[0][2]], areas[0][1]
        for start, end, name in areas[1:]:
            if start < stop:
                group.append(name)
            else:
                if len(group) > 1:
                    failing.append(set(group))
                group = [name]
            stop = max(stop, end)
        if len(group) > 1:
            failing.append(set(group))
    if failing:
        raise RuntimeError(
            f"Some tensors share memory, this will lead to duplicate memory on disk and potential differences when "
            f"loading them again: {failing}. Save clones of them, or save only one and rebuild the others."
        )


def save(tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors bytes of ``tensors``."""
    return safetensors.numpy.save(_arrays(tensors), metadata=metadata)


def save_file(tensors: dict[str, Tensor], filename: str | os.PathLike, metadata: dict[str, str] | None = None) -> None:
    """Write ``tensors`` to ``filename`` in the safetensors format."""
    safetensors.numpy.save_file(_arrays(tensors), filename, metadata=metadata)


def _tensor(array: np.ndarray, dtype: D.dtype, shape) -> Tensor:
    return from_array(array.view(dtype.np).reshape(shape), dtype)


def load(data: bytes) -> dict[str, Tensor]:
    """The tensors of safetensors ``data`` (bytes), on the CPU."""
    out = {}
    for name, info in safetensors.deserialize(data):
        dtype = _dtype(info["dtype"], name)
        raw = info["data"]
        out[name] = _tensor(
            np.frombuffer(raw if isinstance(raw, bytearray) else bytearray(raw), np.uint8), dtype, info["shape"]
        )
    return out


def load_file(filename: str | os.PathLike, device: str | _device = "cpu") -> dict[str, Tensor]:
    """The tensors of the safetensors file ``filename``, on ``device``.

    The file is mapped copy-on-write, as PyTorch's loader maps it: tensors view its pages (no copy, and
    writing to a tensor never writes the file).
    """
    target = _device(device) if not isinstance(device, int) else _device("cuda", device)
    if target.type not in ("cpu", "meta"):
        check_backend(target)
    with safetensors.safe_open(filename, framework="np") as f:  # the package validates the header
        codes = {name: f.get_slice(name).get_dtype() for name in f.keys()}  # noqa: SIM118  (not a mapping)
    dtypes = {name: _dtype(code, name) for name, code in codes.items()}
    start, table = _header(filename)
    with open(filename, "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    out = {}
    for name, dtype in dtypes.items():
        begin, end = table[name]["data_offsets"]
        offset = start + begin
        if end == begin:
            array = np.empty(0, np.uint8)
        else:
            array = np.frombuffer(mapped, np.uint8, end - begin, offset)
            if offset % dtype.itemsize:
                array = array.copy()  # NumPy kernels want aligned elements
        out[name] = _tensor(array, dtype, table[name]["shape"])
    if target.type != "cpu":
        out = {name: t.to(target) for name, t in out.items()}
    return out


def _header(filename) -> tuple[int, dict]:
    with open(filename, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        return 8 + length, json.loads(f.read(length))
