"""PyTorch's extension protocols in Ember without the oracle: what switches ``__torch_function__``
on, what it replaces, and that switching it off restores every original."""

import types

import pytest

import ember
import ember.overrides
from ember.core import function_protocol
from ember.core.dispatch import OpName
from ember.utils._python_dispatch import TorchDispatchMode


@pytest.fixture(autouse=True)
def protocol_off():
    function_protocol._deactivate()
    yield
    function_protocol._deactivate()


def test_op_name_is_a_string_and_callable():
    op = ember.ops.aten.mul.Tensor
    assert isinstance(op.name, OpName)
    assert op.name == "mul"
    assert op.name + "_" == "mul_"
    assert op.name() == "aten::mul.Tensor"
    assert {op.name: 1}["mul"] == 1


def test_protocol_is_off_until_needed():
    original_add = ember.add
    assert isinstance(original_add, types.FunctionType)
    assert isinstance(vars(ember.Tensor)["add"], types.FunctionType)
    assert not function_protocol.is_active()

    class Native(ember.Tensor):  # Ember's own protocol: stays out of __torch_function__
        @classmethod
        def __ember_dispatch__(cls, func, types, args, kwargs):
            return NotImplemented

    class OptedOut(ember.Tensor):
        __torch_function__ = ember._C._disabled_torch_function_impl

    class Plain(ember.Tensor):  # defines nothing: keeps Ember's behaviour, plain results
        pass

    assert not function_protocol.is_active()
    assert type(ember.ones(2).as_subclass(Plain) + 1) is ember.Tensor

    class Participating(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs)

    assert function_protocol.is_active()
    assert isinstance(ember.add, function_protocol.Overridable)
    assert ember.add == original_add and hash(ember.add) == hash(original_add)
    assert {original_add: "found"}[ember.add] == "found"
    x = ember.ones(2).as_subclass(Participating)
    assert type(x * 2) is Participating
    function_protocol._deactivate()
    assert ember.add is original_add
    assert isinstance(vars(ember.Tensor)["add"], types.FunctionType)


def test_mode_switches_the_protocol_on_and_is_popped_in_its_handler():
    seen = []

    class Mode(ember.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append((func.__name__, ember.overrides._get_current_function_mode()))
            return func(*args, **(kwargs or {}))

    with Mode() as mode:
        assert ember.overrides._get_current_function_mode() is mode
        ember.ones(1).neg()
    assert seen == [("ones", None), ("neg", None)]
    assert ember.overrides._get_current_function_mode() is None


def test_modes_exit_in_order():
    a, b = ember.overrides.TorchFunctionMode(), ember.overrides.TorchFunctionMode()
    a.__enter__()
    b.__enter__()
    with pytest.raises(RuntimeError, match="reverse order"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)


def test_disable_torch_function_turns_off_modes_too():
    seen = []

    class Mode(ember.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return func(*args, **(kwargs or {}))

    with Mode(), ember._C.DisableTorchFunction():
        ember.ones(1).neg()
    assert seen == []
    assert ember._C._is_torch_function_enabled()


def test_wrap_torch_function_decorator():
    @ember.overrides.wrap_torch_function(lambda t, k=1: (t,))
    def first(t, k=1):
        return t[:k]

    class Taker(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is first:
                return "intercepted"
            return super().__torch_function__(func, types, args, kwargs or {})

    assert first(ember.arange(3), k=2).tolist() == [0, 1]
    assert first(ember.arange(3).as_subclass(Taker)) == "intercepted"


def test_as_subclass_stays_in_the_graph():
    class Sub(ember.Tensor):
        __torch_function__ = ember._C._disabled_torch_function_impl

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    s = (x * 3).as_subclass(Sub)
    assert type(s) is Sub and s.requires_grad and s.grad_fn is not None
    s.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_torch_dispatch_mode_is_a_dispatch_mode():
    ops = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            ops.append(func)
            return func(*args, **(kwargs or {}))

    with Log():
        ember.ones(2).exp()
    assert ember.ops.aten.exp.default in ops
    with pytest.raises(NotImplementedError), TorchDispatchMode():
        ember.ones(1)
