"""``ember.save`` and ``ember.load``: PyTorch's checkpoint format, both ways.

A checkpoint is a zip folder holding ``data.pkl`` (the pickled object, tensors reduced to
``torch._utils._rebuild_tensor_v2`` over persistent storage ids), one ``data/<key>`` record of raw
bytes per storage, and the small records PyTorch writes (``byteorder``, ``version``,
``.format_version``, ``.storage_alignment``, ``.data/serialization_id``). PyTorch loads what Ember
saves and Ember loads what PyTorch saves.

``load`` is weights-only by default: the pickle goes through ``WeightsOnlyUnpickler``, which can
build tensors, containers and scalars and nothing else. ``weights_only=False`` (the caller must say
so) uses Python's unpickler, with PyTorch's names still mapped to Ember's objects.
"""

from __future__ import annotations

import io
import os
import pickle
import re
import secrets
import sys

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.devices import CPU, META, check_backend, device
from ember.core.storage import Storage
from ember.core.tensor import Tensor, _new

from .archive import ArchiveReader, ArchiveWriter, open_for_reading
from .pickler import CheckpointPickler
from .rebuild import GLOBALS, UNSUPPORTED_DTYPES, LoadedStorage, StorageType
from .safe_globals import ember_name, import_ember_equivalent
from .unpickler import WeightsOnlyUnpickler

FILE_FORMAT_VERSION = b"3\n"
_KEY = re.compile(r"[A-Za-z0-9_]{1,64}")


# -- saving ----------------------------------------------------------------------------------------


def _folder_name(path: str) -> str:
    # PyTorch names the archive's folder after the file, without its extension.
    base = os.path.basename(path)
    stem = base.rsplit(".", 1)[0] if "." in base else base
    return stem or "archive"


def _storage_bytes(storage: Storage, nbytes: int):
    if storage.device.type != "cpu":
        whole = _new(Tensor, storage, (storage.nbytes,), (1,), 0, D.uint8, None)
        storage = whole.to("cpu")._storage
    return storage.bytes()[:nbytes]


@public("save")
def save(
    obj,
    f,
    pickle_module=None,
    pickle_protocol: int = 2,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
) -> None:
    """Save ``obj`` to ``f`` (a path or a binary file object) in PyTorch's checkpoint format."""
    if pickle_module not in (None, pickle):
        raise NotImplementedError("ember.save writes PyTorch's pickle itself; a custom pickle_module is not supported")
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("ember.save writes only the zip format; the legacy format is not supported")
    if not isinstance(pickle_protocol, int) or not 2 <= pickle_protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError(f"ember.save: pickle_protocol must be 2 to {pickle.HIGHEST_PROTOCOL}, got {pickle_protocol!r}")
    data = io.BytesIO()
    pickler = CheckpointPickler(data, pickle_protocol)
    pickler.dump(obj)
    if isinstance(f, str | os.PathLike):
        path = os.fspath(f)
        with open(path, "wb") as stream:
            _write(stream, _folder_name(path), data.getbuffer(), pickler.storages, _disable_byteorder_record)
    elif hasattr(f, "write"):
        _write(f, "archive", data.getbuffer(), pickler.storages, _disable_byteorder_record)
    else:
        raise TypeError(f"ember.save: expected a path or a binary file object, got {type(f).__name__}")


def _write(stream, folder: str, pickled, storages: dict, no_byteorder: bool) -> None:
    writer = ArchiveWriter(stream, folder)
    writer.write_record("data.pkl", pickled)
    writer.write_record(".format_version", b"1")
    writer.write_record(".storage_alignment", b"64")
    if not no_byteorder:
        writer.write_record("byteorder", sys.byteorder.encode())
    for key, (storage, nbytes) in storages.items():
        writer.write_record(f"data/{key}", _storage_bytes(storage, nbytes))
    writer.write_record("version", FILE_FORMAT_VERSION)
    writer.write_record(".data/serialization_id", f"{secrets.randbelow(10**40):040d}".encode())
    writer.finish()


# -- loading ---------------------------------------------------------------------------------------


