"""One scripted scenario run against PyTorch's stores and ours: the observations must be equal.

Only what a user observes is compared: return values, and for errors the exception's type name
and whether it is a RuntimeError. The protocols differ (ours is our own); the semantics may not.
Left out on purpose, where PyTorch misbehaves: ``add`` on a non-integer value (its TCPStore server
drops the connection), HashStore's ``multi_set`` with unequal lengths (it raises MemoryError), and
HashStore's ``wait`` with a zero timeout (it waits forever; its TCPStore, and all of ours, check
once and time out).
"""

import threading
from datetime import timedelta

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch oracle is installed only in the Python 3.11 sessions")
torch_dist = pytest.importorskip("torch.distributed", reason="this PyTorch build has no torch.distributed")

import ember.distributed as ember_dist  # noqa: E402

TIMEOUT = timedelta(seconds=10)
SHORT = timedelta(milliseconds=100)


class Recorder:
    def __init__(self) -> None:
        self.log: list[tuple] = []

    def __call__(self, step: str, call) -> None:
        try:
            self.log.append((step, "returns", call()))
        except Exception as error:
            self.log.append((step, "raises", type(error).__name__, isinstance(error, RuntimeError)))


def shared_semantics(record: Recorder, store, other) -> None:
    """Steps every store kind shares; ``other`` is a second handle on the same data."""
    record("set str", lambda: store.set("a", "alpha"))
    record("set bytes", lambda: store.set("b", b"\x00\xff"))
    record("get", lambda: (store.get("a"), other.get("b")))
    record("set empty value", lambda: store.set("empty", ""))
    record("get empty value", lambda: other.get("empty"))
    record("add new", lambda: store.add("n", 5))
    record("add", lambda: other.add("n", -7))
    record("add 0 reads", lambda: store.add("n", 0))
    record("add to a set number", lambda: (store.set("s", "40"), store.add("s", 2)))
    record("add bool", lambda: store.add("flag", True))
    record("add float", lambda: store.add("n", 1.5))
    record("add over int64", lambda: store.add("n", 2**63))
    record("add wraps", lambda: (store.add("w", 2**63 - 1), store.add("w", 1)))
    record("compare_set missing, expected empty", lambda: store.compare_set("c1", "", "new"))
    record("compare_set missing, expected set", lambda: store.compare_set("c2", "guess", "new"))
    record("check after failed compare_set", lambda: store.check(["c2"]))
    record("compare_set match", lambda: store.compare_set("c1", "new", "newer"))
    record("compare_set mismatch", lambda: other.compare_set("c1", "stale", "x"))
    record("check", lambda: (store.check(["a", "b"]), store.check(["a", "zzz"]), store.check([])))
    record("delete_key", lambda: (store.delete_key("a"), other.delete_key("a")))
    record("multi_set", lambda: store.multi_set(["m1", "m2"], ["one", b"two"]))
    record("multi_get", lambda: other.multi_get(["m2", "m1"]))
    record("multi_get none", lambda: other.multi_get([]))
    # One handle only: PyTorch does not acknowledge appends, so two handles could interleave them.
    record("append", lambda: (store.append("ap", "x"), store.append("ap", b"yz"), store.get("ap")))
    record("wait present", lambda: store.wait(["m1", "b"]))
    record("wait empty list", lambda: store.wait([]))
    record("wait times out", lambda: store.wait(["m1", "never"], SHORT))
    record("set_timeout", lambda: store.set_timeout(SHORT))
    record("timeout", lambda: store.timeout)
    record("get times out", lambda: store.get("never"))
    record("multi_get times out", lambda: store.multi_get(["m1", "never"]))
    record("set_timeout back", lambda: store.set_timeout(TIMEOUT))
    record("set int key", lambda: store.set(1, "v"))
    record("set int value", lambda: store.set("k", 1))
    record("check a str", lambda: store.check("m1"))

    def blocked_get():
        result = []
        reader = threading.Thread(target=lambda: result.append(store.get("later")))
        reader.start()
        reader.join(timeout=0.05)
        other.set("later", "arrived")
        reader.join(timeout=15)
        return result

    record("get woken by another writer", blocked_get)


def tcp_scenario(dist) -> list[tuple]:
    record = Recorder()
    master = dist.TCPStore("127.0.0.1", 0, world_size=1, is_master=True, timeout=TIMEOUT)
    worker = dist.TCPStore("127.0.0.1", master.port, timeout=TIMEOUT)
    record("num_keys after the master joined", master.num_keys)
    record("port and host", lambda: (worker.port == master.port, worker.host))
    shared_semantics(record, worker, master)
    record("num_keys", master.num_keys)
    record("wait zero timeout", lambda: worker.wait(["never"], timedelta(0)))
    record("multi_set unequal", lambda: worker.multi_set(["x", "y"], ["1"]))
    record("world_size 0", lambda: dist.TCPStore("127.0.0.1", 0, world_size=0, is_master=True, timeout=TIMEOUT))
    record("port 70000", lambda: dist.TCPStore("127.0.0.1", 70000, is_master=True, timeout=TIMEOUT))
    record("busy port", lambda: dist.TCPStore("127.0.0.1", master.port, is_master=True, timeout=SHORT))
    record(
        "master alone, world_size 2",
        lambda: dist.TCPStore("127.0.0.1", 0, world_size=2, is_master=True, timeout=timedelta(seconds=1)),
    )
    record(
        "worker without join",
        lambda: dist.TCPStore(
            "127.0.0.1", master.port, world_size=8, wait_for_workers=False, timeout=TIMEOUT
        ).num_keys(),
    )
    tenant = dist.TCPStore("127.0.0.1", 0, is_master=True, multi_tenant=True, timeout=TIMEOUT)
    record(
        "multi_tenant",
        lambda: (
            dist.TCPStore("127.0.0.1", tenant.port, is_master=True, multi_tenant=True, timeout=TIMEOUT).port
            == tenant.port
        ),
    )
    prefix = dist.PrefixStore("group", worker)
    record("prefix set", lambda: prefix.set("k", "v"))
    record("prefix underlying key", lambda: master.get("group/k"))
    record("prefix num_keys", prefix.num_keys)
    record("prefix timeout", lambda: prefix.timeout)
    record(
        "prefix nested",
        lambda: (dist.PrefixStore("b", dist.PrefixStore("a", worker)).set("k", "1"), master.check(["a/b/k"])),
    )
    record("prefix wait times out", lambda: prefix.wait(["nope"], SHORT))
    return record.log


def hash_scenario(dist) -> list[tuple]:
    record = Recorder()
    store = dist.HashStore()
    record("default timeout", lambda: store.timeout)
    record("num_keys empty", store.num_keys)
    shared_semantics(record, store, store)
    record("num_keys", store.num_keys)
    record("add on text", lambda: (store.set("text", "abc"), store.add("text", 1)))
    prefix = dist.PrefixStore("p", store)
    record("prefix over hash", lambda: (prefix.set("k", "v"), store.get("p/k"), prefix.num_keys()))
    return record.log


def compare(ours: list[tuple], theirs: list[tuple]) -> None:
    assert [step[0] for step in ours] == [step[0] for step in theirs]
    differences = [(mine, pytorch) for mine, pytorch in zip(ours, theirs, strict=True) if mine != pytorch]
    assert not differences, "\n".join(f"ember {mine}\ntorch {pytorch}" for mine, pytorch in differences)


def test_tcp_store_matches_pytorch():
    compare(tcp_scenario(ember_dist), tcp_scenario(torch_dist))


def test_hash_store_matches_pytorch():
    compare(hash_scenario(ember_dist), hash_scenario(torch_dist))
