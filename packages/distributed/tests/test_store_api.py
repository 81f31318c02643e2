"""The semantics every store shares, run against TCPStore, HashStore and PrefixStores over both."""

import threading
from datetime import timedelta

import pytest

from ember.distributed import DistStoreError, HashStore, PrefixStore, Store

SHORT = timedelta(milliseconds=200)


def test_set_get_roundtrip_str_and_bytes(store):
    store.set("text", "héllo")
    store.set("raw", b"\x00\xff\x01")
    store.set("empty", "")
    assert store.get("text") == "héllo".encode()
    assert store.get("raw") == b"\x00\xff\x01"
    assert store.get("empty") == b""
    store.set("text", bytearray(b"over"))
    assert store.get("text") == b"over"


def test_empty_and_unicode_keys(store):
    store.set("", "e")
    store.set("ключ", "v")
    assert store.get("") == b"e"
    assert store.get("ключ") == b"v"


def test_add_creates_counts_and_reads(store):
    assert store.add("n", 5) == 5
    assert store.add("n", -2) == 3
    assert store.add("n", 0) == 3
    assert store.get("n") == b"3"
    assert store.add("flag", True) == 1
    store.set("preset", "40")
    assert store.add("preset", 2) == 42


def test_add_wraps_around_int64(store):
    assert store.add("big", 2**63 - 1) == 2**63 - 1
    assert store.add("big", 1) == -(2**63)


def test_add_on_text_is_a_value_error_and_the_store_goes_on(store):
    store.set("word", "abc")
    with pytest.raises(ValueError, match="word"):
        store.add("word", 1)
    assert store.get("word") == b"abc"
    assert store.add("other", 1) == 1


@pytest.mark.parametrize("amount", [2**63, -(2**63) - 1, 1.5, "1", None])
def test_add_rejects_what_is_not_an_int64(store, amount):
    with pytest.raises(TypeError, match="add"):
        store.add("n", amount)


def test_compare_set_on_a_missing_key(store):
    # expected empty: the key is created
    assert store.compare_set("k", "", "first") == b"first"
    assert store.get("k") == b"first"
    # expected non-empty: nothing is written and the expected value comes back (PyTorch's rule)
    assert store.compare_set("absent", "guess", "x") == b"guess"
    assert not store.check(["absent"])


def test_compare_set_on_an_existing_key(store):
    store.set("k", "v1")
    assert store.compare_set("k", "v1", "v2") == b"v2"
    assert store.compare_set("k", "wrong", "v3") == b"v2"
    assert store.get("k") == b"v2"
    assert store.compare_set("k", b"v2", b"") == b""
    assert store.compare_set("k", "", "refilled") == b"refilled"


def test_check_and_delete_key(store):
    assert store.check([])
    assert not store.check(["a"])
    store.set("a", "1")
    store.set("b", "2")
    assert store.check(["a", "b"])
    assert store.check(("a",))
    assert not store.check(["a", "c"])
    assert store.delete_key("a") is True
    assert store.delete_key("a") is False
    assert not store.check(["a"])


def test_multi_set_and_multi_get(store):
    assert store.multi_get([]) == []
    store.multi_set(["x", "y"], ["1", b"2"])
    assert store.multi_get(["y", "x", "y"]) == [b"2", b"1", b"2"]


def test_multi_set_needs_as_many_values_as_keys(store):
    with pytest.raises(DistStoreError, match="2 keys but 1 values"):
        store.multi_set(["x", "y"], ["1"])
    assert not store.check(["x"])


def test_append_creates_then_extends(store):
    store.append("log", "a")
    store.append("log", b"bc")
    assert store.get("log") == b"abc"


def test_get_times_out_naming_key_and_timeout(store):
    store.set_timeout(SHORT)
    with pytest.raises(DistStoreError, match=r"200 ms.*'(job/)?missing'") as info:
        store.get("missing")
    assert isinstance(info.value, RuntimeError)


def test_wait_names_only_the_missing_keys(store):
    store.set("here", "1")
    with pytest.raises(DistStoreError, match=r"150 ms.*'(job/)?gone'") as info:
        store.wait(["here", "gone"], timedelta(milliseconds=150))
    assert "here" not in str(info.value)
    store.wait(["here"])
    store.wait([])


def test_multi_get_times_out(store):
    store.set("one", "1")
    store.set_timeout(SHORT)
    with pytest.raises(DistStoreError, match=r"'(job/)?two'"):
        store.multi_get(["one", "two"])


def test_zero_timeout_checks_once(store):
    with pytest.raises(DistStoreError, match="0 ms"):
        store.wait(["nope"], timedelta(0))
    store.set("yes", "1")
    store.wait(["yes"], timedelta(0))


