"""Lazy modules against PyTorch: shapes read from the first input, the class they become, their
printing before and after, loading a state dict before the first call, and the same outputs once
they hold the same weights."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

import ember  # noqa: E402

LAZY = [
    ("LazyLinear", (3,), (2, 5)),
    ("LazyConv1d", (4, 3), (2, 3, 7)),
    ("LazyConv2d", (4, 3), (2, 3, 6, 6)),
    ("LazyConv3d", (4, 2), (2, 3, 4, 4, 4)),
    ("LazyConvTranspose1d", (4, 3), (3, 5)),
    ("LazyConvTranspose2d", (4, 3), (2, 3, 4, 4)),
    ("LazyConvTranspose3d", (4, 2), (2, 3, 3, 3, 3)),
    ("LazyBatchNorm1d", (), (4, 3)),
    ("LazyBatchNorm2d", (), (2, 3, 4, 4)),
    ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (), (2, 3, 5)),
    ("LazyInstanceNorm2d", (), (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), (2, 3, 2, 3, 2)),
]


def _repr(module) -> str:
    return repr(module).replace("ember.", "torch.")


@pytest.mark.filterwarnings("ignore:Lazy modules are a new feature")
@pytest.mark.parametrize("name,args,shape", LAZY, ids=[spec[0] for spec in LAZY])
def test_lazy_module_initializes_like_torch(name, args, shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    theirs, ours = getattr(torch.nn, name)(*args), getattr(ember.nn, name)(*args)
    assert _repr(ours) == repr(theirs)
    assert ours.has_uninitialized_params()
    theirs(torch.from_numpy(x))
    ours(ember.tensor(x))
    assert type(ours).__name__ == type(theirs).__name__ == name[len("Lazy") :]
    assert _repr(ours) == repr(theirs)
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in theirs.state_dict().items()
    }
    fresh = getattr(ember.nn, name)(*args)
    fresh.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    if "InstanceNorm" in name:
        # As in PyTorch: loading shapes the parameters but leaves num_features at 0, which the first call refuses.
        reloaded = getattr(torch.nn, name)(*args)
        reloaded.load_state_dict(theirs.state_dict())
        with pytest.raises(ValueError) as theirs_error:
            reloaded(torch.from_numpy(x))
        with pytest.raises(ValueError) as ours_error:
            fresh(ember.tensor(x))
        assert str(ours_error.value) == str(theirs_error.value)
        return
    theirs.eval()
    fresh.eval()
    with torch.no_grad():
        expected = theirs(torch.from_numpy(x))
    with ember.no_grad():
        got = fresh(ember.tensor(x))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)
    assert type(fresh).__name__ == name[len("Lazy") :]


@pytest.mark.filterwarnings("ignore:Lazy modules are a new feature")
def test_lazy_placeholders():
    p = ember.nn.UninitializedParameter()
    assert isinstance(p, ember.nn.Parameter) and repr(p) == "<UninitializedParameter>"
    p.materialize((2, 3))
    assert type(p) is ember.nn.Parameter and tuple(p.shape) == (2, 3) and p.requires_grad
    b = ember.nn.UninitializedBuffer()
    b.materialize(4, dtype=ember.float64)
    assert type(b) is ember.Tensor and b.dtype is ember.float64
    layer = ember.nn.LazyLinear(2)
    with pytest.raises(RuntimeError, match="cannot be serialized"):
        import pickle

        pickle.dumps(layer.weight)
