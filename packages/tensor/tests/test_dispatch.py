"""The dispatcher: modes that record and delegate, nesting, wrapper subclasses, and the op
namespaces (``ember.ops.aten.add.Tensor``, packets that pick an overload)."""

from __future__ import annotations

from typing import ClassVar

import pytest

import ember
from ember.core import dispatch
from ember.core.tensor import make_wrapper_subclass

aten = ember.ops.aten


class Recorder(ember.DispatchMode):
    def __init__(self, tag: str = "", log: list | None = None) -> None:
        self.tag = tag
        self.log = [] if log is None else log

    def __ember_dispatch__(self, func, types, args, kwargs):
        self.log.append(f"{self.tag}{func}")
        return func(*args, **kwargs)


def _program():
    x = ember.ones(2, 3)
    y = x.t()
    z = x + 1
    z.mul_(2)
    w = z[0]
    return ember.zeros_like(w), y.clone()


def test_mode_records_every_op_and_delegates():
    expected_zero, expected_clone = _program()
    with Recorder() as mode:
        zero, cloned = _program()
    # What torch.utils._python_dispatch.TorchDispatchMode records for the same program.
    assert mode.log == [
        "aten.ones.default",
        "aten.t.default",
        "aten.add.Tensor",
        "aten.mul_.Tensor",
        "aten.select.int",
        "aten.zeros_like.default",
        "aten.clone.default",
    ]
    assert zero.tolist() == expected_zero.tolist() and cloned.tolist() == expected_clone.tolist()
    assert dispatch.active_modes() == []


def test_modes_nest_and_are_off_inside_their_own_handler():
    log: list = []
    inner_calls = []

    class Inner(Recorder):
        def __ember_dispatch__(self, func, types, args, kwargs):
            inner_calls.append(list(dispatch.active_modes()))
            return super().__ember_dispatch__(func, types, args, kwargs)

    x = ember.ones(3)
    with Recorder("outer:", log) as outer, Inner("inner:", log):
        y = x.neg() if hasattr(x, "neg") else x * -1
    # The inner (most recent) mode sees the op first; its own call reaches the outer mode, whose
    # own call reaches the kernel.
    assert log[:2] == [f"inner:{log[0][6:]}", f"outer:{log[0][6:]}"]
    assert len(log) == 2
    assert inner_calls == [[outer]]
    assert y.tolist() == [-1.0, -1.0, -1.0]
    assert dispatch.active_modes() == []
    with pytest.raises(RuntimeError, match="reverse order"):
        a, b = Recorder(), Recorder()
        a.__enter__()
        b.__enter__()
        try:
            a.__exit__(None, None, None)
        finally:
            b.__exit__(None, None, None)
            a.__exit__(None, None, None)
    assert dispatch.active_modes() == []


def test_mode_may_answer_instead_of_the_kernel():
    class Zeros(ember.DispatchMode):
        def __ember_dispatch__(self, func, types, args, kwargs):
            if func is aten.add.Tensor:
                return ember.zeros(args[0].shape)
            return func(*args, **kwargs)

    with Zeros():
        out = ember.ones(2) + ember.ones(2)
    assert out.tolist() == [0.0, 0.0]
    assert (ember.ones(2) + ember.ones(2)).tolist() == [2.0, 2.0]


def test_mode_is_switched_off_after_an_error():
    class Boom(ember.DispatchMode):
        def __ember_dispatch__(self, func, types, args, kwargs):
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"), Boom():
        ember.ones(2) + 1
    assert dispatch.active_modes() == []
    assert (ember.ones(2) + 1).tolist() == [2.0, 2.0]


class Wrapper(ember.Tensor):
    """Holds another tensor; every op runs on the inner one and wraps the result again."""

    log: ClassVar[list] = []

    @staticmethod
    def wrap(inner):
        t = make_wrapper_subclass(Wrapper, inner.shape, inner.dtype, inner.device, inner.stride())
        t.inner = inner
        return t

    @classmethod
    def __ember_dispatch__(cls, func, types, args, kwargs):
        cls.log.append(str(func))

        def unwrap(v):
            if isinstance(v, Wrapper):
                return v.inner
            if isinstance(v, list | tuple):
                return type(v)(unwrap(x) for x in v)
            return v

        def rewrap(v):
            if isinstance(v, ember.Tensor) and not isinstance(v, Wrapper):
                return Wrapper.wrap(v)
            if isinstance(v, list | tuple):
                return type(v)(rewrap(x) for x in v)
            return v

        out = func(*unwrap(args), **{k: unwrap(v) for k, v in kwargs.items()})
        # In-place ops return their first argument: return the wrapper the caller holds.
        if func.schema.is_inplace and isinstance(args[0], Wrapper):
            return args[0]
        return rewrap(out)


