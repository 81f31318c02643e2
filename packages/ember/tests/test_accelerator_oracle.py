"""``ember.accelerator``, ``ember.backends.*`` and ``ember.onnx`` on a CPU-only machine, against
PyTorch's CPU build where it answers the same question."""

import inspect

import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

import ember  # noqa: E402

NEEDS_DEVICE = [
    ("current_device_index", ()),
    ("set_device_index", (0,)),
    ("synchronize", ()),
    ("current_stream", ()),
    ("empty_cache", ()),
    ("memory_allocated", ()),
    ("max_memory_allocated", ()),
    ("memory_reserved", ()),
    ("memory_stats", ()),
    ("get_memory_info", ()),
    ("reset_peak_memory_stats", ()),
    ("get_device_capability", ()),
    ("empty_host_cache", ()),
]


def test_cpu_only_answers():
    if torch.accelerator.is_available():
        pytest.skip("the oracle sees an accelerator")
    assert ember.accelerator.is_available() is torch.accelerator.is_available() is False
    assert ember.accelerator.current_accelerator() is torch.accelerator.current_accelerator() is None
    assert ember.accelerator.current_accelerator(check_available=True) is None
    assert ember.accelerator.device_count() == torch.accelerator.device_count() == 0


@pytest.mark.parametrize(("name", "args"), NEEDS_DEVICE)
def test_device_questions_raise_like_torch(name, args):
    if torch.accelerator.is_available():
        pytest.skip("the oracle sees an accelerator")
    with pytest.raises(RuntimeError) as want:
        getattr(torch.accelerator, name)(*args)
    with pytest.raises(RuntimeError) as got:
        getattr(ember.accelerator, name)(*args)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize(("name", "args"), NEEDS_DEVICE + [("device_count", ()), ("is_available", ())])
def test_signatures_follow_torch(name, args):
    ours = inspect.signature(getattr(ember.accelerator, name))
    theirs = inspect.signature(getattr(torch.accelerator, name))
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == [
        (p.name, p.kind, p.default) for p in theirs.parameters.values()
    ]


def test_device_index_none_is_a_no_op():
    with ember.accelerator.device_index(None):
        pass
    with torch.accelerator.device_index(None):
        pass


def test_backends_availability():
    assert ember.backends.cudnn.is_available() is torch.backends.cudnn.is_available()
    assert ember.backends.mps.is_available() is torch.backends.mps.is_available()
    assert ember.backends.cuda.is_built() is torch.backends.cuda.is_built() is False
    # Ember's kernels use none of these libraries, whatever PyTorch's build links.
    for name in ("mkldnn", "openmp", "mkl", "nnpack", "kleidiai", "opt_einsum"):
        assert getattr(ember.backends, name).is_available() is False
    assert ember.backends.cpu.get_cpu_capability() in {"DEFAULT", "AVX2", "AVX512", "SVE"}


def test_onnx_export_says_it_is_not_available():
    import ember.onnx

    assert ember.onnx.is_in_onnx_export() is False
    for call in (
        lambda: ember.onnx.export(ember.nn.Linear(1, 1), (ember.ones(1),), "model.onnx"),
        lambda: ember.onnx.dynamo_export(ember.nn.Linear(1, 1), ember.ones(1)),
    ):
        with pytest.raises(RuntimeError, match="ONNX export is not available in ember"):
            call()


def test_memory_module_names_follow_torch():
    import torch.accelerator.memory

    theirs = {name for name in torch.accelerator.memory.__all__}
    assert set(ember.accelerator.memory.__all__) == theirs
    for name in theirs:
        ours = inspect.signature(getattr(ember.accelerator.memory, name))
        want = inspect.signature(getattr(torch.accelerator.memory, name))
        assert [(p.name, p.kind) for p in ours.parameters.values()] == [
            (p.name, p.kind) for p in want.parameters.values()
        ]


def test_graph_without_an_accelerator_raises_like_torch():
    if torch.accelerator.is_available():
        pytest.skip("the oracle sees an accelerator")
    with pytest.raises(RuntimeError) as want:
        torch.accelerator.Graph()
    with pytest.raises(RuntimeError) as got:
        ember.accelerator.Graph()
    assert str(got.value) == str(want.value)
    assert ember.accelerator.graphs.Graph is ember.accelerator.Graph
