"""Fake tensors: aliasing and versions, conversion, autograd, devices, factories and errors."""

from __future__ import annotations

import copy
import resource
import time

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember._guards import detect_fake_mode
from ember._subclasses import FakeTensor, FakeTensorMode
from ember._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensorDeviceMismatchError,
    UnsupportedFakeTensorException,
    UnsupportedOperatorException,
    is_fake,
    maybe_get_fake_mode,
    unset_fake_temporarily,
)
from ember.core.devices import registered_backends
from ember.library import Library
from ember.ops import aten


def _meta_storage(t) -> bool:
    s = t._storage
    return s.data is None and s.device.type == "meta" and t.untyped_storage().device.type == "meta"


# -- aliasing, views and versions ------------------------------------------------------------------


def test_a_view_of_a_fake_is_a_fake_of_the_same_storage():
    with FakeTensorMode():
        a = ember.empty(4, 6)
        v = a.view(6, 4)
        s = v[1:, ::2]
    assert isinstance(v, FakeTensor) and isinstance(s, FakeTensor)
    assert v.untyped_storage() is a.untyped_storage() and s.untyped_storage() is a.untyped_storage()
    assert v._base is a and s._base is a
    assert (s.shape, s.stride(), s.storage_offset()) == ((5, 2), (4, 2), 4)
    assert _meta_storage(a) and a.device == ember.device("cpu")


def test_in_place_on_a_view_bumps_the_version_the_base_reads():
    with FakeTensorMode():
        a = ember.zeros(3, 4)
        row = a[1]
        before = a._version
        row.add_(1)
        assert a._version == before + 1 and row._version == a._version
        a.mul_(2)
        assert row._version == before + 2


def test_in_place_metadata_changes_reach_the_fake():
    with FakeTensorMode():
        a = ember.empty(2, 3)
        assert a.t_() is a
        assert (a.shape, a.stride()) == ((3, 2), (1, 3))
        out = ember.empty(0)
        result = ember.add(ember.ones(5), 1, out=out)
    assert result is out and out.shape == (5,) and out.stride() == (1,)


def test_ops_on_fakes_outside_the_mode_give_fakes_of_that_mode():
    mode = FakeTensorMode()
    x = mode.from_tensor(ember.randn(2, 3))
    y = (x * 2).sum(0)
    assert isinstance(y, FakeTensor) and y.fake_mode is mode and y.shape == (3,)
    with mode, mode:  # entering the mode again is allowed
        assert isinstance(x + 1, FakeTensor)


# -- conversion ----------------------------------------------------------------------------------------


def test_from_tensor_is_memoized_and_keeps_storage_identity_of_views():
    mode = FakeTensorMode()
    base = ember.randn(4, 4)
    view = base[1:, :2]
    other = base.t()
    fake_view = mode.from_tensor(view)
    fake_base = mode.from_tensor(base)
    assert mode.from_tensor(base) is fake_base and mode.from_tensor(view) is fake_view
    assert fake_view._base is fake_base
    assert mode.from_tensor(other).untyped_storage() is fake_base.untyped_storage()
    assert (fake_view.shape, fake_view.stride(), fake_view.storage_offset()) == ((3, 2), (4, 1), 4)
    assert mode.from_tensor(fake_base) is fake_base
    # A view through the fake base shares the fake view's storage, as the real ones do.
    with mode:
        assert fake_base[1:].untyped_storage() is fake_view.untyped_storage()


def test_from_tensor_keeps_requires_grad_and_leafness():
    mode = FakeTensorMode()
    leaf = ember.randn(3, requires_grad=True)
    nonleaf = leaf * 2
    view = leaf[1:]
    plain = ember.randn(3)
    fake_leaf, fake_nonleaf, fake_view = (mode.from_tensor(t) for t in (leaf, nonleaf, view))
    assert fake_leaf.requires_grad and fake_leaf.is_leaf
    assert fake_nonleaf.requires_grad and not fake_nonleaf.is_leaf
    assert fake_view.requires_grad and not fake_view.is_leaf and fake_view._base is fake_leaf
    fake_plain = mode.from_tensor(plain)
    assert not fake_plain.requires_grad and fake_plain.is_leaf


def test_a_parameter_stays_a_parameter():
    mode = FakeTensorMode()
    p = nn.Parameter(ember.randn(2, 3))
    fp = mode.from_tensor(p)
    assert isinstance(fp, nn.Parameter) and isinstance(fp, FakeTensor)
    assert fp.requires_grad and fp.is_leaf and fp.shape == (2, 3)
    assert repr(fp) == "Parameter(FakeTensor(..., size=(2, 3), requires_grad=True))"


