"""Whole modules that PyTorch saved, loaded by Ember: the pickle names PyTorch's classes
(``torch.nn.modules.linear.Linear``), which Ember reads as its own at the same path."""

import io
import pickle

import _saved_tiny_model
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")


def _torch_checkpoint_of_tiny_net():
    """torch.save of a torch module whose class pickles as _saved_tiny_model.TinyNet."""

    class TorchTiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 2)
            self.register_buffer("scale", torch.tensor([2.0, -1.0]))

        def forward(self, x):
            return self.fc(x) * self.scale

    TorchTiny.__module__, TorchTiny.__qualname__, TorchTiny.__name__ = "_saved_tiny_model", "TinyNet", "TinyNet"
    ours = _saved_tiny_model.TinyNet
    _saved_tiny_model.TinyNet = TorchTiny  # pickle checks that the path names this very class
    try:
        torch.manual_seed(0)
        model = TorchTiny()
        buf = io.BytesIO()
        torch.save(model, buf)
    finally:
        _saved_tiny_model.TinyNet = ours
    buf.seek(0)
    return model, buf


def test_torch_saved_module_loads_with_weights_only_false():
    model, buf = _torch_checkpoint_of_tiny_net()
    loaded = ember.load(buf, weights_only=False)
    assert type(loaded) is _saved_tiny_model.TinyNet
    assert type(loaded.fc) is ember.nn.modules.linear.Linear
    assert isinstance(loaded.fc.weight, ember.nn.Parameter)
    x = [[1.0, -2.0, 0.5], [0.0, 3.0, 1.0]]
    expected = model(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(np.asarray(loaded(ember.tensor(x)).tolist()), expected, rtol=1e-6)


def test_torch_saved_module_refused_by_default_and_allowed_by_ember_classes():
    _, buf = _torch_checkpoint_of_tiny_net()
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL _saved_tiny_model\.TinyNet"):
        ember.load(buf)
    buf.seek(0)
    with ember.serialization.safe_globals([_saved_tiny_model.TinyNet, ember.nn.Linear]):
        loaded = ember.load(buf)
    assert type(loaded.fc) is ember.nn.Linear
    assert loaded.scale.tolist() == [2.0, -1.0]


def test_torch_saved_parameter():
    buf = io.BytesIO()
    torch.save(torch.nn.Parameter(torch.tensor([1.5, -2.0])), buf)
    buf.seek(0)
    loaded = ember.load(buf)
    assert type(loaded) is ember.nn.Parameter and loaded.tolist() == [1.5, -2.0]


def test_torch_globals_map_to_ember_paths():
    buf = io.BytesIO()
    torch.save({"opt": torch.optim.SGD, "act": torch.nn.functional.relu, "tanh": torch.nn.Tanh}, buf)
    buf.seek(0)
    loaded = ember.load(buf, weights_only=False)
    assert loaded["opt"] is ember.optim.SGD
    assert loaded["act"] is ember.nn.functional.relu
    assert loaded["tanh"] is ember.nn.Tanh


def test_torch_global_ember_lacks_is_named():
    import torch.ao.quantization.qconfig as qconfig

    buf = io.BytesIO()
    torch.save({"qconfig": qconfig.QConfig}, buf)
    buf.seek(0)
    with pytest.raises(
        pickle.UnpicklingError, match=r"torch\.ao\.quantization\.qconfig\.QConfig, which Ember does not have"
    ):
        ember.load(buf, weights_only=False)