@public("load")
def load(
    f,
    map_location=None,
    pickle_module=None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **pickle_load_args,
):
    """Load a checkpoint saved by ``ember.save`` or ``torch.save`` (zip format).

    ``weights_only`` (default True) refuses any pickle that names a global outside the allow-list of
    tensors, containers and scalars; pass ``weights_only=False`` only for files you trust.
    """
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise RuntimeError(
            "Can not safely load weights when explicit pickle_module is specified; pass weights_only=False"
        )
    encoding = pickle_load_args.pop("encoding", "utf-8")
    if pickle_load_args:
        raise TypeError(f"ember.load got unexpected keyword arguments {sorted(pickle_load_args)}")
    if mmap and not isinstance(f, str | os.PathLike):
        raise ValueError("f must be a file path in order to use the mmap argument")
    _check_map_location(map_location)
    stream, path, owned = open_for_reading(f)
    try:
        magic = stream.read(4)
        stream.seek(0)
        if magic != b"PK\x03\x04":
            if magic[:1] == b"\x80" or magic[:1] == b"\x1f":
                raise RuntimeError(
                    "This checkpoint is in PyTorch's legacy (non-zip) serialization format, which Ember does not "
                    "load; re-save it with torch.save (PyTorch 1.6 or later) in the default zip format"
                )
            if not magic:
                raise RuntimeError("ember.load: the file is empty")
            raise RuntimeError("Invalid magic number; corrupt file? (not a PyTorch zip checkpoint)")
        reader = ArchiveReader(stream, path)
        return _load(reader, map_location, weights_only, bool(mmap), pickle_module or pickle, encoding)
    finally:
        if owned:
            stream.close()


def _check_map_location(map_location) -> None:
    if map_location is None or isinstance(map_location, str | device | dict) or callable(map_location):
        return
    raise TypeError(
        f"map_location must be None, a str, a device, a dict or a callable, got {type(map_location).__name__}"
    )


def _to_device(text, what: str) -> device:
    try:
        return text if isinstance(text, device) else device(str(text))
    except (RuntimeError, TypeError, ValueError) as error:
        raise RuntimeError(f"don't know how to restore data location {what} ({error})") from None


def _check_device(dev: device) -> None:
    if dev.type in ("cpu", "meta"):
        return
    try:
        check_backend(dev)
    except RuntimeError:
        raise RuntimeError(
            f"Attempting to deserialize object on a {dev.type.upper()} device but no Ember backend for "
            f"'{dev.type}' is available. If you are running on a CPU-only machine, please use ember.load with "
            "map_location='cpu' to map your storages to the CPU."
        ) from None


def _move(storage: Storage, dev: device) -> Storage:
    if dev.type == "cpu":
        return storage
    _check_device(dev)
    whole = _new(Tensor, storage, (storage.nbytes,), (1,), 0, D.uint8, storage.bytes())
    return whole.to(dev)._storage


