"""The TCPStore wire protocol, version 1: framing, opcodes, statuses and field encoding.

Both directions send frames: a 5-byte header ``<u32 body length><u8 code>`` (little-endian) and
the body. In a request the code is an opcode; in a reply it is a status. Body fields are
``bytes`` (``<u32 length>`` then the bytes), ``u32``, ``u64`` and ``i64``, in the order the
package README lists per opcode. Length-prefixed frames let the server refuse an oversized
request from its header alone and parse a request only once it has all of it.

A connection starts with ``HELLO`` carrying a magic number and the client's protocol version; the
server answers with its version and its size limit, or with an error naming both versions. The
magic number makes a stranger (a PyTorch client, a port scanner) fail the handshake at once.

Requests are answered in order, one reply each, writes included: a reply means the server has
applied the request, so what one client wrote is visible to all once its call returns. The
README in this package is the spec; bump ``VERSION`` on any change to it.
"""

from __future__ import annotations

import struct
from enum import IntEnum

VERSION = 1
MAGIC = b"EMBS"
HEADER = struct.Struct("<IB")
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
I64 = struct.Struct("<q")
HELLO_REQUEST = struct.Struct("<4sH")
HELLO_REPLY = struct.Struct("<HQ")
MAX_TIMEOUT_MS = 2**63 - 1
# The join counter of wait_for_workers lives among the keys, as PyTorch's does, so num_keys counts
# it; 0xFF never occurs in UTF-8, so no str key can name it.
JOIN_KEY = b"\xffjoined"


class Op(IntEnum):
    HELLO = 1
    SET = 2
    GET = 3
    ADD = 4
    COMPARE_SET = 5
    WAIT = 6
    CHECK = 7
    DELETE_KEY = 8
    NUM_KEYS = 9
    MULTI_GET = 10
    MULTI_SET = 11
    APPEND = 12
    JOIN = 13


class Status(IntEnum):
    OK = 0
    TIMEOUT = 1
    ERROR = 2


class ErrorKind(IntEnum):
    """Which exception the client raises for an ERROR reply."""

    STORE = 1  # DistStoreError: handshake or framing problems
    VALUE = 2  # ValueError: the request was well formed but the data did not fit (add on text)


class ProtocolError(Exception):
    """A frame that does not follow the spec; the server closes that connection."""


def frame(code: int, body: bytes = b"") -> bytes:
    return HEADER.pack(len(body), code) + body


def field(data: bytes) -> bytes:
    return U32.pack(len(data)) + data


def fields(items: list[bytes]) -> bytes:
    return U32.pack(len(items)) + b"".join(U32.pack(len(item)) + item for item in items)


def error_body(kind: ErrorKind, message: str) -> bytes:
    return bytes([kind]) + message.encode()


class Reader:
    """Reads the fields of one frame body, ``data[pos:end]``, in order, without copying the body.

    Running past the end, or a count that cannot fit, is a ProtocolError.
    """

    __slots__ = ("data", "end_pos", "pos")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end_pos = len(data) if end is None else end

    def bytes(self) -> bytes:
        pos = self.pos + 4
        if pos > self.end_pos:
            raise ProtocolError("a frame ends in the middle of a field")
        (size,) = U32.unpack_from(self.data, self.pos)
        end = pos + size
        if end > self.end_pos:
            raise ProtocolError(f"a field claims {size} bytes but the frame has {self.end_pos - pos} left")
        self.pos = end
        return self.data[pos:end]

    def list(self) -> list[bytes]:
        (count,) = self._unpack(U32)
        # Each field takes at least its 4-byte length: a count beyond that is a lie, not a request.
        if count * U32.size > self.end_pos - self.pos:
            raise ProtocolError(f"a list claims {count} items but the frame is too short for them")
        return [self.bytes() for _ in range(count)]

    def u64(self) -> int:
        return self._unpack(U64)[0]

    def i64(self) -> int:
        return self._unpack(I64)[0]

    def end(self) -> None:
        if self.pos != self.end_pos:
            raise ProtocolError(f"{self.end_pos - self.pos} unexpected bytes at the end of a frame")

    def _unpack(self, layout: struct.Struct) -> tuple[int, ...]:
        if self.pos + layout.size > self.end_pos:
            raise ProtocolError("a frame ends in the middle of a field")
        values = layout.unpack_from(self.data, self.pos)
        self.pos += layout.size
        return values
