"""``TCPStore``: the rendezvous store of a distributed job, a client of a server run by the master.

The process created with ``is_master=True`` starts the server (``_server.py``, uvloop in a daemon
thread) and then, like every other process, talks to it through one blocking TCP socket. The
client is plain synchronous code: each call sends one request frame and reads its reply. Writes
are acknowledged too (PyTorch's are not): when ``set`` returns, every client sees the value, which
an out-of-band handshake between ranks (a collective, a file) can rely on. A lock makes a store
safe to share between threads, one request at a time, as PyTorch's is.

Timeouts. A blocking read (``get``, ``wait``, ``multi_get``) sends its timeout to the server,
which parks the request and answers when the keys appear or the time is up; the client never
polls. The socket's own receive timeout (``SO_RCVTIMEO``, so the kernel enforces it without an
extra ``poll`` per call) is that timeout plus a grace period, the backstop for a server that stops
answering; after it fires the connection is in an unknown state, so it is dropped and the next
call reconnects.

Connecting retries with exponential backoff and jitter until the store's timeout, because workers
routinely start before the master's server listens. ``wait_for_workers`` with a ``world_size``
makes every client ``JOIN`` (a counter among the keys, so ``num_keys`` counts it as PyTorch's
does) and makes the master wait, on a condition the server thread signals, until ``world_size``
clients have joined.
"""

from __future__ import annotations

import logging
import random
import socket
import struct
import threading
import time
import weakref
from collections.abc import Sequence
from datetime import timedelta

from ember.distributed import _server
from ember.distributed._protocol import (
    HEADER,
    HELLO_REPLY,
    HELLO_REQUEST,
    I64,
    MAGIC,
    MAX_TIMEOUT_MS,
    U32,
    U64,
    VERSION,
    ErrorKind,
    Op,
    Reader,
    Status,
    field,
    fields,
)
from ember.distributed.store import (
    DEFAULT_TIMEOUT,
    INT64_MAX,
    INT64_MIN,
    DistNetworkError,
    DistStoreError,
    Store,
    check_amount,
    check_key,
    check_keys,
    check_timeout,
    check_values,
    format_ms,
    plus,
    seconds,
    timeout_error,
    to_bytes,
)

__all__ = ["DEFAULT_MAX_VALUE_SIZE", "TCPStore"]

log = logging.getLogger(__name__)

DEFAULT_MAX_VALUE_SIZE = 64 * 1024 * 1024
# How much longer than a blocking call's own timeout the socket waits for the server's answer.
REPLY_GRACE = timedelta(seconds=5)
RECV_SIZE = 65536
_OK, _TIMEOUT = int(Status.OK), int(Status.TIMEOUT)
FIRST_BACKOFF_S = 0.01
MAX_BACKOFF_S = 1.0
_TIMEVAL = struct.Struct("@ll")

# multi_tenant servers by port, alive while some store holds them
_tenants: dict[int, weakref.ref[_server.StoreServer]] = {}
_tenants_lock = threading.Lock()


