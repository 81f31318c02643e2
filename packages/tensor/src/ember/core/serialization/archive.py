"""PyTorch's checkpoint container: an uncompressed zip whose records all live in one folder.

Writing follows the layout of PyTorch's miniz-based writer byte for byte where readers depend on it:
every record is stored (not compressed); its local header carries an ``FB`` extra field of ``Z``
padding so that the record's data starts at a multiple of 64 bytes (so storages can be memory-mapped
as they are); a data descriptor follows each non-empty record; zip64 fields appear where sizes or
offsets pass 4 GiB; the archive ends with the zip64 end records and the classic one.

Reading takes the central directory from ``zipfile`` and then reads each storage straight from its
offset into the tensor's own buffer (one copy), or maps it (``mmap=True``). Every name, size and
offset is checked against the archive before anything is allocated: a name that leaves the folder,
a record that runs past the end of the file or a size that disagrees with the pickle is an error.
"""

from __future__ import annotations

import io
import mmap
import os
import struct
import zipfile
import zlib

import numpy as np

ALIGNMENT = 64
# Sizes and offsets from this value on need zip64 fields (a module constant so tests can lower it).
ZIP64_LIMIT = 0xFFFFFFFF
_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_FLAGS = 0x0808  # data descriptor follows, UTF-8 names


class ArchiveWriter:
    """Writes records ``<folder>/<name>`` sequentially to a binary stream."""

    def __init__(self, stream, folder: str) -> None:
        self._stream = stream
        self._folder = folder
        self._pos = 0
        self._entries: list[tuple[bytes, int, int, int]] = []  # name, crc, size, header offset

    def _write(self, data) -> None:
        view = memoryview(data).cast("B")
        written = self._stream.write(view)
        if written is not None and written != len(view):
            raise RuntimeError(f"ember.save: short write ({written} of {len(view)} bytes)")
        self._pos += len(view)

    def write_record(self, name: str, data) -> None:
        full = f"{self._folder}/{name}".encode()
        view = memoryview(data).cast("B")
        size, offset = len(view), self._pos
        big_size, big_offset = size >= ZIP64_LIMIT, offset >= ZIP64_LIMIT
        zip64 = b""
        if big_size or big_offset:
            fields = (struct.pack("<QQ", size, size) if big_size else b"") + (
                struct.pack("<Q", offset) if big_offset else b""
            )
            zip64 = struct.pack("<HH", 1, len(fields)) + fields
        start = offset + _LOCAL.size + len(full) + len(zip64) + 4
        pad = -start % ALIGNMENT
        extra = zip64 + b"FB" + struct.pack("<H", pad) + b"Z" * pad
        version = 45 if zip64 else 0
        sizes = 0xFFFFFFFF if big_size else 0
        self._write(_LOCAL.pack(0x04034B50, version, _FLAGS, 0, 0, 0, 0, sizes, sizes, len(full), len(extra)))
        self._write(full + extra)
        crc = zlib.crc32(view)
        if size:
            self._write(view)
            if big_size or big_offset:
                self._write(struct.pack("<IIQQ", 0x08074B50, crc, size, size))
            else:
                self._write(struct.pack("<IIII", 0x08074B50, crc, size, size))
        self._entries.append((full, crc, size, offset))

    def finish(self) -> None:
        directory_start = self._pos
        for name, crc, size, offset in self._entries:
            big_size, big_offset = size >= ZIP64_LIMIT, offset >= ZIP64_LIMIT
            fields = (struct.pack("<QQ", size, size) if big_size else b"") + (
                struct.pack("<Q", offset) if big_offset else b""
            )
            extra = struct.pack("<HH", 1, len(fields)) + fields if fields else b""
            size32 = 0xFFFFFFFF if big_size else size
            offset32 = 0xFFFFFFFF if big_offset else offset
            version = 45 if extra else 0
            header = _CENTRAL.pack(
                0x02014B50,
                version,
                version,
                _FLAGS,
                0,
                0,
                0,
                crc,
                size32,
                size32,
                len(name),
                len(extra),
                0,
                0,
                0,
                0,
                offset32,
            )
            self._write(header + name + extra)
        directory_size = self._pos - directory_start
        count = len(self._entries)
        end64 = self._pos
        self._write(
            struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count, directory_size, directory_start)
        )
        self._write(struct.pack("<IIQI", 0x07064B50, 0, end64, 1))
        self._write(
            struct.pack(
                "<IHHHHIIH",
                0x06054B50,
                0,
                0,
                min(count, 0xFFFF),
                min(count, 0xFFFF),
                min(directory_size, 0xFFFFFFFF),
                min(directory_start, 0xFFFFFFFF),
                0,
            )
        )


def _fail(message: str) -> RuntimeError:
    return RuntimeError(f"PytorchStreamReader failed {message}")


