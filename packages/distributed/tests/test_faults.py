"""Misbehaving clients: each fault closes that one connection, and the server goes on serving.

These talk to the server through raw sockets, writing frames by hand from the spec in the
package README, so that they send what no TCPStore would.
"""

import logging
import socket
import struct
import subprocess
import sys
import threading
from datetime import timedelta

import pytest

import ember.distributed.tcp_store
from ember.distributed import DistStoreError, TCPStore

HEADER = struct.Struct("<IB")
HELLO, SET, GET = 1, 2, 3
OK, ERROR = 0, 2


def raw(master: TCPStore, hello: bool = True) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", master.port), timeout=10)
    if hello:
        sock.sendall(HEADER.pack(6, HELLO) + b"EMBS" + struct.pack("<H", 1))
        status, body = read_frame(sock)
        assert status == OK and struct.unpack("<HQ", body)[0] == 1
    return sock


def read_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def read_frame(sock: socket.socket) -> tuple[int, bytes]:
    length, status = HEADER.unpack(read_exact(sock, HEADER.size))
    return status, read_exact(sock, length)


def closed_by_server(sock: socket.socket) -> bool:
    """Read to the end: True once the server has closed the connection (a hang fails on timeout)."""
    with sock:
        try:
            while sock.recv(65536):
                pass
        except ConnectionResetError:
            pass
    return True


def field(data: bytes) -> bytes:
    return struct.pack("<I", len(data)) + data


def still_serves(master: TCPStore) -> None:
    """A fresh client and an old one both get correct answers."""
    client = TCPStore("127.0.0.1", master.port, timeout=timedelta(seconds=10))
    client.set("after", "fault")
    assert master.get("after") == b"fault"
    assert client.add("after-count", 1) == master.add("after-count", 0)
    master.delete_key("after")


@pytest.fixture
def bystander(master):
    """A well-behaved client connected before the fault, whose connection must survive it."""
    client = TCPStore("127.0.0.1", master.port, timeout=timedelta(seconds=10))
    client.set("bystander", "here")
    yield client
    assert client.get("bystander") == b"here"
    client.set("bystander", "still here")
    assert master.get("bystander") == b"still here"


@pytest.mark.parametrize(
    "garbage",
    [
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        bytes(range(256)) * 4,
        HEADER.pack(6, SET) + b"\x00" * 6,  # a frame, but not a HELLO
    ],
    ids=["http", "bytes", "no-hello"],
)
def test_garbage_before_the_handshake(master, bystander, garbage, caplog):
    sock = raw(master, hello=False)
    with caplog.at_level(logging.WARNING, logger="ember.distributed"):
        sock.sendall(garbage)
        assert closed_by_server(sock)
    assert any("closing the connection" in record.getMessage() for record in caplog.records)
    still_serves(master)


@pytest.mark.parametrize(
    "frame",
    [
        HEADER.pack(0, 250),  # unknown opcode
        HEADER.pack(8, SET) + field(b"k" * 100)[:8],  # a key longer than its frame
        HEADER.pack(4, SET) + struct.pack("<I", 0),  # a SET without its value
        HEADER.pack(9, GET) + field(b"k") + b"\x00" * 4,  # a GET with half its timeout
        HEADER.pack(10, 6) + struct.pack("<I", 10**9) + b"\x00" * 6,  # a WAIT claiming 10^9 keys
    ],
    ids=["opcode", "key-overrun", "no-value", "half-timeout", "count-lie"],
)
def test_malformed_frames_close_only_that_connection(master, bystander, frame):
    sock = raw(master)
    sock.sendall(frame)
    status, body = read_frame(sock)
    assert status == ERROR
    assert body[1:]  # says what was wrong
    assert closed_by_server(sock)
    still_serves(master)


def test_a_half_sent_frame_holds_up_no_one(master, bystander, eventually):
    sock = raw(master)
    sock.sendall(HEADER.pack(100, SET) + b"\x05\x00\x00\x00hal")
    still_serves(master)
    port = sock.getsockname()[1]
    connections = master._server.state.connections

    def served() -> bool:
        return any(conn.peer[1] == port for conn in list(connections))

    assert served()
    sock.close()
    eventually(lambda: not served(), "the server dropped the half-sent connection")
    still_serves(master)


def test_an_oversized_frame_is_refused_from_its_header(master, bystander):
    sock = raw(master)
    sock.sendall(HEADER.pack(2**31, SET) + b"\x00" * 64)
    status, body = read_frame(sock)
    assert status == ERROR and b"max_value_size" in body
    assert closed_by_server(sock)
    still_serves(master)


def test_an_oversized_value_from_a_client_is_a_value_error(master, bystander):
    small = TCPStore("127.0.0.1", 0, is_master=True, timeout=timedelta(seconds=10), max_value_size=4096)
    client = TCPStore("127.0.0.1", small.port, timeout=timedelta(seconds=10))
    with pytest.raises(ValueError, match="max_value_size"):
        client.set("k", b"x" * 5000)
    client.set("k", "fits")
    assert small.get("k") == b"fits"


def test_a_client_killed_while_waiting_is_cleaned_up(master, bystander, eventually):
    waiter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from datetime import timedelta; from ember.distributed import TCPStore; "
            "TCPStore('127.0.0.1', int(sys.argv[1]), timeout=timedelta(seconds=60)).get('never')",
            str(master.port),
        ]
    )
    try:
        state = master._server.state
        eventually(lambda: b"never" in state.waiting, "the killed client's get parked", seconds=30)
    finally:
        waiter.kill()
        waiter.wait(timeout=10)
    eventually(lambda: not state.waiting, "the dead client's waiter dropped")
    master.set("never", "now set")
    assert TCPStore("127.0.0.1", master.port, timeout=timedelta(seconds=10)).get("never") == b"now set"
    still_serves(master)


def test_a_protocol_version_mismatch_is_named_by_the_server(master, bystander):
    sock = raw(master, hello=False)
    sock.sendall(HEADER.pack(6, HELLO) + b"EMBS" + struct.pack("<H", 99))
    status, body = read_frame(sock)
    assert status == ERROR
    assert b"version 1" in body and b"version 99" in body
    assert closed_by_server(sock)
    still_serves(master)


def test_a_client_of_another_version_gets_a_clear_error(master, bystander, monkeypatch):
    monkeypatch.setattr(ember.distributed.tcp_store, "VERSION", 2)
    with pytest.raises(DistStoreError, match=r"protocol version mismatch.*version 1.*version 2"):
        TCPStore("127.0.0.1", master.port, timeout=timedelta(seconds=10))
    monkeypatch.undo()
    still_serves(master)


def test_a_server_that_is_not_a_store_is_a_clear_error(bystander):
    # Something listens and answers, but not with our protocol.
    impostor = socket.create_server(("127.0.0.1", 0))
    port = impostor.getsockname()[1]

    def answer():
        conn, _ = impostor.accept()
        conn.recv(64)
        conn.sendall(HEADER.pack(2, OK) + b"no")
        conn.close()

    thread = threading.Thread(target=answer)
    thread.start()
    with pytest.raises(DistStoreError, match="TCPStore"):
        TCPStore("127.0.0.1", port, timeout=timedelta(seconds=5))
    thread.join(timeout=10)
    impostor.close()