class TCPStore(Store):
    """A key-value store served over TCP by the master process (``torch.distributed.TCPStore``).

    >>> from datetime import timedelta
    >>> master = TCPStore("127.0.0.1", 0, world_size=1, is_master=True, timeout=timedelta(seconds=5))
    >>> worker = TCPStore("127.0.0.1", master.port, timeout=timedelta(seconds=5))
    >>> worker.set("rank0/address", "10.0.0.1:2345")
    >>> master.get("rank0/address")
    b'10.0.0.1:2345'
    >>> master.add("arrived", 1), worker.add("arrived", 1)
    (1, 2)

    ``port=0`` on the master asks the OS for a free port; ``port`` tells which. The server always
    runs on libuv (through uvloop); ``use_libuv`` is accepted for compatibility. ``max_value_size``
    (not in PyTorch) bounds one request's keys and values together; the master's server enforces
    it and tells every client at connect time.
    """

    def __init__(
        self,
        host_name: str,
        port: int,
        world_size: int | None = None,
        is_master: bool = False,
        timeout: timedelta = DEFAULT_TIMEOUT,
        wait_for_workers: bool = True,
        multi_tenant: bool = False,
        master_listen_fd: int | None = None,
        use_libuv: bool = True,
        *,
        max_value_size: int = DEFAULT_MAX_VALUE_SIZE,
    ) -> None:
        super().__init__(timeout)
        if not isinstance(host_name, str):
            raise TypeError(f"host_name must be a str, got {type(host_name).__name__}: {host_name!r}")
        if not isinstance(port, int) or not 0 <= port <= 65535:
            raise TypeError(f"port must be an int in [0, 65535], got {port!r}")
        if world_size is not None:
            if not isinstance(world_size, int):
                raise TypeError(f"world_size must be an int or None, got {type(world_size).__name__}")
            if world_size <= 0:
                raise ValueError(f"TCPStore world_size must be positive, got {world_size}")
        if not isinstance(max_value_size, int) or max_value_size <= 0:
            raise ValueError(f"max_value_size must be a positive int, got {max_value_size!r}")
        self._host = host_name
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._buffer = bytearray()  # the part of a reply that one recv did not complete
        self._recv_space = bytearray(RECV_SIZE)
        self._recv_view = memoryview(self._recv_space)
        self._recv_timeout: timedelta | None = None
        self.set_timeout(timeout)
        self._server: _server.StoreServer | None = None
        if is_master:
            self._server = _start_server(port, multi_tenant, master_listen_fd, max_value_size)
            _server.warn_if_backlog_small(world_size)
            port = self._server.port
        self._port = port
        self._max_value_size = max_value_size
        self._connect(retry=True)
        if world_size is not None and wait_for_workers:
            self._call(Op.JOIN, b"")
            if self._server is not None:
                self._server.wait_for_joins(world_size, self.timeout)

    def __del__(self) -> None:
        # Close the connection with the store; a master's server stops once no store holds it.
        sock = getattr(self, "_sock", None)
        if sock is not None:
            sock.close()

    def __repr__(self) -> str:
        role = "master" if self._server is not None else "client"
        return f"TCPStore(host={self._host!r}, port={self._port}, {role})"

    def set_timeout(self, timeout: timedelta) -> None:
        super().set_timeout(timeout)
        # Precomputed because every request needs them.
        self._timeout_ms = _ms(self.timeout)
        self._reply_within = plus(self.timeout, REPLY_GRACE)

    @property
    def host(self) -> str:
        return self._host

    @property
    def port(self) -> int:
        return self._port

    @property
    def libuvBackend(self) -> bool:  # PyTorch spells it so
        return True

    # -- the Store methods -------------------------------------------------------------------

    # The hot methods check their arguments' types inline: the helpers run only for the odd cases.

    def set(self, key: str, value: str | bytes) -> None:
        name = (key if type(key) is str else check_key(key)).encode()
        data = value if type(value) is bytes else to_bytes(value)
        self._call(Op.SET, U32.pack(len(name)) + name + U32.pack(len(data)) + data, name=key)

    def get(self, key: str) -> bytes:
        name = (key if type(key) is str else check_key(key)).encode()
        return self._call(Op.GET, U32.pack(len(name)) + name + U64.pack(self._timeout_ms), self._timeout, [key])

    def add(self, key: str, amount: int) -> int:
        name = (key if type(key) is str else check_key(key)).encode()
        delta = amount if type(amount) is int and INT64_MIN <= amount <= INT64_MAX else check_amount(amount)
        return I64.unpack(self._call(Op.ADD, U32.pack(len(name)) + name + I64.pack(delta), name=key))[0]

    def compare_set(self, key: str, expected_value: str | bytes, desired_value: str | bytes) -> bytes:
        name = check_key(key)
        body = field(name.encode()) + field(to_bytes(expected_value)) + field(to_bytes(desired_value))
        return self._call(Op.COMPARE_SET, body, name=name)

    def wait(self, keys: Sequence[str], timeout: timedelta | None = None) -> None:
        names = check_keys(keys)
        if timeout is None:
            self._call(Op.WAIT, _keys(names) + U64.pack(self._timeout_ms), self._timeout, names)
        else:
            wait_for = check_timeout(timeout)
            self._call(Op.WAIT, _keys(names) + U64.pack(_ms(wait_for)), wait_for, names)

    def check(self, keys: Sequence[str]) -> bool:
        names = check_keys(keys)
        return self._call(Op.CHECK, _keys(names)) == b"\x01"

    def delete_key(self, key: str) -> bool:
        name = check_key(key)
        return self._call(Op.DELETE_KEY, field(name.encode()), name=name) == b"\x01"

    def num_keys(self) -> int:
        return I64.unpack(self._call(Op.NUM_KEYS, b""))[0]

    def multi_get(self, keys: Sequence[str]) -> list[bytes]:
        names = check_keys(keys)
        body = _keys(names) + U64.pack(self._timeout_ms)
        return Reader(self._call(Op.MULTI_GET, body, self._timeout, names)).list()

    def multi_set(self, keys: Sequence[str], values: Sequence[str | bytes]) -> None:
        names = check_keys(keys)
        data = check_values(names, values)
        body = _keys(names) + fields(data)
        self._call(Op.MULTI_SET, body, name=", ".join(names))

    def append(self, key: str, value: str | bytes) -> None:
        name = check_key(key)
        self._call(Op.APPEND, field(name.encode()) + field(to_bytes(value)), name=name)

    # -- the connection ----------------------------------------------------------------------

    def _call(
        self,
        op: Op,
        body: bytes,
        wait_for: timedelta | None = None,
        keys: list[str] | None = None,
        name: str = "",
    ) -> bytes:
        """One request and its reply. ``wait_for`` is set for the requests the server may park."""
        if len(body) > self._max_value_size:
            raise self._too_large(body, op, name)
        request = HEADER.pack(len(body), op) + body
        with self._lock:
            sock = self._sock or self._reconnect()
            if wait_for is None or wait_for is self._timeout:
                answer_within = self._reply_within
            else:
                answer_within = plus(wait_for, REPLY_GRACE)
            if answer_within is not self._recv_timeout and answer_within != self._recv_timeout:
                self._set_recv_timeout(sock, answer_within)
            try:
                sock.sendall(request)
                status, reply = self._read_frame(sock)
            except (TimeoutError, BlockingIOError) as error:
                # The reply may still come: this connection's replies would be out of step.
                self._drop()
                raise DistStoreError(
                    f"the TCPStore at {self._address()} did not answer {op.name} {name or keys or ''} "
                    f"within {format_ms(answer_within)}"
                ) from error
            except OSError as error:
                raise self._broken(error) from error
        if status == _OK:
            return reply
        if status == _TIMEOUT:
            assert wait_for is not None
            missing_keys = [key.decode() for key in Reader(reply).list()]
            raise timeout_error(missing_keys, wait_for)
        raise _server_error(reply, self._address())

    def _read_frame(self, sock: socket.socket) -> tuple[int, bytes]:
        buffer = self._buffer
        if not buffer:
            # The common case: the whole reply arrives in one read into the preallocated space.
            size = sock.recv_into(self._recv_space)
            if size >= HEADER.size:
                length, status = HEADER.unpack_from(self._recv_space)
                if size == HEADER.size + length:
                    return status, bytes(self._recv_view[HEADER.size : size])
            if not size:
                raise ConnectionResetError("the server closed the connection")
            buffer += self._recv_view[:size]
        while True:
            if len(buffer) >= HEADER.size:
                length, status = HEADER.unpack_from(buffer)
                end = HEADER.size + length
                if len(buffer) >= end:
                    reply = bytes(buffer[HEADER.size : end])
                    del buffer[:end]
                    return status, reply
                want = end - len(buffer)
            else:
                want = HEADER.size
            chunk = sock.recv(max(want, RECV_SIZE))
            if not chunk:
                raise ConnectionResetError("the server closed the connection")
            buffer += chunk

    def _too_large(self, body: bytes, op: Op, name: str) -> ValueError:
        return ValueError(
            f"{op.name.lower()} of key {name!r}: the request is {len(body)} bytes, over the store's "
            f"max_value_size of {self._max_value_size} bytes"
        )

    def _reconnect(self) -> socket.socket:
        # One attempt, no retries: a server that went away should fail fast.
        self._connect(retry=False)
        assert self._sock is not None
        return self._sock

    def _connect(self, retry: bool) -> None:
        deadline = time.monotonic() + seconds(self.timeout)
        backoff = FIRST_BACKOFF_S
        while True:
            try:
                sock = socket.create_connection(
                    (self._host, self._port), timeout=max(deadline - time.monotonic(), 0.001)
                )
                break
            except OSError as error:
                left = deadline - time.monotonic()
                if not retry or left <= 0:
                    raise DistNetworkError(
                        f"could not connect to the TCPStore at {self._address()} within "
                        f"{format_ms(self.timeout)}: {error}"
                    ) from error
                log.debug("connecting to %s: %s; retrying", self._address(), error)
                time.sleep(min(backoff * random.uniform(0.5, 1.5), left))
                backoff = min(backoff * 2, MAX_BACKOFF_S)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(None)
        self._sock = sock
        self._buffer.clear()
        self._recv_timeout = None
        self._hello(sock)

    def _hello(self, sock: socket.socket) -> None:
        self._set_recv_timeout(sock, self._reply_within)
        try:
            sock.sendall(HEADER.pack(HELLO_REQUEST.size, Op.HELLO) + HELLO_REQUEST.pack(MAGIC, VERSION))
            status, reply = self._read_frame(sock)
        except OSError as error:
            raise self._broken(error) from error
        if status != Status.OK:
            self._drop()
            raise _server_error(reply, self._address())
        try:
            _version, self._max_value_size = HELLO_REPLY.unpack(reply)
        except struct.error as error:
            self._drop()
            raise DistStoreError(f"{self._address()} did not answer like a TCPStore server") from error

    def _set_recv_timeout(self, sock: socket.socket, timeout: timedelta) -> None:
        micros = min(round(timeout / timedelta(microseconds=1)), 2**31 * 10**6)
        value = _TIMEVAL.pack(*divmod(micros, 10**6))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)
        self._recv_timeout = timeout

    def _broken(self, error: OSError) -> DistNetworkError:
        self._drop()
        return DistNetworkError(f"the connection to the TCPStore at {self._address()} failed: {error}")

    def _drop(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _address(self) -> str:
        return f"{self._host}:{self._port}"


def _start_server(port: int, multi_tenant: bool, listen_fd: int | None, max_value_size: int) -> _server.StoreServer:
    if not multi_tenant:
        return _server.StoreServer(_server.listen(port, listen_fd), max_value_size)
    with _tenants_lock:
        existing = _tenants.get(port)
        server = existing() if existing is not None and port != 0 else None
        if server is None:
            server = _server.StoreServer(_server.listen(port, listen_fd), max_value_size)
            _tenants[server.port] = weakref.ref(server)
        return server


def _server_error(reply: bytes, address: str) -> Exception:
    kind, message = (reply[0], reply[1:].decode(errors="replace")) if reply else (ErrorKind.STORE, "")
    if kind == ErrorKind.VALUE:
        return ValueError(message)
    return DistStoreError(f"the TCPStore at {address} refused the request: {message}")


def _keys(names: list[str]) -> bytes:
    return fields([name.encode() for name in names])


def _ms(timeout: timedelta) -> int:
    return min(round(timeout / timedelta(milliseconds=1)), MAX_TIMEOUT_MS)
