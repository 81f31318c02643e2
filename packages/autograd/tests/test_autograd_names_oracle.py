"""The rest of ``torch.autograd``'s public names, against PyTorch: ``Variable``, the multithreading
switch, the profiler's schedule and event averages, the re-exported ``__torch_function__`` helpers."""

import importlib

import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
importlib.import_module("torch.profiler")

LIBS = [pytest.param(ember, id="ember"), pytest.param(torch, id="torch")]


def _variable_scenario(lib):
    Variable = lib.autograd.Variable
    t = lib.tensor([1.0, 2.0])
    v = Variable(t)
    g = Variable(t, requires_grad=True)
    t.add_(1)  # shares data with both
    (g * 2).sum().backward()
    with pytest.raises(TypeError):
        Variable([1.0, 2.0])
    return (
        v is t,
        v.requires_grad,
        g.requires_grad,
        t.requires_grad,
        v.tolist(),
        g.grad.tolist(),
        isinstance(t, Variable),
        isinstance(1.0, Variable),
        type(g).__name__,
    )


def test_variable():
    assert _variable_scenario(ember) == _variable_scenario(torch)


@pytest.mark.parametrize("lib", LIBS)
def test_removed_variable_function(lib):
    with pytest.raises(RuntimeError, match=r"torch\.autograd\.variable\(\.\.\.\) is deprecated"):
        lib.autograd.variable([1.0, 2.0])


def test_multithreading_flag():
    def scenario(lib):
        A = lib.autograd
        seen = [A.is_multithreading_enabled()]
        with A.set_multithreading_enabled(False):
            seen.append(A.is_multithreading_enabled())
        seen.append(A.is_multithreading_enabled())
        return seen

    assert scenario(ember) == scenario(torch) == [True, False, True]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"wait": 1, "warmup": 1, "active": 2},
        {"wait": 2, "warmup": 1, "active": 3, "repeat": 2},
        {"wait": 0, "warmup": 2, "active": 1, "repeat": 1, "skip_first": 3},
        {"wait": 3, "warmup": 1, "active": 2, "repeat": 2, "skip_first_wait": 1},
    ],
)
def test_schedule_matches(kwargs):
    ours = ember.profiler.schedule(**kwargs)
    theirs = torch.profiler.schedule(**kwargs)
    assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]


def test_profiler_tables_list_the_same_leaf_ops():
    def scenario(lib):
        x = lib.ones(8, 8)
        activities = [lib.profiler.ProfilerActivity.CPU]
        with lib.profiler.profile(activities=activities) as prof, lib.profiler.record_function("block"):
            y = (x.mm(x) + 1).relu().sum()
        keys = {e.key: e.count for e in prof.key_averages()}
        return y.item(), {k: keys[k] for k in ("block", "aten::mm", "aten::add", "aten::relu", "aten::sum")}

    assert scenario(ember) == scenario(torch)


def test_torch_function_helpers_are_reexported():
    for name in ("handle_torch_function", "has_torch_function", "is_tensor_like"):
        assert getattr(ember.autograd, name) is getattr(ember.overrides, name)
        assert hasattr(torch.autograd, name)