def test_from_tensor_refuses_other_dispatching_subclasses():
    from ember.func._vmap.batched import wrap

    with pytest.raises(UnsupportedFakeTensorException):
        FakeTensorMode().from_tensor(wrap(ember.randn(2, 3), 0, 1))


def test_fakes_of_two_modes_do_not_mix():
    a = FakeTensorMode().from_tensor(ember.randn(2))
    b = FakeTensorMode().from_tensor(ember.randn(2))
    with pytest.raises(AssertionError, match="Mixing fake modes"):
        a + b


# -- autograd ------------------------------------------------------------------------------------------


def test_backward_on_fakes_gives_fake_gradients():
    mode = FakeTensorMode()
    w = mode.from_tensor(nn.Parameter(ember.randn(4, 3)))
    b = mode.from_tensor(nn.Parameter(ember.randn(4)))
    x = mode.from_tensor(ember.randn(5, 3))
    with mode:
        loss = ember.nn.functional.linear(x, w, b).relu().pow(2).mean()
        assert loss.grad_fn is not None and loss.shape == ()
        loss.backward()
    for param in (w, b):
        assert isinstance(param.grad, FakeTensor)
        assert param.grad.shape == param.shape and param.grad.stride() == param.stride()
        assert _meta_storage(param.grad)
    assert x.grad is None


def test_backward_on_fakes_of_a_transposed_leaf_keeps_its_layout():
    mode = FakeTensorMode()
    w = mode.from_tensor(ember.randn(3, 4).t().requires_grad_())
    (w * 3).sum().backward()
    assert w.grad.shape == (4, 3) and w.grad.stride() == (1, 4)


# -- devices -------------------------------------------------------------------------------------------


def test_cuda_fakes_need_no_plugin():
    with FakeTensorMode():
        a = ember.zeros(3, 4, device="cuda")
        b = ember.randn(4, 2, device="cuda")
        c = a @ b
        d = c.cpu()
    if "cuda" not in registered_backends():
        with pytest.raises(RuntimeError, match="device type 'cuda' is not available"):
            ember.zeros(3, device="cuda")  # a real cuda tensor needs the plugin; a fake did not
    assert a.device == ember.device("cuda", 0) and a.fake_device == ember.device("cuda:0") and a.is_cuda
    assert c.device == ember.device("cuda", 0) and c.shape == (3, 2)
    assert d.device == ember.device("cpu") and _meta_storage(c)
    assert repr(c) == "FakeTensor(..., device='cuda:0', size=(3, 2))"


def test_a_cpu_scalar_mixes_with_cuda_and_other_cpu_tensors_do_not():
    with FakeTensorMode():
        a = ember.ones(2, 3, device="cuda")
        assert (ember.ones((), device="cpu") * a).device == ember.device("cuda:0")
        with pytest.raises(FakeTensorDeviceMismatchError, match=r"same device.*cuda:0 and cpu"):
            a + ember.ones(3)
        # copy_ moves between devices
        cpu = ember.empty(2, 3)
        assert cpu.copy_(a) is cpu and cpu.device.type == "cpu"


# -- factories -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, shape, dtype",
    [
        (lambda: ember.zeros(3, device="cuda"), (3,), ember.float32),
        (lambda: ember.empty(2, 5, dtype=ember.int64), (2, 5), ember.int64),
        (lambda: ember.randn(4, 4, dtype=ember.float64), (4, 4), ember.float64),
        (lambda: ember.arange(10), (10,), ember.int64),
        (lambda: ember.full((2, 2), 7), (2, 2), ember.int64),
        (lambda: ember.empty_strided((2, 3), (1, 2)), (2, 3), ember.float32),
        (lambda: ember.ones_like(ember.empty(3, 1)), (3, 1), ember.float32),
    ],
)
def test_factories_under_the_mode_give_fakes(make, shape, dtype):
    with FakeTensorMode():
        t = make()
    assert isinstance(t, FakeTensor) and _meta_storage(t)
    assert (t.shape, t.dtype) == (shape, dtype)


def test_a_huge_matmul_allocates_nothing():
    mode = FakeTensorMode()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with mode:
        a = ember.empty(200_000, 200_000)
        b = ember.empty(200_000, 200_000)
        c = a @ b
        d = (c + a).relu().sum(0)
    elapsed = time.perf_counter() - start
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert c.shape == (200_000, 200_000) and d.shape == (200_000,)
    assert c.untyped_storage().nbytes() == 200_000 * 200_000 * 4
    assert elapsed < 2.0 and grown_kib < 50_000  # 160 GB each if they were real