def test_wrapper_subclass_runs_ops_on_the_inner_tensor():
    Wrapper.log = []
    inner = ember.arange(6.0).reshape(2, 3)
    w = Wrapper.wrap(inner)
    assert isinstance(w, Wrapper) and w.shape == (2, 3) and w.dtype is ember.float32 and w.stride() == (3, 1)
    out = w + 1
    assert isinstance(out, Wrapper) and out.inner.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    mixed = ember.ones(2, 3) * w
    assert isinstance(mixed, Wrapper) and mixed.inner.tolist() == inner.tolist()
    view = w.t()
    assert isinstance(view, Wrapper) and view.shape == (3, 2) and view.inner.stride() == (1, 3)
    same = w.add_(10)
    assert same is w and inner.tolist()[0] == [10.0, 11.0, 12.0]
    parts = w.unbind(0)
    assert all(isinstance(p, Wrapper) for p in parts) and parts[1].inner.tolist() == [13.0, 14.0, 15.0]
    assert Wrapper.log == [
        "aten.add.Tensor",
        "aten.mul.Tensor",
        "aten.t.default",
        "aten.add_.Tensor",
        "aten.unbind.int",
    ]


def test_wrapper_subclass_under_a_mode():
    Wrapper.log = []
    w = Wrapper.wrap(ember.ones(2))
    with Recorder() as mode:
        out = w + w
    # The mode sees the call first; its own call goes on to the subclass.
    assert mode.log == ["aten.add.Tensor"] and Wrapper.log == ["aten.add.Tensor"]
    assert isinstance(out, Wrapper) and out.inner.tolist() == [2.0, 2.0]


def test_subclass_returning_not_implemented_raises_type_error():
    class Refuses(ember.Tensor):
        @classmethod
        def __ember_dispatch__(cls, func, types, args, kwargs):
            return NotImplemented

    r = make_wrapper_subclass(Refuses, (2,), ember.float32, ember.device("cpu"))
    with pytest.raises(TypeError, match="Refuses"):
        r + 1


def test_op_namespaces_and_packets():
    x, y = ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])
    assert aten.add.Tensor(x, y).tolist() == [4.0, 6.0]
    assert aten.add(x, y).tolist() == [4.0, 6.0]
    assert aten.add(x, y, alpha=2).tolist() == [7.0, 10.0]
    op = aten.add.Tensor
    assert isinstance(op, ember.OpOverload) and op.name == "add" and op.overload == "Tensor"
    assert repr(op) == "aten.add.Tensor" and op.packet is aten.add
    assert "Tensor" in aten.add.overloads()
    assert aten.view.default(x, [2, 1]).shape == (2, 1)
    assert aten.view(x, [2, 1]).shape == (2, 1)
    assert aten.transpose.int(ember.ones(2, 3), 0, 1).shape == (3, 2)
    assert aten.squeeze(ember.ones(1, 2)).shape == (2,)
    assert aten.squeeze(ember.ones(1, 2, 1), [0]).shape == (2, 1)
    assert dispatch.lookup("aten::add.Tensor") is op
    assert "add" in dir(aten)
    with pytest.raises(AttributeError, match="no op 'definitely_not_an_op'"):
        _ = aten.definitely_not_an_op
    with pytest.raises(AttributeError, match="no overload 'Nope'"):
        _ = aten.add.Nope
    with pytest.raises(AttributeError, match="no namespace"):
        _ = ember.ops.not_a_namespace
    with pytest.raises(TypeError, match="no overload accepts"):
        aten.add("a", "b")


def test_define_refuses_duplicates_and_unknown_tags():
    with pytest.raises(RuntimeError, match="already defined"):
        ember.define("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    with pytest.raises(ValueError, match="unknown tags"):
        ember.define("my_test_op(Tensor self) -> Tensor", ("shiny",), namespace="ember_tests")


def test_define_a_new_op_with_kernels_and_decomposition():
    op = ember.define("double_it(Tensor self) -> Tensor", ("pointwise",), namespace="ember_tests_dispatch")
    assert ember.ops.ember_tests_dispatch.double_it.default is op

    @op.register_decomposition
    def _(self):
        return self + self

    x = ember.tensor([1.0, 2.0])
    assert op(x).tolist() == [2.0, 4.0]  # no kernel: the decomposition runs
    op.register_kernel("cpu")(lambda self: self * 3)
    assert op(x).tolist() == [3.0, 6.0]
    op.register_meta(lambda self: ember.empty(self.shape, device="meta"))
    assert op(ember.empty(2, device="meta")).device.type == "meta"
    assert op.has_kernel("cpu") and op.meta is not None
    with pytest.raises(RuntimeError):
        aten.add.Tensor.decompose(x, x)


def test_missing_kernel_names_the_backend():
    op = ember.define("no_kernels(Tensor self) -> Tensor", (), namespace="ember_tests_dispatch")
    with pytest.raises(NotImplementedError, match="'cpu' backend"):
        op(ember.ones(1))
