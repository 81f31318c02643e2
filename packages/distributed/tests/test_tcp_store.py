"""What only TCPStore has: a server, ports, workers joining, connecting, limits, threads."""

import gc
import socket
import threading
from datetime import timedelta

import pytest

from ember.distributed import DistNetworkError, DistStoreError, TCPStore

SHORT = timedelta(milliseconds=300)
LONG = timedelta(seconds=10)


def parked(master: TCPStore, key: str) -> bool:
    return key.encode() in master._server.state.waiting


def test_port_zero_asks_the_os_and_port_tells(master, connect):
    assert 0 < master.port < 65536
    client = connect()
    assert client.port == master.port
    assert client.host == "127.0.0.1"
    assert client.libuvBackend is True
    assert "master" in repr(master) and "client" in repr(client)


def test_num_keys_counts_the_join_key_as_pytorch_does():
    # PyTorch 2.13: num_keys() is 0 without world_size, 1 right after a world_size=1 master joins.
    plain = TCPStore("127.0.0.1", 0, is_master=True, timeout=LONG)
    assert plain.num_keys() == 0
    plain.set("a", "1")
    assert plain.num_keys() == 1
    joined = TCPStore("127.0.0.1", 0, world_size=1, is_master=True, timeout=LONG)
    assert joined.num_keys() == 1
    joined.set("a", "1")
    assert joined.num_keys() == 2
    assert not joined.check(["init/"])


def test_master_waits_for_its_workers():
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    workers: list[TCPStore] = []

    def join():
        workers.append(TCPStore("127.0.0.1", port, world_size=3, timeout=LONG))

    threads = [threading.Thread(target=join) for _ in range(2)]
    for thread in threads:
        thread.start()
    master = TCPStore("127.0.0.1", port, world_size=3, is_master=True, timeout=LONG, master_listen_fd=listener.detach())
    for thread in threads:
        thread.join(timeout=15)
    assert len(workers) == 2
    assert master.num_keys() == 1
    workers[0].set("hello", "from a worker")
    assert master.get("hello") == b"from a worker"


def test_master_times_out_when_workers_do_not_come():
    with pytest.raises(DistStoreError, match="1 of 2 joined"):
        TCPStore("127.0.0.1", 0, world_size=2, is_master=True, timeout=SHORT)


def test_workers_without_wait_for_workers_do_not_join(master, connect):
    connect(world_size=4, wait_for_workers=False)
    assert master.num_keys() == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"world_size": 0}, ValueError, "world_size"),
        ({"world_size": -2}, ValueError, "world_size"),
        ({"world_size": "2"}, TypeError, "world_size"),
        ({"port": 70000}, TypeError, "port"),
        ({"port": -1}, TypeError, "port"),
        ({"host_name": 127}, TypeError, "host_name"),
        ({"timeout": 5}, TypeError, "timeout"),
        ({"max_value_size": 0}, ValueError, "max_value_size"),
    ],
)
def test_bad_constructor_arguments(kwargs, error, match):
    arguments = {"host_name": "127.0.0.1", "port": 0, "is_master": True, "timeout": SHORT} | kwargs
    with pytest.raises(error, match=match):
        TCPStore(**arguments)


def test_connection_refused_after_the_timeout_names_the_address():
    with socket.socket() as holder:  # bound, never listening: every connect is refused
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
        with pytest.raises(DistStoreError, match=f"127.0.0.1:{port}") as info:
            TCPStore("127.0.0.1", port, timeout=SHORT)
    assert isinstance(info.value, DistNetworkError)


def test_workers_retry_until_the_master_listens():
    # Bound but not listening: connecting is refused, and no other process can take the port.
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    joined: list[TCPStore] = []
    worker = threading.Thread(target=lambda: joined.append(TCPStore("127.0.0.1", port, timeout=LONG)))
    worker.start()
    worker.join(timeout=0.3)
    assert worker.is_alive(), "connected with no server"
    holder.close()
    master = TCPStore("127.0.0.1", port, is_master=True, timeout=LONG)
    worker.join(timeout=15)
    assert len(joined) == 1
    joined[0].set("k", "v")
    assert master.get("k") == b"v"


def test_a_busy_port_is_a_network_error(master):
    with pytest.raises(DistNetworkError, match=str(master.port)):
        TCPStore("127.0.0.1", master.port, is_master=True, timeout=SHORT)


def test_multi_tenant_masters_share_one_server():
    first = TCPStore("127.0.0.1", 0, is_master=True, multi_tenant=True, timeout=LONG)
    second = TCPStore("127.0.0.1", first.port, is_master=True, multi_tenant=True, timeout=LONG)
    first.set("shared", "yes")
    assert second.get("shared") == b"yes"
    other = TCPStore("127.0.0.1", 0, is_master=True, multi_tenant=True, timeout=LONG)
    assert other.port != first.port


