"""``ember.accelerator`` with a CUDA plugin present: a stand-in plugin records what it is asked."""

import pytest

import ember


class FakeCuda:
    def __init__(self):
        self.current = 0
        self.calls = []

    def is_available(self):
        return True

    def device_count(self):
        return 2

    def current_device(self):
        return self.current

    def set_device(self, index):
        self.calls.append(("set_device", index))
        self.current = index

    def synchronize(self, index=None):
        self.calls.append(("synchronize", index))

    def memory_allocated(self, index=None):
        return 1024 if index in (None, 0) else 2048

    def empty_cache(self):
        self.calls.append(("empty_cache",))


@pytest.fixture
def plugin(monkeypatch):
    fake = FakeCuda()
    monkeypatch.setattr(ember.accelerator, "_backend", lambda: fake)
    return fake


def test_answers_with_a_plugin(plugin):
    assert ember.accelerator.is_available() is True
    assert ember.accelerator.current_accelerator() == ember.device("cuda")
    assert ember.accelerator.device_count() == 2
    assert ember.accelerator.current_device_index() == 0
    ember.accelerator.set_device_index("cuda:1")
    assert ember.accelerator.current_device_index() == 1
    ember.accelerator.synchronize()
    ember.accelerator.synchronize(0)
    assert ember.accelerator.memory_allocated() == 1024 and ember.accelerator.memory_allocated(1) == 2048
    ember.accelerator.empty_cache()
    assert plugin.calls == [("set_device", 1), ("synchronize", None), ("synchronize", 0), ("empty_cache",)]


def test_device_index_restores(plugin):
    with ember.accelerator.device_index(1):
        assert ember.accelerator.current_device_index() == 1
    assert ember.accelerator.current_device_index() == 0


def test_wrong_device_type_and_missing_function(plugin):
    with pytest.raises(ValueError, match="doesn't match the current accelerator"):
        ember.accelerator.synchronize("cpu")
    with pytest.raises(RuntimeError, match="does not offer memory_stats"):
        ember.accelerator.memory_stats()


def test_memory_module_capability_and_host_cache(plugin):
    assert ember.accelerator.memory.memory_allocated(1) == 2048
    assert ember.accelerator.memory_allocated is ember.accelerator.memory.memory_allocated
    capability = ember.accelerator.get_device_capability("cuda:0")
    assert {ember.float32, ember.bfloat16, ember.int64, ember.bool} <= capability["supported_dtypes"]
    with pytest.raises(ValueError, match="doesn't match the current accelerator"):
        ember.accelerator.get_device_capability("cpu")
    ember.accelerator.empty_host_cache()  # the stand-in keeps no host cache: nothing to do
    plugin.empty_host_cache = lambda: plugin.calls.append(("empty_host_cache",))
    ember.accelerator.memory.empty_host_cache()
    assert plugin.calls == [("empty_host_cache",)]


def test_graph_wraps_the_plugins_graph(plugin):
    with pytest.raises(NotImplementedError, match="no graph capture"):
        ember.accelerator.Graph()
    calls = plugin.calls

    class FakeGraph:
        def __init__(self, keep_graph=False):
            calls.append(("graph", keep_graph))

        def capture_begin(self, pool=None, capture_error_mode="default"):
            calls.append(("begin", pool, capture_error_mode))

        def capture_end(self):
            calls.append(("end",))

        def replay(self):
            calls.append(("replay",))

    plugin.CUDAGraph = FakeGraph
    graph = ember.accelerator.Graph(keep_graph=True, capture_error_mode="relaxed")
    with graph:
        pass
    graph.replay()
    assert calls == [
        ("graph", True),
        ("synchronize", None),
        ("begin", None, "relaxed"),
        ("end",),
        ("replay",),
    ]