def _load(reader: ArchiveReader, map_location, weights_only: bool, use_mmap: bool, pickle_module, encoding):
    if reader.has_record("constants.pkl"):
        raise RuntimeError("this archive is a TorchScript module (torch.jit.save), not a torch.save checkpoint")
    version = reader.get_record("version") if reader.has_record("version") else reader.get_record(".data/version")
    if not version.strip().isdigit() or not 1 <= int(version) <= 20:
        raise RuntimeError(f"PytorchStreamReader: unsupported file format version {version[:20]!r}")
    byteorder = reader.get_record("byteorder") if reader.has_record("byteorder") else b"little"
    if byteorder not in (b"little", b"big"):
        raise ValueError("Unknown endianness type: " + byteorder[:20].decode("ascii", "replace"))
    swap = byteorder.decode() != sys.byteorder
    pickled = reader.get_record("data.pkl")
    loaded: dict[str, LoadedStorage] = {}

    def persistent_load(pid):
        if type(pid) is not tuple or len(pid) != 5:
            raise pickle.UnpicklingError(f"bad persistent id {pid!r}: expected ('storage', type, key, location, numel)")
        typename, storage_type, key, location, numel = pid
        if isinstance(typename, bytes):
            typename = typename.decode("ascii", "replace")
        if isinstance(location, bytes):
            location = location.decode("ascii", "replace")
        if typename != "storage" or not isinstance(storage_type, StorageType):
            raise pickle.UnpicklingError(f"bad persistent id {pid!r}: not a storage of a known type")
        if not isinstance(key, str) or not _KEY.fullmatch(key) or not isinstance(location, str):
            raise pickle.UnpicklingError(f"bad persistent id {pid!r}: bad storage key or location")
        if type(numel) is not int or numel < 0:
            raise pickle.UnpicklingError(f"bad persistent id {pid!r}: the element count must be an int >= 0")
        dtype = storage_type.dtype
        found = loaded.get(key)
        if found is not None:
            if found.dtype is not dtype or found.numel != numel:
                raise RuntimeError(f"storage {key!r} is described twice with different types or sizes")
            return found
        name = f"data/{key}"
        nbytes = numel * dtype.itemsize
        size = reader.record_size(name)
        if size != nbytes:
            raise RuntimeError(
                f"storage record {name!r} holds {size} bytes but the pickle describes {numel} elements of "
                f"{D.SCALAR_TYPE_NAMES[dtype]} ({nbytes} bytes)"
            )
        storage = _restore(reader, name, nbytes, dtype, location, map_location, use_mmap, swap)
        found = loaded[key] = LoadedStorage(storage, dtype, numel)
        return found

    if weights_only:
        try:
            return WeightsOnlyUnpickler(pickled, persistent_load, encoding).load()
        except pickle.UnpicklingError as error:
            raise pickle.UnpicklingError(f"Weights only load failed. {error}") from None
        except (TypeError, ValueError, IndexError, KeyError, AttributeError, OverflowError, UnicodeError) as error:
            raise pickle.UnpicklingError(
                f"Weights only load failed: the pickle is malformed ({type(error).__name__}: {error})"
            ) from None
    unpickler = _full_unpickler(pickle_module)(io.BytesIO(pickled), encoding=encoding)
    unpickler.persistent_load = persistent_load
    return unpickler.load()


def _restore(reader, name, nbytes, dtype, location, map_location, use_mmap, swap) -> Storage:
    if callable(map_location) and not isinstance(map_location, dict):
        target = None
    elif map_location is None:
        target = _to_device(location, location)
    elif isinstance(map_location, dict):
        target = _to_device(map_location.get(location, location), location)
    else:
        target = _to_device(map_location, location)
    if target is not None and target.type == "meta":
        return Storage(None, nbytes, META)
    if target is not None:
        _check_device(target)
    array = reader.read_storage(name, nbytes, use_mmap)
    if swap and dtype.itemsize > 1:
        array.view(dtype.np).byteswap(inplace=True)
    storage = Storage(array, nbytes, CPU)
    if target is None:
        result = map_location(storage, location)
        if result is None:
            target = _to_device(location, location)
        elif isinstance(result, Storage):
            return result
        else:
            raise TypeError(f"map_location returned {type(result).__name__}; expected a storage or None")
    return _move(storage, target)


def _full_unpickler(pickle_module):
    class FullUnpickler(pickle_module.Unpickler):
        def find_class(self, module: str, name: str):
            full = f"{module}.{name}"
            found = GLOBALS.get(full)
            if found is not None:
                return found
            if full in UNSUPPORTED_DTYPES:
                raise pickle.UnpicklingError(f"the checkpoint uses the dtype {full}, which Ember does not have")
            # PyTorch's classes (torch.nn.modules.linear.Linear) are Ember's at the same path under ember.
            found = import_ember_equivalent(module, name)
            if found is not None:
                return found
            if module == "torch" or module.startswith("torch."):
                raise pickle.UnpicklingError(
                    f"the checkpoint names {full}, which Ember does not have (looked for "
                    f"{ember_name(full)}); save the state_dict instead of the whole object"
                )
            return super().find_class(module, name)

    return FullUnpickler
