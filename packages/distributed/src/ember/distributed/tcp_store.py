"""``TCPStore``: the rendezvous store of a distributed job, a client of a server run by the master.

The process created with ``is_master=True`` starts the server (``_server.py``, uvloop in a daemon
thread) and then, like every other process, talks to it through one blocking TCP socket. The
client is synchronous: each call sends one request frame and reads its reply. The socket belongs
to this class (connecting, closing); the exchange on it is a ``Channel`` (``_channel.cpp``), which
encodes the common request bodies, sends, and reads the whole reply with the GIL released once,
so that a call costs the process's other threads two GIL handoffs and little Python. ``set`` is
one-way, as PyTorch's is: it returns once its request is sent, and the channel reads the server's
acknowledgement ahead of the next call's reply (a failed set is reported by that call). Requests on
one connection are applied in order, so a client always reads its own writes. A lock makes a store
safe to share between threads, one request at a time, as PyTorch's is.

Timeouts. A blocking read (``get``, ``wait``, ``multi_get``) sends its timeout to the server,
which parks the request and answers when the keys appear or the time is up; the client never
polls. The socket's own receive timeout (``SO_RCVTIMEO``, so the kernel enforces it without an
extra ``poll`` per call; the channel sets it only when it changes) is that timeout plus a grace
period, the backstop for a server that stops answering; after it fires the connection is in an
unknown state, so it is dropped and the next call reconnects.

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
from typing import cast

from ember.distributed import _server
from ember.distributed._channel import BAD_KEY, TOO_LARGE, Channel
from ember.distributed._protocol import (
    HELLO_REPLY,
    HELLO_REQUEST,
    I64,
    MAGIC,
    MAX_TIMEOUT_MS,
    VERSION,
    ErrorKind,
    Op,
    Reader,
    Status,
    field,
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
_OK, _TIMEOUT = int(Status.OK), int(Status.TIMEOUT)
_SET, _GET, _ADD, _WAIT = int(Op.SET), int(Op.GET), int(Op.ADD), int(Op.WAIT)
_MAX_WAIT_MS = timedelta.max // timedelta(milliseconds=1)
FIRST_BACKOFF_S = 0.01
MAX_BACKOFF_S = 1.0

# multi_tenant servers by port, alive while some store holds them
_tenants: dict[int, weakref.ref[_server.StoreServer]] = {}
_tenants_lock = threading.Lock()


class TCPStore(Store):
    """A key-value store served over TCP by the master process (``torch.distributed.TCPStore``).

        >>> from datetime import timedelta
    from typing import cast
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
        self._channel: Channel | None = None  # the round trips, on self._sock's descriptor
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
            self._call(Op.JOIN, None, None, self._reply_within_us)
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
        self._reply_within_us = _us(plus(self.timeout, REPLY_GRACE))

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

    # The hot methods check their arguments' types inline (the helpers run only for the odd
    # cases) and hand the key and value to the channel, which encodes the request in C++.

    def set(self, key: str, value: str | bytes) -> None:
        if type(key) is not str:
            check_key(key)
        self._post(_SET, key, value if type(value) is bytes else to_bytes(value))

    def get(self, key: str) -> bytes:
        if type(key) is not str:
            check_key(key)
        return self._call(_GET, key, self._timeout_ms, self._reply_within_us)

    def add(self, key: str, amount: int) -> int:
        if type(key) is not str:
            check_key(key)
        delta = amount if type(amount) is int and INT64_MIN <= amount <= INT64_MAX else check_amount(amount)
        return I64.unpack(self._call(_ADD, key, delta, self._reply_within_us))[0]

    def compare_set(self, key: str, expected_value: str | bytes, desired_value: str | bytes) -> bytes:
        name = check_key(key)
        body = field(name.encode()) + field(to_bytes(expected_value)) + field(to_bytes(desired_value))
        return self._call_encoded(Op.COMPARE_SET, body, name)

    def wait(self, keys: Sequence[str], timeout: timedelta | None = None) -> None:
        names = keys if type(keys) is list else check_keys(keys)
        if timeout is None:
            self._call(_WAIT, names, self._timeout_ms, self._reply_within_us)
        else:
            wait_for = check_timeout(timeout)
            self._call(_WAIT, names, _ms(wait_for), _us(plus(wait_for, REPLY_GRACE)))

    def check(self, keys: Sequence[str]) -> bool:
        return self._call(Op.CHECK, check_keys(keys), None, self._reply_within_us) == b"\x01"

    def delete_key(self, key: str) -> bool:
        return self._call(Op.DELETE_KEY, check_key(key), None, self._reply_within_us) == b"\x01"

    def num_keys(self) -> int:
        return I64.unpack(self._call(Op.NUM_KEYS, None, None, self._reply_within_us))[0]

    def multi_get(self, keys: Sequence[str]) -> list[bytes]:
        names = check_keys(keys)
        return Reader(self._call(Op.MULTI_GET, names, self._timeout_ms, self._reply_within_us)).list()

    def multi_set(self, keys: Sequence[str], values: Sequence[str | bytes]) -> None:
        names = check_keys(keys)
        self._call(Op.MULTI_SET, names, check_values(names, values), self._reply_within_us)

    def append(self, key: str, value: str | bytes) -> None:
        self._call(Op.APPEND, check_key(key), to_bytes(value), self._reply_within_us)

    # -- the connection ----------------------------------------------------------------------

    def _call(self, op: int, keys: str | list[str] | None, value: bytes | int | list[bytes] | None, within_us: int):
        """One request and its reply: ``keys`` and ``value`` are the parts of its body, in order.

        An int ``value`` is the timeout of a request the server may park (GET, WAIT, MULTI_GET),
        or ADD's amount; ``within_us`` bounds the wait for the reply.
        """
        with self._lock:
            channel = self._channel or self._reconnect()
            try:
                status, reply = channel.request(op, keys, value, within_us)
            except OSError as error:
                raise self._failed(error, op, keys, within_us) from error
            except BaseException:
                self._drop()  # interrupted (KeyboardInterrupt) mid-exchange: its reply would come out of step
                raise
        if status == _OK:
            return reply
        raise self._refused(status, reply, op, keys, value)

    def _post(self, op: int, key: str, value: bytes) -> None:
        """Send a request whose reply is read later, ahead of the next call's (see ``Channel.post``)."""
        with self._lock:
            channel = self._channel or self._reconnect()
            try:
                status, reply = channel.post(op, key, value, self._reply_within_us)
            except OSError as error:
                raise self._failed(error, op, key, self._reply_within_us) from error
            except BaseException:
                self._drop()
                raise
        if status != _OK:
            raise self._refused(status, reply, op, key, value)

    def _call_encoded(self, op: int, body: bytes, name: str) -> bytes:
        """One request whose body the caller encoded."""
        with self._lock:
            channel = self._channel or self._reconnect()
            try:
                status, reply = channel.call(op, body, self._reply_within_us)
            except OSError as error:
                raise self._failed(error, op, name, self._reply_within_us) from error
            except BaseException:
                self._drop()
                raise
        if status == _OK:
            return reply
        raise self._refused(status, reply, op, name, None)

    def _failed(self, error: OSError, op: int, keys: str | list[str] | None, within_us: int) -> DistStoreError:
        if not isinstance(error, (TimeoutError, BlockingIOError)):
            return self._broken(error)
        # The reply may still come: this connection's replies would be out of step.
        self._drop()
        return DistStoreError(
            f"the TCPStore at {self._address()} did not answer {Op(op).name} {keys or ''} "
            f"within {round(within_us / 1000)} ms"
        )

    def _refused(self, status: int, reply: object, op: int, keys: object, value: object) -> Exception:
        if status == _TIMEOUT:
            # Only requests the server parks time out, and their int value is the timeout.
            assert isinstance(value, int)
            missing_keys = [key.decode() for key in Reader(cast(bytes, reply)).list()]
            return timeout_error(missing_keys, timedelta(milliseconds=min(value, _MAX_WAIT_MS)))
        if status == TOO_LARGE:
            name = keys if isinstance(keys, str) else ", ".join(cast(list, keys or []))
            return ValueError(
                f"{Op(op).name.lower()} of key {name!r}: the request is {reply} bytes, over the store's "
                f"max_value_size of {self._max_value_size} bytes"
            )
        if status == BAD_KEY:
            check_keys(keys)  # raises the TypeError naming the key
        return _server_error(cast(bytes, reply), self._address())

    def _reconnect(self) -> Channel:
        # One attempt, no retries: a server that went away should fail fast.
        self._connect(retry=False)
        assert self._channel is not None
        return self._channel

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
        channel = Channel(sock.fileno())
        self._channel = channel
        self._hello(channel)

    def _hello(self, channel: Channel) -> None:
        try:
            status, reply = channel.call(Op.HELLO, HELLO_REQUEST.pack(MAGIC, VERSION), self._reply_within_us)
        except OSError as error:
            raise self._broken(error) from error
        if status != Status.OK:
            self._drop()
            raise _server_error(reply, self._address())
        try:
            _version, self._max_value_size = HELLO_REPLY.unpack(reply)
            channel.max_size = self._max_value_size
        except struct.error as error:
            self._drop()
            raise DistStoreError(f"{self._address()} did not answer like a TCPStore server") from error

    def _broken(self, error: OSError) -> DistNetworkError:
        self._drop()
        return DistNetworkError(f"the connection to the TCPStore at {self._address()} failed: {error}")

    def _drop(self) -> None:
        self._channel = None
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


def _us(timeout: timedelta) -> int:
    """A reply timeout in microseconds, as SO_RCVTIMEO takes it (capped where a timeval ends)."""
    return min(round(timeout / timedelta(microseconds=1)), 2**31 * 10**6)


def _ms(timeout: timedelta) -> int:
    return min(round(timeout / timedelta(milliseconds=1)), MAX_TIMEOUT_MS)
