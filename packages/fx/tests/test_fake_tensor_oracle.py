"""Fake tensors against PyTorch's: the same errors, reprs, devices, shapes and strides."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
from torch._subclasses import fake_tensor as torch_fake  # noqa: E402

import ember  # noqa: E402
import ember.nn as nn  # noqa: E402
from ember._subclasses import fake_tensor as ember_fake  # noqa: E402

LIBS = {"torch": (torch, torch_fake), "ember": (ember, ember_fake)}


def _quiet():
    context = warnings.catch_warnings()
    context.__enter__()
    warnings.simplefilter("ignore")
    return context


def _outcome(lib_name: str, build, call):
    lib, fake = LIBS[lib_name]
    mode = fake.FakeTensorMode()
    quiet = _quiet()
    try:
        with mode:
            args = build(lib)
        return call(lib, *args), None
    except Exception as error:  # compared with the other library's below
        return None, error
    finally:
        quiet.__exit__(None, None, None)


def _array(lib, shape, dtype="float32"):
    data = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    return lib.tensor(data.tolist(), dtype=getattr(lib, dtype)) if shape else lib.tensor(1.0)


def _error_name(error) -> str | None:
    return None if error is None else type(error).__name__


ERROR_CASES = {
    "item": (lambda lib: (lib.empty(2, 3),), lambda lib, t: t.sum().item()),
    "tolist": (lambda lib: (lib.empty(2, 3),), lambda lib, t: t.tolist()),
    "bool": (lambda lib: (lib.empty(()),), lambda lib, t: bool(t)),
    "bool of many": (lambda lib: (lib.empty(2),), lambda lib, t: bool(t)),
    "nonzero": (lambda lib: (lib.empty(2, 3),), lambda lib, t: lib.nonzero(t)),
    "masked_select": (lambda lib: (lib.empty(2, 3),), lambda lib, t: lib.masked_select(t, t > 0)),
    "bool mask index": (lambda lib: (lib.empty(2, 3),), lambda lib, t: t[t > 0]),
    "unique": (lambda lib: (lib.empty(5),), lambda lib, t: lib.unique(t)),
    "mixed devices": (
        lambda lib: (lib.empty(2, 3, device="cuda"), lib.empty(3)),
        lambda lib, a, b: a + b,
    ),
    "cpu scalar with cuda": (
        lambda lib: (lib.empty(2, 3, device="cuda"), lib.empty(())),
        lambda lib, a, b: (a * b).device,
    ),
    "bad matmul": (lambda lib: (lib.empty(2, 3), lib.empty(4, 5)), lambda lib, a, b: a @ b),
}


@pytest.mark.parametrize("name", list(ERROR_CASES))
def test_errors_match_pytorch(name):
    build, call = ERROR_CASES[name]
    theirs, their_error = _outcome("torch", build, call)
    ours, our_error = _outcome("ember", build, call)
    assert _error_name(our_error) == _error_name(their_error), f"ours {our_error!r}, PyTorch's {their_error!r}"
    if their_error is None:
        assert str(ours) == str(theirs)
    elif isinstance(their_error, torch_fake.DynamicOutputShapeException | torch_fake.DataDependentOutputException):
        their_func = str(their_error.func)
        if their_func != "aten._local_scalar_dense.default":  # Ember names the Python call instead
            assert str(our_error.func) == their_func


def test_a_real_tensor_under_the_mode_raises_as_pytorch():
    for lib, fake in LIBS.values():
        real = lib.ones(3)
        with fake.FakeTensorMode(), pytest.raises(AssertionError, match="Please convert all Tensors"):
            lib.ones(3) + real


SHAPE_CASES = {
    "matmul on cuda": (
        lambda lib: (lib.empty(5, 3, 4, device="cuda"), lib.empty(4, 2, device="cuda")),
        lambda lib, a, b: a @ b,
    ),
    "transpose contiguous": (lambda lib: (lib.empty(3, 4),), lambda lib, t: t.t().contiguous() * 2),
    "permuted pointwise": (lambda lib: (lib.empty(2, 3, 4).permute(2, 0, 1),), lambda lib, t: t.exp()),
    "expand add": (lambda lib: (lib.empty(3, 1), lib.empty(1, 4)), lambda lib, a, b: a.expand(3, 4) + b),
    "sum keepdim": (lambda lib: (lib.empty(3, 4, 5),), lambda lib, t: t.sum(1, keepdim=True)),
    "conv2d": (
        lambda lib: (lib.empty(2, 3, 8, 8), lib.empty(4, 3, 3, 3)),
        lambda lib, x, w: lib.nn.functional.conv2d(x, w, stride=2, padding=1),
    ),
    "slice view": (lambda lib: (lib.empty(6, 5),), lambda lib, t: t[1::2, 2:]),
    "cat on cuda": (
        lambda lib: (lib.empty(2, 3, device="cuda"), lib.empty(4, 3, device="cuda")),
        lambda lib, a, b: lib.cat([a, b]),
    ),
    "to cpu": (lambda lib: (lib.empty(2, 3, device="cuda"),), lambda lib, t: t.t().to("cpu")),
    "int64 factory": (lambda lib: (lib.arange(10),), lambda lib, t: t.view(2, 5)),
    "requires grad": (
        lambda lib: (lib.empty(2, 3, requires_grad=True),),
        lambda lib, t: (t * 2).sum(0),
    ),
}


@pytest.mark.parametrize("name", list(SHAPE_CASES))
def test_metadata_and_repr_match_pytorch(name):
    build, call = SHAPE_CASES[name]
    theirs, their_error = _outcome("torch", build, call)
    ours, our_error = _outcome("ember", build, call)
    assert their_error is None and our_error is None, (our_error, their_error)
    assert isinstance(theirs, torch_fake.FakeTensor) and isinstance(ours, ember_fake.FakeTensor)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.stride() == theirs.stride() and ours.storage_offset() == theirs.storage_offset()
    assert str(ours.device) == str(theirs.device) and ours.untyped_storage().device.type == "meta"
    assert ours.requires_grad == theirs.requires_grad and ours.is_leaf == theirs.is_leaf
    assert repr(ours).replace("ember.", "torch.").split(", grad_fn=")[0] == repr(theirs).split(", grad_fn=")[0]


def test_conversion_matches_pytorch():
    for lib, fake in LIBS.values():
        mode = fake.FakeTensorMode()
        base = lib.randn(4, 4, requires_grad=True)
        fake_view = mode.from_tensor(base[1:])
        fake_base = mode.from_tensor(base)
        param = mode.from_tensor((nn if lib is ember else torch.nn).Parameter(lib.randn(2)))
        summary = (
            fake_view._base is fake_base,
            fake_view.untyped_storage().nbytes(),
            fake_view.is_leaf,
            fake_view.requires_grad,
            fake_base.is_leaf,
            mode.from_tensor(base) is fake_base,
            isinstance(param, fake.FakeTensor),
            param.requires_grad,
            param.is_leaf,
            repr(param).replace("ember.", "torch."),
        )
        if lib is torch:
            expected = summary
        else:
            assert summary == expected


def test_backward_on_fakes_matches_pytorch():
    grads = {}
    for name, (lib, fake) in LIBS.items():
        mode = fake.FakeTensorMode()
        w = mode.from_tensor(lib.randn(3, 4).t().requires_grad_())
        x = mode.from_tensor(lib.randn(5, 4))
        with mode:
            (x @ w).tanh().sum().backward()
        grads[name] = (type(w.grad).__name__, tuple(w.grad.shape), w.grad.stride(), str(w.grad.device))
    assert grads["ember"] == grads["torch"]


def test_tensors_from_data_under_the_mode_are_fakes_as_in_pytorch():
    kinds = {}
    for name, (lib, fake) in LIBS.items():
        array = np.arange(4.0)
        quiet = _quiet()
        try:
            with fake.FakeTensorMode():
                made = (lib.tensor([1, 2]), lib.as_tensor(array), lib.from_numpy(array), lib.as_tensor([1.0]))
        finally:
            quiet.__exit__(None, None, None)
        kinds[name] = [(type(t).__name__, tuple(t.shape), str(t.dtype).split(".")[-1]) for t in made]
    assert kinds["ember"] == kinds["torch"]