class ArchiveReader:
    """The records of one checkpoint archive, checked before use."""

    def __init__(self, stream, path: str | None = None) -> None:
        self._stream = stream
        self._path = path
        stream.seek(0, os.SEEK_END)
        self.size = stream.tell()
        stream.seek(0)
        try:
            self._zip = zipfile.ZipFile(stream)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, NotImplementedError) as error:
            raise _fail(f"reading zip archive: failed finding central directory ({error})") from None
        infos = self._zip.infolist()
        if not infos:
            raise RuntimeError("PytorchStreamReader: archive does not contain any files")
        first = infos[0].filename
        if "/" not in first:
            raise RuntimeError(f"file in archive is not in a subdirectory: {first}")
        self.folder = first.split("/", 1)[0]
        self._records: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            name = info.filename
            parts = name.split("/")
            if (
                parts[0] != self.folder
                or len(parts) < 2
                or any(p in ("", ".", "..") for p in parts[1:])
                or "\\" in name
                or "\x00" in name
            ):
                raise RuntimeError(f"archive entry {name!r} is not a record inside the folder {self.folder!r}")
            record = name[len(self.folder) + 1 :]
            if record in self._records:
                raise RuntimeError(f"archive holds the record {name!r} twice")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise RuntimeError(f"archive record {name!r} uses an unsupported compression method")
            if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
                raise RuntimeError(f"archive record {name!r}: stored sizes disagree")
            if info.compress_type == zipfile.ZIP_DEFLATED and info.file_size > 1100 * info.compress_size + 1024:
                raise RuntimeError(f"archive record {name!r} claims an impossible size ({info.file_size} bytes)")
            if info.header_offset < 0 or info.header_offset + 30 + info.compress_size > self.size:
                raise RuntimeError(f"archive record {name!r} runs past the end of the file (truncated archive?)")
            self._records[record] = info
        self._map = None

    def has_record(self, name: str) -> bool:
        return name in self._records

    def _info(self, name: str) -> zipfile.ZipInfo:
        try:
            return self._records[name]
        except KeyError:
            raise _fail(f"locating file {name}: file not found") from None

    def record_size(self, name: str) -> int:
        return self._info(name).file_size

    def get_record(self, name: str) -> bytes:
        info = self._info(name)
        try:
            return self._zip.read(info)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError) as error:
            raise _fail(f"reading file {name}: {error}") from None

    def _data_offset(self, info: zipfile.ZipInfo) -> int:
        self._stream.seek(info.header_offset)
        header = self._stream.read(_LOCAL.size)
        if len(header) != _LOCAL.size or header[:4] != b"PK\x03\x04":
            raise _fail(f"reading file {info.filename}: bad local header")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        offset = info.header_offset + _LOCAL.size + name_len + extra_len
        if offset + info.compress_size > self.size:
            raise _fail(f"reading file {info.filename}: the record runs past the end of the file")
        return offset

    def read_storage(self, name: str, nbytes: int, use_mmap: bool) -> np.ndarray:
        """The record's bytes as a fresh (or mapped, copy-on-write) writable uint8 array."""
        info = self._info(name)
        if info.file_size != nbytes:
            raise RuntimeError(
                f"storage record {name!r} holds {info.file_size} bytes but the pickle describes {nbytes} bytes"
            )
        if info.compress_type != zipfile.ZIP_STORED:
            return np.frombuffer(bytearray(self.get_record(name)), np.uint8)
        offset = self._data_offset(info)
        if use_mmap:
            if self._map is None:
                with open(self._path, "rb") as f:
                    self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) if self.size else b""
            return np.frombuffer(self._map, np.uint8, nbytes, offset) if nbytes else np.empty(0, np.uint8)
        out = np.empty(nbytes, np.uint8)
        self._stream.seek(offset)
        view, done = memoryview(out), 0
        while done < nbytes:
            got = self._stream.readinto(view[done:])
            if not got:
                raise _fail(f"reading file {name}: unexpected end of file")
            done += got
        return out


def open_for_reading(f):
    """``(stream, path, owned)`` for a path or a binary file-like object (read into memory if not seekable)."""
    if isinstance(f, str | os.PathLike):
        path = os.fspath(f)
        return open(path, "rb"), path, True
    if not hasattr(f, "read"):
        raise TypeError(f"ember.load: expected a path or a binary file-like object, got {type(f).__name__}")
    seekable = getattr(f, "seekable", None)
    if seekable is None or not seekable() or not hasattr(f, "readinto"):
        return io.BytesIO(f.read()), None, False
    start = f.tell()
    if start:
        # The archive's offsets count from its own start: read it from where the caller left the stream.
        return io.BytesIO(f.read()), None, False
    return f, None, False