def test_the_server_stops_with_its_last_store():
    master = TCPStore("127.0.0.1", 0, is_master=True, timeout=LONG)
    client = TCPStore("127.0.0.1", master.port, timeout=SHORT)
    del master
    gc.collect()
    with pytest.raises(DistNetworkError, match="failed"):
        client.get("anything")
    with pytest.raises(DistNetworkError):  # the next call tries once more and fails fast
        client.set("k", "v")


def test_a_waiting_get_is_answered_by_the_server_when_the_key_is_set(master, connect, eventually):
    reader, writer = connect(), connect()
    result = []
    thread = threading.Thread(target=lambda: result.append(reader.get("later")))
    thread.start()
    eventually(lambda: parked(master, "later"), "the get parked on the server")
    writer.set("later", "value")
    thread.join(timeout=15)
    assert result == [b"value"]
    assert not master._server.state.waiting


def test_many_waiters_on_one_key_all_wake(master, connect, eventually):
    clients = [connect() for _ in range(16)]
    done = []
    threads = [threading.Thread(target=lambda c=c: done.append(c.wait(["go"]))) for c in clients]
    for thread in threads:
        thread.start()
    eventually(lambda: len(master._server.state.waiting.get(b"go", ())) == 16, "16 waiters parked")
    master.set("go", "1")
    for thread in threads:
        thread.join(timeout=15)
    assert len(done) == 16


def test_a_deleted_key_is_waited_for_again(master, connect, eventually):
    reader = connect()
    result = []
    thread = threading.Thread(target=lambda: result.append(reader.multi_get(["a", "b"])))
    thread.start()
    eventually(lambda: parked(master, "a") and parked(master, "b"), "multi_get parked")
    master.set("a", "1")
    master.delete_key("a")
    master.set("b", "2")
    eventually(lambda: parked(master, "a"), "waiting for the deleted key again")
    assert thread.is_alive()
    master.set("a", "3")
    thread.join(timeout=15)
    assert result == [[b"3", b"2"]]


def test_a_timed_out_wait_leaves_the_connection_in_step(master, connect):
    client = connect()
    with pytest.raises(DistStoreError):
        client.wait(["never"], SHORT)
    assert not master._server.state.waiting
    client.set("k", "v")
    assert client.get("k") == b"v"
    assert client.add("n", 2) == 2


def test_one_store_shared_by_threads(connect):
    client = connect()

    def count():
        for _ in range(50):
            client.add("counter", 1)
            client.set("last", "x")

    threads = [threading.Thread(target=count) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert client.add("counter", 0) == 400


def test_large_values_roundtrip(connect):
    client = connect()
    value = bytes(range(256)) * (20 * 1024)  # 5 MiB
    client.set("big", value)
    assert client.get("big") == value
    assert client.multi_get(["big", "big"]) == [value, value]


def test_values_over_the_limit_are_refused_before_sending():
    master = TCPStore("127.0.0.1", 0, is_master=True, timeout=LONG, max_value_size=1024)
    client = TCPStore("127.0.0.1", master.port, timeout=LONG)  # learns the limit from the server
    with pytest.raises(ValueError, match=r"'huge'.*1024"):
        client.set("huge", b"x" * 2000)
    with pytest.raises(ValueError, match="max_value_size"):
        client.multi_set(["a", "b"], [b"x" * 600, b"y" * 600])
    client.set("small", b"x" * 500)
    assert client.get("small") == b"x" * 500


def test_sets_in_a_row_keep_few_replies_owed_and_land_in_order(master, connect):
    client = connect()
    for i in range(2000):
        client.set("counter", str(i))
    assert client._channel.pending <= 256  # the channel reads acknowledgements once too many are owed
    assert client.get("counter") == b"1999"
    assert client._channel.pending == 0
    assert master.get("counter") == b"1999"


def test_posted_sets_from_threads_sharing_a_store(master, connect):
    client = connect()

    def work(t: int) -> None:
        for i in range(200):
            client.set(f"t{t}/{i}", str(i))
            if i % 50 == 0:
                assert client.get(f"t{t}/{i}") == str(i).encode()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert client.check([f"t{t}/{i}" for t in range(4) for i in range(200)])


def test_a_set_after_the_server_is_gone_fails_then_or_at_the_next_call():
    server = TCPStore("127.0.0.1", 0, is_master=True, timeout=timedelta(seconds=5))
    client = TCPStore("127.0.0.1", server.port, timeout=timedelta(seconds=5))
    client.set("before", "1")
    del server
    gc.collect()
    with pytest.raises(DistStoreError):
        for _ in range(100):  # the first sends may still fit the kernel's buffers
            client.set("after", "1")
        client.get("after")