# -- errors --------------------------------------------------------------------------------------------


def test_a_real_tensor_under_the_mode_is_refused():
    real = ember.ones(3)
    with FakeTensorMode() as mode:
        fake = ember.ones(3)
        with pytest.raises(AssertionError, match="Please convert all Tensors to FakeTensors first"):
            fake + real
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        out = real + ember.ones(3)
        assert isinstance(out, FakeTensor) and out.fake_mode is mode
        assert mode.from_tensor(real) is not None


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda t: t.sum().item(), "Tensor.item()"),
        (lambda t: t.tolist(), "Tensor.tolist()"),
        (lambda t: bool(t.sum()), "bool(Tensor)"),
        (lambda t: int(t.sum()), "int(Tensor)"),
        (lambda t: float(t.sum()), "float(Tensor)"),
        (lambda t: t.numpy(), "Tensor.numpy()"),
    ],
)
def test_reading_values_raises_a_named_error(call, name):
    with FakeTensorMode():
        t = ember.ones(2, 3)
        with pytest.raises(DataDependentOutputException) as info:
            call(t)
    assert info.value.func == name and name in str(info.value)
    assert isinstance(info.value, RuntimeError)


def test_repr_shows_metadata_only():
    with FakeTensorMode():
        t = ember.empty(2, 3, dtype=ember.int64)
        g = ember.empty(2, device="cuda", requires_grad=True)
    assert repr(t) == "FakeTensor(..., size=(2, 3), dtype=ember.int64)"
    assert repr(g) == "FakeTensor(..., device='cuda:0', size=(2,), requires_grad=True)"
    assert str(t) == repr(t)


@pytest.mark.parametrize(
    "call, op",
    [
        (lambda t: ember.nonzero(t), aten.nonzero.default),
        (lambda t: t.masked_select(t > 0), aten.masked_select.default),
        (lambda t: ember.unique(t), aten._unique2.default),
        (lambda t: t[t > 0], aten.nonzero.default),  # the mask's nonzero, as PyTorch names it
        (lambda t: ember.nn.functional.one_hot(t.long()), aten.one_hot.default),
    ],
)
def test_data_dependent_shapes_raise(call, op):
    with FakeTensorMode():
        t = ember.empty(3, 4)
        with pytest.raises(DynamicOutputShapeException) as info:
            call(t)
    assert info.value.func is op


def test_one_hot_with_num_classes_runs():
    with FakeTensorMode():
        assert ember.nn.functional.one_hot(ember.zeros(3, dtype=ember.int64), 5).shape == (3, 5)


@pytest.fixture
def lib():
    library = Library("fake_tensor_test", "DEF")
    library.define("cpu_only(Tensor x) -> Tensor")
    library.define("view_only(Tensor(a) x) -> Tensor(a)")
    library.define("nowhere(Tensor x) -> Tensor")
    library.impl("cpu_only", lambda x: x * 2 + 1, "CPU")
    library.impl("view_only", lambda x: x[1:], "CPU")
    yield library
    library._destroy()


def test_an_op_with_only_a_cpu_kernel_falls_back_or_is_unsupported(lib):
    op = ember.ops.fake_tensor_test.cpu_only.default
    with FakeTensorMode() as mode:
        out = op(ember.empty(2, 3).t())
        assert isinstance(out, FakeTensor) and out.fake_mode is mode and out.shape == (3, 2)
        with pytest.raises(UnsupportedOperatorException):
            ember.ops.fake_tensor_test.view_only.default(ember.empty(3))  # the fallback cannot alias
        with pytest.raises(UnsupportedOperatorException) as info:
            ember.ops.fake_tensor_test.nowhere.default(ember.empty(3))
    assert info.value.func is ember.ops.fake_tensor_test.nowhere.default
    with FakeTensorMode(allow_fallback_kernels=False), pytest.raises(UnsupportedOperatorException):
        op(ember.empty(2))


def test_an_op_with_only_a_decomposition_runs_it_under_the_mode(lib):
    lib.define("decomposed(Tensor x) -> Tensor")
    op = ember.ops.fake_tensor_test.decomposed.default
    op.register_decomposition(lambda x: ember.cat([x, x]).t())
    with FakeTensorMode():
        out = op(ember.empty(2, 3, device="cuda"))
    assert isinstance(out, FakeTensor) and (out.shape, out.stride(), out.device.type) == ((3, 4), (1, 3), "cuda")


# -- mode helpers --------------------------------------------------------------------------------------


