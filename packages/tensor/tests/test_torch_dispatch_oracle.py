"""``__torch_dispatch__`` subclasses and ``TorchDispatchMode``s written once against PyTorch's API and
run with both libraries: the same ops logged, the same values."""

import importlib

import pytest

import ember
import ember.utils._python_dispatch
import ember.utils._pytree

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
importlib.import_module("torch.utils._python_dispatch")
importlib.import_module("torch.utils._pytree")

LIBS = [pytest.param(ember, id="ember"), pytest.param(torch, id="torch")]


def _logging_tensor(lib, log: list):
    tree_map = lib.utils._pytree.tree_map

    class LoggingTensor(lib.Tensor):
        @staticmethod
        def __new__(cls, elem):
            return lib.Tensor._make_wrapper_subclass(
                cls,
                elem.size(),
                strides=elem.stride(),
                storage_offset=elem.storage_offset(),
                dtype=elem.dtype,
                device=elem.device,
                requires_grad=elem.requires_grad,
            )

        def __init__(self, elem):
            self.elem = elem

        __torch_function__ = lib._C._disabled_torch_function_impl

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            def unwrap(e):
                return e.elem if isinstance(e, LoggingTensor) else e

            def wrap(e):
                return LoggingTensor(e) if isinstance(e, lib.Tensor) else e

            log.append(str(func))
            out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
            return tree_map(wrap, out)

    return LoggingTensor


def _logging_scenario(lib):
    log = []
    LoggingTensor = _logging_tensor(lib, log)
    x = LoggingTensor(lib.tensor([[1.0, 2.0, -3.0], [0.5, -1.5, 2.5]]))
    y = ((x * 2 + x).relu() - 1).sum(1)
    return log, type(y).__name__, y.elem.tolist(), tuple(y.shape), y.dtype is lib.float32


def test_logging_tensor_logs_the_same_ops():
    ours = _logging_scenario(ember)
    theirs = _logging_scenario(torch)
    assert (
        ours[0]
        == theirs[0]
        == ["aten.mul.Tensor", "aten.add.Tensor", "aten.relu.default", "aten.sub.Tensor"] + ["aten.sum.dim_IntList"]
    )
    assert ours[1:] == theirs[1:]


def test_logging_tensor_under_autograd():
    def scenario(lib):
        log = []
        LoggingTensor = _logging_tensor(lib, log)
        x = LoggingTensor(lib.tensor([1.0, 2.0, 3.0], requires_grad=True))
        y = (x * x).sum()
        forward_ops = list(log)
        y.backward()
        return forward_ops, x.grad.elem.tolist(), type(x.grad).__name__

    assert scenario(ember) == scenario(torch)


def _counting_mode_scenario(lib):
    TorchDispatchMode = lib.utils._python_dispatch.TorchDispatchMode

    class OpCounter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append((func.overloadpacket.__name__, func._overloadname, func.name()))
            return func(*args, **(kwargs or {}))

    a = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    with OpCounter() as counter:
        assert lib.utils._python_dispatch._get_current_dispatch_mode() is counter
        out = (a @ a).exp().mean()
    assert lib.utils._python_dispatch._get_current_dispatch_mode() is None
    return counter.ops, out.item()


def test_counting_mode_sees_the_same_ops():
    ours, our_value = _counting_mode_scenario(ember)
    theirs, their_value = _counting_mode_scenario(torch)
    assert ours == theirs
    assert our_value == pytest.approx(their_value, rel=1e-6)


@pytest.mark.parametrize("lib", LIBS)
def test_op_overload_attributes(lib):
    op = lib.ops.aten.add.Tensor
    assert op.name() == "aten::add.Tensor"
    assert op.__name__ == "add.Tensor"
    assert op.overloadpacket is lib.ops.aten.add
    assert op.overloadpacket.__name__ == "add"
    assert op._overloadname == "Tensor"
    assert str(op) == "aten.add.Tensor"
    assert op.is_view is False
    assert lib.ops.aten.view.default.is_view is True
    assert [a.name for a in op._schema.arguments] == ["self", "other", "alpha"]


