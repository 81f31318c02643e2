"""``__torch_function__`` written once against PyTorch's API and run with both libraries: the same
functions reach the handlers, with the same results and result types.

Subclasses are defined inside the tests: defining one switches the protocol on for the process, and
the fixture switches it off again afterwards so that other test modules run as they would alone.
"""

import numpy as np
import pytest

import ember
import ember.nn.functional
import ember.overrides
from ember.core import function_protocol

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

LIBS = [pytest.param(ember, id="ember"), pytest.param(torch, id="torch")]


@pytest.fixture(autouse=True)
def protocol_off_afterwards():
    yield
    function_protocol._deactivate()


def _logged_subclass(lib, calls: list):
    class Logged(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs or {})

    return Logged


def _subclass_scenario(lib):
    calls = []
    Logged = _logged_subclass(lib, calls)
    x = lib.tensor([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]]).as_subclass(Logged)
    w = lib.tensor([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]])
    results = {
        "add": lib.add(x, 1),
        "method": x.add(2),
        "operator": x + 3,
        "linear": lib.nn.functional.linear(x, w),
        "sum": x.sum(0),
        "max_values": x.max(1).values,
        "getitem": x[0],
        "cat": lib.cat([x, x]),
    }
    return calls, results


@pytest.mark.parametrize("case", ["add", "method", "operator", "linear", "sum", "max_values", "getitem", "cat"])
def test_subclass_results_keep_the_subclass_and_values(case):
    _, ours = _subclass_scenario(ember)
    _, theirs = _subclass_scenario(torch)
    assert type(ours[case]).__name__ == type(theirs[case]).__name__ == "Logged"
    np.testing.assert_allclose(np.asarray(ours[case].tolist()), theirs[case].detach().numpy(), rtol=1e-6)


def test_subclass_handler_sees_the_same_functions():
    ours, _ = _subclass_scenario(ember)
    theirs, _ = _subclass_scenario(torch)
    assert ours == theirs


@pytest.mark.parametrize("lib", LIBS)
def test_func_is_the_public_function(lib):
    seen = []

    class Spy(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return super().__torch_function__(func, types, args, kwargs or {})

    x = lib.ones(2).as_subclass(Spy)
    lib.add(x, x)
    x.mul(2)
    x - 1
    assert seen[0] is lib.add
    assert seen[1] is lib.Tensor.mul
    assert seen[2] is lib.Tensor.sub


def _mode_scenario(lib):
    calls = []

    class Mode(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            calls.append(func.__name__)
            return func(*args, **(kwargs or {}))

    with Mode():
        p = lib.ones(2) * 3
        q = lib.cat([p, p])
        r = p.exp()
        s = lib.nn.functional.relu(q - 4)
    return calls, [p, q, r, s]


def test_function_mode_sees_the_same_calls_and_results():
    ours, our_values = _mode_scenario(ember)
    theirs, their_values = _mode_scenario(torch)
    assert ours == theirs
    for a, b in zip(our_values, their_values, strict=True):
        np.testing.assert_allclose(np.asarray(a.tolist()), b.numpy(), rtol=1e-6)


@pytest.mark.parametrize("lib", LIBS)
def test_mode_can_replace_a_result(lib):
    class Constant(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is lib.add:
                return "replaced"
            return func(*args, **(kwargs or {}))

    with Constant():
        assert lib.add(lib.ones(1), 1) == "replaced"
        assert lib.mul(lib.ones(1), 3).tolist() == [3.0]
    assert lib.add(lib.ones(1), 1).tolist() == [2.0]


@pytest.mark.parametrize("lib", LIBS)
def test_disable_torch_function_subclass_gives_plain_tensors(lib):
    calls = []
    Logged = _logged_subclass(lib, calls)
    x = lib.ones(3).as_subclass(Logged)
    with lib._C.DisableTorchFunctionSubclass():
        y = x + 1
    assert calls == []
    assert type(y) is lib.Tensor
    assert type(x + 1) is Logged
    assert lib.DisableTorchFunctionSubclass is lib._C.DisableTorchFunctionSubclass


@pytest.mark.parametrize("lib", LIBS)
def test_disabled_impl_opts_out(lib):
    class Plain(lib.Tensor):
        __torch_function__ = lib._C._disabled_torch_function_impl

    x = lib.ones(2).as_subclass(Plain)
    assert type(x + 1) is lib.Tensor
    assert not lib.overrides.has_torch_function((x,))


# -- a tensor-like that is not a Tensor (the shape of PyTorch's documented ScalarTensor example) ----------


def _scalar_tensor_scenario(lib):
    handled = {}

    class Diagonal:
        """value * identity(n), never materialized unless an op needs it."""

        def __init__(self, n, value):
            self.n, self.value = n, value

        def dense(self):
            return self.value * lib.eye(self.n)

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func not in handled or not all(issubclass(t, (lib.Tensor, Diagonal)) for t in types):
                return NotImplemented
            return handled[func](*args, **(kwargs or {}))

    handled[lib.mean] = lambda d: float(d.value) / d.n
    handled[lib.add] = lambda a, b: (
        (a.dense() if isinstance(a, Diagonal) else a) + (b.dense() if isinstance(b, Diagonal) else b)
    )
    if lib is ember:
        # Ember checks tensor-likes once the protocol is on; a program with no Tensor subclass and
        # no mode switches it on itself.
        lib.overrides.activate()
    d = Diagonal(3, 2.0)
    out = {"mean": lib.mean(d), "add": lib.add(d, lib.ones(3, 3)).tolist()}
    with pytest.raises(TypeError, match=r"Multiple dispatch failed for '(torch|ember)\.sum'"):
        lib.sum(d)
    return out


def test_tensor_like_object():
    assert _scalar_tensor_scenario(ember) == _scalar_tensor_scenario(torch)


# -- handle_torch_function for the user's own functions -----------------------------------------------------


def _user_function_scenario(lib):
    seen = []

    def scaled_sum(t, factor=2.0):
        if lib.overrides.has_torch_function_unary(t):
            return lib.overrides.handle_torch_function(scaled_sum, (t,), t, factor=factor)
        return t.sum() * factor

    class Tagged(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is scaled_sum:
                seen.append(("scaled_sum", kwargs))
                return "intercepted"
            return super().__torch_function__(func, types, args, kwargs or {})

    plain = scaled_sum(lib.ones(3)).item()
    tagged = scaled_sum(lib.ones(3).as_subclass(Tagged), factor=3.0)
    return plain, tagged, seen


def test_handle_torch_function_on_a_user_function():
    assert _user_function_scenario(ember) == _user_function_scenario(torch)


@pytest.mark.parametrize("lib", LIBS)
def test_overrides_helpers(lib):
    ov = lib.overrides
    assert ov.is_tensor_like(lib.ones(1))
    assert not ov.is_tensor_like(1.0)
    assert ov.is_tensor_method_or_property(lib.Tensor.add)
    assert not ov.is_tensor_method_or_property(lib.add)
    overridable = ov.get_overridable_functions()
    assert lib.add in overridable[lib]
    assert lib.Tensor.add in overridable[lib.Tensor]
    assert lib.ones in ov.get_ignored_functions()
    assert not ov.has_torch_function((lib.ones(1), 2))


def test_ignored_functions_are_pytorch_ignored_ones():
    theirs = torch.overrides.get_ignored_functions()
    ours = ember.overrides._IGNORED_NAMES
    assert {name for name in ours if getattr(torch, name, None) in theirs} == set(ours)
    assert len(ember.overrides.get_ignored_functions()) == len({getattr(ember, n) for n in ours if hasattr(ember, n)})