@pytest.mark.parametrize("method", ["get", "wait", "multi_get"])
def test_blocking_reads_wake_when_another_handle_writes(pair, method):
    reader_store, writer_store = pair
    calls = {
        "get": lambda: reader_store.get("late"),
        "wait": lambda: reader_store.wait(["late"]),
        "multi_get": lambda: reader_store.multi_get(["late"]),
    }
    result = []
    reader = threading.Thread(target=lambda: result.append(calls[method]()))
    reader.start()
    reader.join(timeout=0.1)
    assert reader.is_alive(), "returned before the key existed"
    writer_store.set("late", "now")
    reader.join(timeout=15)
    assert not reader.is_alive()
    assert result == [{"get": b"now", "wait": None, "multi_get": [b"now"]}[method]]


def test_timeout_and_set_timeout(store):
    assert store.timeout == timedelta(seconds=10)
    store.set_timeout(timedelta(seconds=3))
    assert store.timeout == timedelta(seconds=3)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda s: s.set(1, "v"), TypeError),
        (lambda s: s.set("k", 5), TypeError),
        (lambda s: s.set("k", None), TypeError),
        (lambda s: s.get(b"k"), TypeError),
        (lambda s: s.wait("k"), TypeError),
        (lambda s: s.check("k"), TypeError),
        (lambda s: s.check([1]), TypeError),
        (lambda s: s.multi_get("ab"), TypeError),
        (lambda s: s.multi_set(["a"], "v"), TypeError),
        (lambda s: s.wait(["k"], 5), TypeError),
        (lambda s: s.set_timeout(5), TypeError),
        (lambda s: s.set_timeout(timedelta(seconds=-1)), ValueError),
    ],
)
def test_bad_arguments_are_named(store, call, error):
    with pytest.raises(error, match="must"):
        call(store)


def test_the_base_store_says_what_it_lacks():
    with pytest.raises(NotImplementedError, match=r"Store.get") as info:
        Store().get("k")
    assert isinstance(info.value, RuntimeError)


def test_a_minimal_subclass_gets_multi_ops_and_append_from_the_base():
    class Minimal(Store):
        def __init__(self):
            super().__init__()
            self.data = {}

        def set(self, key, value):
            self.data[key] = value.encode() if isinstance(value, str) else value

        def get(self, key):
            return self.data[key]

        def compare_set(self, key, expected, desired):
            expected = expected.encode() if isinstance(expected, str) else expected
            current = self.data.get(key)
            if (current is None and not expected) or current == expected:
                self.data[key] = desired
                return desired
            return expected if current is None else current

    store = Minimal()
    store.multi_set(["a", "b"], ["1", "2"])
    assert store.multi_get(["b", "a"]) == [b"2", b"1"]
    store.append("log", "x")
    store.append("log", "y")
    assert store.get("log") == b"xy"


def test_hash_store_num_keys_counts_its_keys():
    store = HashStore()
    assert store.num_keys() == 0
    store.set("a", "1")
    store.add("b", 1)
    assert store.num_keys() == 2


def test_prefix_store_writes_under_its_prefix_and_nests():
    base = HashStore()
    outer = PrefixStore("outer", PrefixStore("inner", base))
    outer.set("k", "v")
    assert base.get("inner/outer/k") == b"v"
    assert outer.underlying_store.underlying_store is base
    assert outer.num_keys() == base.num_keys() == 1
    outer.set_timeout(timedelta(seconds=7))
    assert base.timeout == timedelta(seconds=7)


def test_prefix_store_timeout_names_the_full_key():
    base = HashStore(timedelta(milliseconds=50))
    with pytest.raises(DistStoreError, match="'group/key'"):
        PrefixStore("group", base).get("key")


def test_prefix_store_checks_its_arguments():
    with pytest.raises(TypeError, match="prefix"):
        PrefixStore(3, HashStore())
    with pytest.raises(TypeError, match="Store"):
        PrefixStore("p", {})


def test_a_timeout_of_forever_is_accepted(pair):
    reader_store, writer_store = pair
    reader_store.set_timeout(timedelta.max)
    result = []
    reader = threading.Thread(
        target=lambda: result.append((reader_store.get("k"), reader_store.wait(["k"], timedelta.max)))
    )
    reader.start()
    reader.join(timeout=0.1)
    assert reader.is_alive()
    writer_store.set("k", "v")
    reader.join(timeout=15)
    assert result == [(b"v", None)]


def test_writes_are_read_by_their_writer_at_once_and_by_everyone_after_its_next_call(pair):
    # set is one-way (as PyTorch's): a handle reads its own writes in order; another handle sees a
    # write once any later call of the writer has returned (its reply comes after the write's).
    first, second = pair
    for i in range(50):
        first.set(f"k{i}", "v")
        assert first.check([f"k{i}"])
        first.set(f"j{i}", "w")
        first.num_keys()
        assert second.check([f"j{i}"])
        first.append("log", "a")
        second.append("log", "b")
    assert first.get("log") == b"ab" * 50