def _mode_replaces_scenario(lib):
    TorchDispatchMode = lib.utils._python_dispatch.TorchDispatchMode

    class AddIsSub(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is lib.ops.aten.add.Tensor:
                return lib.ops.aten.sub.Tensor(*args, **(kwargs or {}))
            return func(*args, **(kwargs or {}))

    a, b = lib.tensor([5.0, 6.0]), lib.tensor([1.0, 2.0])
    with AddIsSub():
        inside = (a + b).tolist()
    return inside, (a + b).tolist()


def test_mode_can_swap_an_op():
    assert _mode_replaces_scenario(ember) == _mode_replaces_scenario(torch) == ([4.0, 4.0], [6.0, 8.0])


@pytest.mark.parametrize("lib", LIBS)
def test_make_subclass_shares_storage(lib):
    class Marked(lib.Tensor):
        __torch_function__ = lib._C._disabled_torch_function_impl

    base = lib.tensor([1.0, 2.0, 3.0])
    m = lib.Tensor._make_subclass(Marked, base, True)
    assert type(m) is Marked
    assert m.requires_grad
    assert not base.requires_grad
    base.add_(1)
    assert m.detach().tolist() == [2.0, 3.0, 4.0]


def test_wrapper_subclass_metadata_matches():
    def scenario(lib):
        class Empty(lib.Tensor):
            @classmethod
            def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
                raise NotImplementedError(str(func))

        t = lib.Tensor._make_wrapper_subclass(Empty, (2, 3), dtype=lib.float64, strides=(1, 2), requires_grad=True)
        return tuple(t.shape), t.stride(), str(t.dtype).split(".")[-1], t.requires_grad, t.device.type

    assert scenario(ember) == scenario(torch)


def _traceable_scenario(lib):
    pd = lib.utils._python_dispatch

    class Pair(lib.Tensor):
        @staticmethod
        def __new__(cls, a, b):
            return lib.Tensor._make_wrapper_subclass(cls, a.shape, dtype=a.dtype, device=a.device)

        def __init__(self, a, b):
            self.a, self.b = a, b

        def __tensor_flatten__(self):
            return ["a", "b"], None

        @staticmethod
        def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
            return Pair(inner["a"], inner["b"])

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            a_args = [x.a if isinstance(x, Pair) else x for x in args]
            b_args = [x.b if isinstance(x, Pair) else x for x in args]
            return Pair(func(*a_args, **(kwargs or {})), func(*b_args, **(kwargs or {})))

    p = Pair(lib.ones(2), lib.zeros(2))
    doubled = pd.transform_subclass(p, lambda name, t: t * 2 + (1 if name == "b" else 0))
    out = p + doubled
    return (
        pd.is_traceable_wrapper_subclass(p),
        pd.is_traceable_wrapper_subclass(lib.ones(1)),
        out.a.tolist(),
        out.b.tolist(),
    )


def test_traceable_wrapper_subclass_helpers():
    assert _traceable_scenario(ember) == _traceable_scenario(torch)


def _aliasing_scenario(lib):
    pd = lib.utils._python_dispatch
    tree_map = lib.utils._pytree.tree_map

    class Wrapper(lib.Tensor):
        @staticmethod
        def __new__(cls, elem):
            return lib.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype, device=elem.device)

        def __init__(self, elem):
            self.elem = elem

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            unwrapped = tree_map(lambda e: e.elem if isinstance(e, Wrapper) else e, args)
            out = func(*unwrapped, **(kwargs or {}))
            wrapped = tree_map(lambda e: Wrapper(e) if isinstance(e, lib.Tensor) else e, out)
            return pd.return_and_correct_aliasing(func, args, kwargs or {}, wrapped)

    w = Wrapper(lib.zeros(3))
    same = w.add_(1) is w
    view = w.view(3)
    return same, type(view).__name__, w.elem.tolist(), w, view


def test_return_and_correct_aliasing():
    ours, theirs = _aliasing_scenario(ember), _aliasing_scenario(torch)
    assert ours[:3] == theirs[:3] == (True, "Wrapper", [1.0, 1.0, 1.0])
    # The view's wrapper shares the input wrapper's storage (PyTorch's storages of wrappers hold no
    # data pointer to compare).
    w, view = ours[3:]
    assert view.untyped_storage() is w.untyped_storage()


def test_enable_reentrant_dispatch_inside_a_handler():
    log = []
    pd = ember.utils._python_dispatch

    class Reenter(pd.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            log.append(str(func))
            with ember.overrides.enable_reentrant_dispatch():
                return func(*args, **(kwargs or {}))

    with Reenter():
        out = ember.ones(2) + 1
    assert out.tolist() == [2.0, 2.0]
    assert "aten.add.Tensor" in log