def test_unset_fake_temporarily_and_detect_fake_mode():
    mode = FakeTensorMode()
    fake = mode.from_tensor(ember.ones(2))
    assert detect_fake_mode([ember.ones(1)]) is None
    assert detect_fake_mode([1, (fake,)]) is mode
    with mode:
        assert detect_fake_mode() is mode
        with unset_fake_temporarily() as unset:
            assert unset is mode and detect_fake_mode() is None
            assert type(ember.ones(2)) is ember.Tensor
        assert isinstance(ember.ones(2), FakeTensor)
    other = FakeTensorMode().from_tensor(ember.ones(2))
    with pytest.raises(AssertionError, match="doesn't match"):
        detect_fake_mode([fake, other])


def test_mode_settings():
    mode = FakeTensorMode()
    assert mode.shape_env is None and mode.static_shapes and mode.allow_fallback_kernels
    assert not mode.allow_non_fake_inputs
    assert FakeTensorMode(static_shapes=False).static_shapes is False


def test_a_module_built_under_the_mode_has_fake_parameters_and_trains():
    with FakeTensorMode() as mode:
        model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2)).to("cuda")
        params = dict(model.named_parameters())
        assert sorted(params) == ["0.bias", "0.weight", "2.bias", "2.weight"]
        for p in params.values():
            assert isinstance(p, nn.Parameter) and isinstance(p, FakeTensor) and p.fake_mode is mode
            assert p.device == ember.device("cuda:0") and p.requires_grad and p.is_leaf
        model(ember.randn(5, 3, device="cuda")).pow(2).mean().backward()
        optimizer = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        versions = {name: p._version for name, p in params.items()}
        optimizer.step()
    for name, p in params.items():
        assert isinstance(p.grad, FakeTensor) and p.grad.shape == p.shape and p.grad.device == p.device
        assert p._version > versions[name]


def test_tensors_made_from_data_under_the_mode_are_fakes():
    array = np.arange(6.0).reshape(2, 3)
    with FakeTensorMode() as mode:
        made = [ember.tensor([1, 2]), ember.as_tensor(array), ember.from_numpy(array), ember.tensor(1.0, device="cuda")]
        total = made[1] + made[2]
    assert all(isinstance(t, FakeTensor) and t.fake_mode is mode for t in made)
    assert [t.shape for t in made] == [(2,), (2, 3), (2, 3), ()] and made[3].device == ember.device("cuda:0")
    assert isinstance(total, FakeTensor)
    assert type(ember.tensor([1, 2])) is ember.Tensor  # outside the mode: real


def test_deepcopy_gives_fakes_on_new_storage():
    with FakeTensorMode() as mode:
        model = nn.Linear(3, 2)
        copied = copy.deepcopy(model)
    for p, q in zip(model.parameters(), copied.parameters(), strict=True):
        assert isinstance(q, nn.Parameter) and isinstance(q, FakeTensor) and q.fake_mode is mode
        assert q.untyped_storage() is not p.untyped_storage() and (q.shape, q.requires_grad) == (p.shape, True)


def test_tensors_sharing_a_non_leaf_s_storage_share_its_fake_s():
    mode = FakeTensorMode()
    y = ember.randn(3, requires_grad=True) * 2
    fy = mode.from_tensor(y)
    alias = mode.from_tensor(y.detach())
    assert not fy.is_leaf and alias.untyped_storage() is fy.untyped_storage()


def test_vmap_and_grad_transforms_run_on_fakes():
    from ember.func import grad, vmap

    mode = FakeTensorMode()
    x = mode.from_tensor(ember.randn(3, 4))
    with mode:
        summed = vmap(lambda t: (t * 2).sum(0))(x)
        per_sample = vmap(grad(lambda t: t.sin().sum()))(x)
    assert isinstance(summed, FakeTensor) and summed.shape == (3,)
    assert isinstance(per_sample, FakeTensor) and per_sample.shape == (3, 4)
    assert is_fake(per_sample) and not is_fake(ember.ones(1)) and maybe_get_fake_mode(x) is mode


def test_a_fake_made_over_a_meta_tensor():
    mode = FakeTensorMode()
    elem = ember.empty(3, 4, device="meta").t()
    fake = FakeTensor(mode, elem, "cuda")
    assert fake.untyped_storage() is elem.untyped_storage() and fake.fake_mode is mode
    assert (fake.shape, fake.stride(), fake.device) == ((4, 3), (1, 4), ember.device("cuda:0"))
    with pytest.raises(TypeError, match="meta tensor"):
        FakeTensor(mode, ember.empty(2), "cpu")
