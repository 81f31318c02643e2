"""The TCPStore server: a uvloop (libuv) event loop in a daemon thread of the master process.

One thread runs the loop; every key, waiter and connection is touched only from it, so nothing
needs a lock except the join count, which the master's own thread waits on. Each connection is an
``asyncio.Protocol`` whose ``data_received`` is a C++ ``Runner`` (``_fastpath.cpp``): uvloop calls
it with the bytes read, it answers the common requests (SET, ADD, GET, WAIT, CHECK that need only
the key dict) and writes their replies, and it hands the rest, from the first frame it does not
take, to ``received``: these Python handlers, which run every complete frame (straight from the
bytes read, when nothing was left over from before) and write all the replies in one
``transport.write``, so a client that pipelines costs one write per read, not one per request.
The Python side keeps the runner disabled while it buffers bytes or parks a request, so replies
stay in request order.

Blocking requests (``GET``, ``WAIT`` and ``MULTI_GET`` on keys not yet set) become waiters: the
server answers them when a write sets their last missing key, or when their timer (a libuv timer,
``call_later``) fires. While a connection has a waiter, its later frames stay in its buffer, which
keeps replies in request order; a connection that closes drops its waiter. Nothing polls.

A malformed frame (bad magic, unknown opcode, a field that runs past its frame, a frame over the
size limit) gets an ERROR reply and closes that connection only; every other connection goes on.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import weakref
from collections.abc import Callable
from datetime import timedelta
from typing import cast

import uvloop

from ember.distributed import _fastpath as fastpath
from ember.distributed._protocol import (
    HEADER,
    HELLO_REPLY,
    HELLO_REQUEST,
    I64,
    JOIN_KEY,
    MAGIC,
    VERSION,
    ErrorKind,
    Op,
    ProtocolError,
    Reader,
    Status,
    error_body,
    fields,
    frame,
)
from ember.distributed.store import INT64_MAX, INT64_MIN, DistNetworkError, DistStoreError, seconds, wrap_int64

log = logging.getLogger(__name__)

BACKLOG = 65535  # the kernel caps it at net.core.somaxconn
# While a waiter holds a connection, buffer this much of its later frames before pausing reads.
PAUSED_BUFFER = 1 << 20
OK = Status.OK
READY = frame(OK, b"\x01")
NOT_READY = frame(OK, b"\x00")
EMPTY_OK = frame(OK)


class _Waiter:
    """A blocking request parked until its keys are all set or its timer fires."""

    __slots__ = ("conn", "keys", "missing", "op", "timer")

    def __init__(self, conn: _Connection, op: Op, keys: list[bytes], missing: set[bytes]) -> None:
        self.conn = conn
        self.op = op
        self.keys = keys
        self.missing = missing
        self.timer: asyncio.TimerHandle | None = None


class _State:
    """The keys, the waiters and the join count; owned by the loop thread."""

    def __init__(self, max_value_size: int) -> None:
        self.data: dict[bytes, bytes] = {}
        # key -> its waiters, a dict used as an ordered set so that dropping one is O(1)
        self.waiting: dict[bytes, dict[_Waiter, None]] = {}
        self.connections: set[_Connection] = set()
        self.max_value_size = max_value_size
        self.joined = 0
        self.joined_changed = threading.Condition()

    def write(self, key: bytes, value: bytes) -> None:
        self.data[key] = value
        waiters = self.waiting.pop(key, None)
        if waiters:
            for waiter in waiters:
                waiter.missing.discard(key)
                if not waiter.missing:
                    self.finish(waiter)

    def park(self, waiter: _Waiter, timeout_s: float) -> None:
        for key in waiter.missing:
            self.waiting.setdefault(key, {})[waiter] = None
        waiter.timer = asyncio.get_running_loop().call_later(timeout_s, self.expire, waiter)
        waiter.conn.waiter = waiter

    def unpark(self, waiter: _Waiter) -> None:
        for key in waiter.missing:
            others = self.waiting.get(key)
            if others is not None:
                others.pop(waiter, None)
                if not others:
                    del self.waiting[key]
        if waiter.timer is not None:
            waiter.timer.cancel()
        waiter.conn.waiter = None

    def finish(self, waiter: _Waiter) -> None:
        # A key set earlier may have been deleted since: wait for it again rather than answer wrong.
        again = {key for key in waiter.keys if key not in self.data}
        if again:
            waiter.missing = again
            for key in again:
                self.waiting.setdefault(key, {})[waiter] = None
            return
        self.unpark(waiter)
        waiter.conn.send(self.ready_reply(waiter.op, waiter.keys))
        waiter.conn.resume()

    def expire(self, waiter: _Waiter) -> None:
        waiter.timer = None
        missing = [key for key in waiter.keys if key in waiter.missing]
        self.unpark(waiter)
        waiter.conn.send(frame(Status.TIMEOUT, fields(missing)))
        waiter.conn.resume()

    def ready_reply(self, op: Op, keys: list[bytes]) -> bytes:
        if op == Op.GET:
            return frame(OK, self.data[keys[0]])
        if op == Op.MULTI_GET:
            return frame(OK, fields([self.data[key] for key in keys]))
        return EMPTY_OK

    def join(self) -> int:
        count = self.joined + 1
        self.write(JOIN_KEY, str(count).encode())
        with self.joined_changed:
            self.joined = count
            self.joined_changed.notify_all()
        return count


class _Connection(asyncio.Protocol):
    """One client connection: buffers bytes, runs complete frames, writes replies in order."""

    def __init__(self, state: _State) -> None:
        self.state = state
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.waiter: _Waiter | None = None
        self.greeted = False
        self.paused = False
        self.peer: object = None
        self.runner = fastpath.Runner(state.data, state.waiting, state.max_value_size, self.received)
        # uvloop calls the C++ side directly; it hands back to received() what it does not take.
        self.data_received = self.runner.feed  # type: ignore[method-assign]

    def refresh(self) -> None:
        """Let the C++ side take reads again once nothing is buffered or parked."""
        self.runner.enabled = self.greeted and self.waiter is None and not self.buffer and self.transport is not None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's does not subclass it
        self.peer = transport.get_extra_info("peername")
        self.state.connections.add(self)
        self.runner.write = self.transport.write

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None:
            log.debug("client %s left while waiting on %d key(s)", self.peer, len(self.waiter.keys))
            self.state.unpark(self.waiter)
        self.state.connections.discard(self)
        self.transport = None
        self.buffer.clear()
        # The runner refers back to this protocol and its transport: break the cycle.
        self.runner.enabled = False
        self.runner.write = None
        self.runner.fallback = None

    def received(self, data: bytes, pos: int) -> None:
        """The bytes read from ``pos`` on that the C++ side did not answer."""
        _Connection.data_received(self, data[pos:] if pos else data)
        self.refresh()

    def data_received(self, data: bytes) -> None:
        if self.buffer or self.waiter is not None:
            self.buffer += data
            if self.waiter is None:
                self.drain()
            elif len(self.buffer) > PAUSED_BUFFER and not self.paused and self.transport is not None:
                self.paused = True
                self.transport.pause_reading()
            return
        # The common case: nothing buffered, so run the frames straight from the bytes read.
        pos = self.run_frames(data)
        if pos < len(data) and self.transport is not None:
            self.buffer += data[pos:]

    def resume(self) -> None:
        """The parked request was answered: run the frames that arrived meanwhile."""
        if self.transport is None:
            return
        if self.paused:
            self.paused = False
            self.transport.resume_reading()
        if self.buffer:
            # Later, not now: running them here would nest one connection's work inside another's.
            asyncio.get_running_loop().call_soon(self.drain)
        else:
            self.refresh()

    def drain(self) -> None:
        buffer = self.buffer
        if len(buffer) < HEADER.size or self.waiter is not None or self.transport is None:
            return
        length, op = HEADER.unpack_from(buffer)
        if len(buffer) < HEADER.size + length and self.header_problem(length, op) is None:
            return  # a large frame still arriving: copy nothing until it is whole
        pos = self.run_frames(bytes(buffer))
        del buffer[:pos]
        self.refresh()

    def send(self, data: bytes) -> None:
        if self.transport is not None:
            self.transport.write(data)

    def header_problem(self, length: int, op: int) -> str | None:
        # Judged before waiting for the body the header announces: garbage often announces a lot.
        if not self.greeted:
            if op != Op.HELLO or length != HELLO_REQUEST.size:
                return f"expected a HELLO frame first, got code {op} with {length} bytes (is this a TCPStore client?)"
        elif op not in HANDLERS:
            return f"unknown opcode {op}"
        if length > self.state.max_value_size:
            return (
                f"a request of {length} bytes exceeds the server's max_value_size of {self.state.max_value_size} bytes"
            )
        return None

    def run_frames(self, data: bytes) -> int:
        """Run every complete frame in ``data``; answer them in one write; return the bytes used."""
        size = len(data)
        pos = 0
        replies: list[bytes] = []
        state = self.state
        max_size = state.max_value_size
        header_size = HEADER.size
        try:
            while self.waiter is None:
                if self.greeted:
                    # The common frames in C++; it stops at the first one these handlers must run.
                    pos, answered = self.runner.run(data, pos)
                    if answered:
                        replies.append(answered)
                if size - pos < header_size:
                    break
                length, op = HEADER.unpack_from(data, pos)
                handler = HANDLERS.get(op) if self.greeted else _Connection.hello
                if handler is None or length > max_size or not self.greeted:
                    problem = self.header_problem(length, op)
                    if problem is not None:
                        raise ProtocolError(problem)
                end = pos + header_size + length
                if end > size:
                    break
                reply = handler(self, Reader(data, pos + header_size, end))
                pos = end
                if reply is not None:
                    replies.append(reply)
        except (ProtocolError, ValueError) as error:
            replies.append(frame(Status.ERROR, error_body(ErrorKind.STORE, str(error))))
            log.warning("closing the connection of %s: %s", self.peer, error)
            self.flush(replies)
            if self.transport is not None:
                self.transport.close()
            return size
        if replies and self.transport is not None:
            self.transport.write(replies[0] if len(replies) == 1 else b"".join(replies))
        return pos

    def flush(self, replies: list[bytes]) -> None:
        if replies and self.transport is not None:
            self.transport.write(b"".join(replies) if len(replies) > 1 else replies[0])

    def hello(self, r: Reader) -> bytes:
        magic, version = HELLO_REQUEST.unpack_from(r.data, r.pos)
        if magic != MAGIC:
            raise ProtocolError(f"bad magic {magic!r} in HELLO (is this a TCPStore client of another kind?)")
        if version != VERSION:
            raise ProtocolError(
                f"protocol version mismatch: the server speaks version {VERSION}, the client version {version}"
            )
        self.greeted = True
        return frame(Status.OK, HELLO_REPLY.pack(VERSION, self.state.max_value_size))

    # -- one handler per opcode ----------------------------------------------------------------

    def op_set(self, r: Reader) -> bytes:
        key, value = r.bytes(), r.bytes()
        r.end()
        self.state.write(key, value)
        return EMPTY_OK

    def op_get(self, r: Reader) -> bytes | None:
        key, timeout_ms = r.bytes(), r.u64()
        r.end()
        value = self.state.data.get(key)
        if value is not None:
            return frame(OK, value)
        return self.block(Op.GET, [key], timeout_ms)

    def op_add(self, r: Reader) -> bytes:
        key, amount = r.bytes(), r.i64()
        r.end()
        current = self.state.data.get(key)
        if current is not None:
            try:
                amount += int(current)
            except ValueError:
                message = (
                    f"add() on key {key.decode(errors='replace')!r}, whose value {current[:64]!r} is not an integer"
                )
                return frame(Status.ERROR, error_body(ErrorKind.VALUE, message))
            if not INT64_MIN <= amount <= INT64_MAX:
                amount = wrap_int64(amount)
        self.state.write(key, str(amount).encode())
        return frame(OK, I64.pack(amount))

    def op_compare_set(self, r: Reader) -> bytes:
        key, expected, desired = r.bytes(), r.bytes(), r.bytes()
        r.end()
        current = self.state.data.get(key)
        # PyTorch's rule: a missing key counts as matching only an empty expected value, and a
        # failed compare on a missing key answers with the expected value.
        if current is None and expected:
            return frame(OK, expected)
        if current is None or current == expected:
            self.state.write(key, desired)
            return frame(OK, desired)
        return frame(OK, current)

    def op_wait(self, r: Reader) -> bytes | None:
        keys, timeout_ms = r.list(), r.u64()
        r.end()
        if all(key in self.state.data for key in keys):
            return EMPTY_OK
        return self.block(Op.WAIT, keys, timeout_ms)

    def op_check(self, r: Reader) -> bytes:
        keys = r.list()
        r.end()
        return READY if all(key in self.state.data for key in keys) else NOT_READY

    def op_delete_key(self, r: Reader) -> bytes:
        key = r.bytes()
        r.end()
        return READY if self.state.data.pop(key, None) is not None else NOT_READY

    def op_num_keys(self, r: Reader) -> bytes:
        r.end()
        return frame(OK, I64.pack(len(self.state.data)))

    def op_multi_get(self, r: Reader) -> bytes | None:
        keys, timeout_ms = r.list(), r.u64()
        r.end()
        data = self.state.data
        if all(key in data for key in keys):
            return frame(OK, fields([data[key] for key in keys]))
        return self.block(Op.MULTI_GET, keys, timeout_ms)

    def op_multi_set(self, r: Reader) -> bytes:
        keys, values = r.list(), r.list()
        r.end()
        if len(keys) != len(values):
            raise ProtocolError(f"MULTI_SET with {len(keys)} keys and {len(values)} values")
        for key, value in zip(keys, values, strict=True):
            self.state.write(key, value)
        return EMPTY_OK

    def op_append(self, r: Reader) -> bytes:
        key, value = r.bytes(), r.bytes()
        r.end()
        self.state.write(key, self.state.data.get(key, b"") + value)
        return EMPTY_OK

    def op_join(self, r: Reader) -> bytes:
        r.end()
        return frame(OK, I64.pack(self.state.join()))

    def block(self, op: Op, keys: list[bytes], timeout_ms: int) -> bytes | None:
        data = self.state.data
        missing = {key for key in keys if key not in data}
        if timeout_ms == 0:
            return frame(Status.TIMEOUT, fields([key for key in keys if key in missing]))
        self.state.park(_Waiter(self, op, keys, missing), timeout_ms / 1000)
        return None


HANDLERS: dict[int, Callable[[_Connection, Reader], bytes | None]] = {
    Op.SET: _Connection.op_set,
    Op.GET: _Connection.op_get,
    Op.ADD: _Connection.op_add,
    Op.COMPARE_SET: _Connection.op_compare_set,
    Op.WAIT: _Connection.op_wait,
    Op.CHECK: _Connection.op_check,
    Op.DELETE_KEY: _Connection.op_delete_key,
    Op.NUM_KEYS: _Connection.op_num_keys,
    Op.MULTI_GET: _Connection.op_multi_get,
    Op.MULTI_SET: _Connection.op_multi_set,
    Op.APPEND: _Connection.op_append,
    Op.JOIN: _Connection.op_join,
}


class _LoopThread:
    """The daemon thread that runs the loop; holds no reference to the StoreServer facade."""

    def __init__(self, sock: socket.socket, state: _State) -> None:
        self.sock = sock
        self.state = state
        self.loop: asyncio.AbstractEventLoop | None = None
        self.started = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self.run, name="ember-tcpstore-server", daemon=True)

    def run(self) -> None:
        loop = uvloop.new_event_loop()
        self.loop = loop
        try:
            server = loop.run_until_complete(
                loop.create_server(lambda: _Connection(self.state), sock=self.sock, backlog=BACKLOG)
            )
        except BaseException as error:  # reported to the thread that started us
            self.error = error
            self.started.set()
            loop.close()
            return
        self.started.set()
        try:
            loop.run_forever()
        finally:
            server.close()
            for conn in list(self.state.connections):
                if conn.transport is not None:
                    conn.transport.abort()
            loop.run_until_complete(asyncio.sleep(0))  # let the aborts run their callbacks
            loop.close()

    def stop(self) -> None:
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(loop.stop)
        except RuntimeError:  # closed between the check and the call
            return
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout=5)


class StoreServer:
    """A running server. It stops when this object is collected: the stores that use it hold it."""

    def __init__(self, sock: socket.socket, max_value_size: int) -> None:
        self.port: int = sock.getsockname()[1]
        self.state = _State(max_value_size)
        self._loop = _LoopThread(sock, self.state)
        self._loop.thread.start()
        self._loop.started.wait()
        if self._loop.error is not None:
            sock.close()
            raise DistNetworkError(f"the TCPStore server could not start on port {self.port}: {self._loop.error}")
        self._finalizer = weakref.finalize(self, self._loop.stop)
        log.debug("TCPStore server listening on port %d", self.port)

    def stop(self) -> None:
        self._finalizer()

    def wait_for_joins(self, count: int, timeout: timedelta) -> None:
        """Block the calling thread until ``count`` clients joined (wait_for_workers)."""
        condition = self.state.joined_changed
        with condition:
            done = condition.wait_for(lambda: self.state.joined >= count, seconds(timeout))
            if not done:
                raise DistStoreError(
                    f"timed out after {timeout.total_seconds():g} s waiting for workers to join the store "
                    f"on port {self.port}: {self.state.joined} of {count} joined"
                )


def listen(host_port: int, listen_fd: int | None) -> socket.socket:
    """The server's listening socket, bound in the caller's thread so that errors surface there."""
    if listen_fd is not None:
        sock = socket.socket(fileno=listen_fd)
        if host_port not in (0, sock.getsockname()[1]):
            raise DistStoreError(
                f"master_listen_fd {listen_fd} is bound to port {sock.getsockname()[1]}, not {host_port}"
            )
    else:
        sock = _bind(host_port)
    sock.listen(BACKLOG)
    sock.setblocking(False)
    return sock


def _bind(port: int) -> socket.socket:
    errors = []
    # Every interface, IPv4 and IPv6 in one socket where the host allows it, else IPv4 alone.
    for family, address in ((socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0")):
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError as error:
            errors.append(error)
            continue
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.bind((address, port))
            return sock
        except OSError as error:
            sock.close()
            errors.append(error)
    raise DistNetworkError(f"the TCPStore server cannot listen on port {port}: {errors[-1]}")


def warn_if_backlog_small(world_size: int | None) -> None:
    try:
        with open("/proc/sys/net/core/somaxconn") as file:
            somaxconn = int(file.read())
    except (OSError, ValueError):
        return
    if world_size is not None and somaxconn < world_size:
        log.warning(
            "the store expects %d workers but net.core.somaxconn is %d: connections may be refused and retried",
            world_size,
            somaxconn,
        )
