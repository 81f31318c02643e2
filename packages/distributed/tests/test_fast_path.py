"""The server's C++ fast path against its Python handlers: same answers, same order, every hand-off.

The C++ runner answers SET, GET, ADD, WAIT and CHECK when they need only the key dict and hands
every other frame to the Python handlers. These tests send batches that cross between the two in
one write, and counter texts that only Python's ``int()`` reads, and check each reply.
"""

import socket
import struct
from datetime import timedelta

import pytest

from ember.distributed import TCPStore

HEADER = struct.Struct("<IB")
HELLO, SET, GET, ADD, COMPARE_SET, WAIT, CHECK, DELETE_KEY, NUM_KEYS = 1, 2, 3, 4, 5, 6, 7, 8, 9
OK, TIMEOUT = 0, 1
U64, I64 = struct.Struct("<Q"), struct.Struct("<q")


def raw(master: TCPStore) -> socket.socket:
    """A connection past the handshake, on which the test writes frames by hand."""
    sock = socket.create_connection(("127.0.0.1", master.port), timeout=10)
    sock.sendall(frame(HELLO, b"EMBS" + struct.pack("<H", 1)))
    assert read_frame(sock)[0] == OK
    return sock


def read_frame(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while len(data) < HEADER.size or len(data) < HEADER.size + HEADER.unpack_from(data)[0]:
        want = HEADER.size if len(data) < HEADER.size else HEADER.size + HEADER.unpack_from(data)[0]
        chunk = sock.recv(want - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data[4], data[HEADER.size :]


def field(data: bytes) -> bytes:
    return struct.pack("<I", len(data)) + data


def frame(op: int, body: bytes = b"") -> bytes:
    return HEADER.pack(len(body), op) + body


def keys(*names: bytes) -> bytes:
    return struct.pack("<I", len(names)) + b"".join(field(name) for name in names)


def test_a_batch_that_crosses_between_cpp_and_python_is_answered_in_order(master):
    sock = raw(master)
    batch = [
        frame(SET, field(b"a") + field(b"1")),  # C++
        frame(COMPARE_SET, field(b"a") + field(b"1") + field(b"2")),  # Python
        frame(GET, field(b"a") + U64.pack(1000)),  # C++ again, sees Python's write
        frame(ADD, field(b"n") + I64.pack(5)),  # C++
        frame(NUM_KEYS),  # Python
        frame(CHECK, keys(b"a", b"n")),  # C++
        frame(DELETE_KEY, field(b"a")),  # Python
        frame(CHECK, keys(b"a")),  # C++, after the delete
        frame(GET, field(b"a") + U64.pack(50)),  # C++ declines (missing), Python times out
        frame(WAIT, keys(b"n") + U64.pack(1000)),  # C++
    ]
    sock.sendall(b"".join(batch))
    replies = [read_frame(sock) for _ in batch]
    assert replies == [
        (OK, b""),
        (OK, b"2"),
        (OK, b"2"),
        (OK, I64.pack(5)),
        (OK, I64.pack(2)),
        (OK, b"\x01"),
        (OK, b"\x01"),
        (OK, b"\x00"),
        (TIMEOUT, keys(b"a")),
        (OK, b""),
    ]
    sock.close()


def test_a_parked_get_holds_back_the_rest_of_its_batch(master, connect):
    sock = raw(master)
    sock.sendall(frame(GET, field(b"late") + U64.pack(10_000)) + frame(ADD, field(b"after") + I64.pack(1)))
    connect().set("late", "here")
    assert read_frame(sock) == (OK, b"here")
    assert read_frame(sock) == (OK, I64.pack(1))
    assert master.add("after", 0) == 1
    sock.close()


@pytest.mark.parametrize(
    "text",
    [b"7", b"-7", b"007", b" 7", b"7\n", b"+7", b"1_000", b"999999999999999999", b"-1000000000000000000"],
    ids=["plain", "negative", "zeros", "space", "newline", "plus", "underscore", "18-digits", "19-digits"],
)
def test_add_reads_a_counter_as_python_int_does(master, text):
    master.set("counter", text)
    assert master.add("counter", 3) == int(text) + 3
    assert master.get("counter") == str(int(text) + 3).encode()


def test_add_wraps_around_int64_on_either_path(master):
    master.set("top", str(2**63 - 1))
    assert master.add("top", 1) == -(2**63)
    assert master.add("top", -1) == 2**63 - 1


def test_add_on_text_is_a_value_error_and_the_connection_goes_on(master):
    master.set("word", "seven")
    with pytest.raises(ValueError, match="word"):
        master.add("word", 1)
    assert master.add("fine", 2) == 2


def test_a_write_to_a_waited_key_wakes_the_waiter(master, connect):
    sock = raw(master)
    sock.sendall(frame(WAIT, keys(b"x", b"y") + U64.pack(10_000)))
    writer = connect()
    writer.set("x", "1")
    assert writer.add("y", 1) == 1  # a write C++ hands to Python: it has a waiter
    assert read_frame(sock) == (OK, b"")
    sock.close()


def test_a_key_list_with_a_non_str_is_a_type_error_sent_nowhere(master):
    client = TCPStore("127.0.0.1", master.port, timeout=timedelta(seconds=10))
    with pytest.raises(TypeError, match="str"):
        client.wait(["fine", 3])
    with pytest.raises(TypeError, match="str"):
        client.check(["fine", b"bytes"])
    client.set("fine", "yes")
    client.wait(("fine",))
    assert client.check(["fine"])
