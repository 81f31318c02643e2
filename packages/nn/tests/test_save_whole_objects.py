"""``ember.save`` of whole objects (modules, a bare Parameter, any picklable object holding tensors)
and ``ember.load``'s refusal of them by default, with the allow-list that lets them through."""

import io
import pickle

import pytest
from _saved_tiny_model import Holder, TinyNet

import ember


def _saved(obj) -> io.BytesIO:
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return buf


@pytest.fixture(autouse=True)
def no_safe_globals():
    ember.serialization.clear_safe_globals()
    yield
    ember.serialization.clear_safe_globals()


def test_whole_module_round_trip_with_weights_only_false():
    model = TinyNet()
    loaded = ember.load(_saved(model), weights_only=False)
    assert type(loaded) is TinyNet and type(loaded.fc) is ember.nn.Linear
    assert isinstance(loaded.fc.weight, ember.nn.Parameter) and loaded.fc.weight.requires_grad
    x = ember.tensor([[1.0, -2.0, 0.5]])
    assert loaded(x).tolist() == model(x).tolist()
    assert list(loaded.state_dict()) == list(model.state_dict())


def test_default_load_refuses_with_the_name_and_the_fix():
    with pytest.raises(pickle.UnpicklingError) as info:
        ember.load(_saved(TinyNet()))
    message = str(info.value)
    assert message.startswith("Weights only load failed.")
    assert "GLOBAL _saved_tiny_model.TinyNet was not an allowed global by default" in message
    assert "ember.serialization.add_safe_globals([_saved_tiny_model.TinyNet])" in message
    assert "weights_only` set to `False`" in message


def test_safe_globals_context_manager():
    buf = _saved(TinyNet())
    with ember.serialization.safe_globals([TinyNet, ember.nn.Linear]):
        assert set(ember.serialization.get_safe_globals()) == {TinyNet, ember.nn.Linear}
        loaded = ember.load(buf)
    assert type(loaded) is TinyNet
    assert ember.serialization.get_safe_globals() == []
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="TinyNet"):
        ember.load(buf)


def test_add_safe_globals_names_and_clear():
    ember.serialization.add_safe_globals([(TinyNet, "_saved_tiny_model.TinyNet"), ember.nn.Linear])
    loaded = ember.load(_saved(TinyNet()))
    assert type(loaded.fc) is ember.nn.Linear
    ember.serialization.clear_safe_globals()
    with pytest.raises(pickle.UnpicklingError):
        ember.load(_saved(TinyNet()))


def test_allowing_the_outer_class_alone_is_not_enough():
    with ember.serialization.safe_globals([TinyNet]), pytest.raises(pickle.UnpicklingError, match="Linear"):
        ember.load(_saved(TinyNet()))


def test_bare_parameter_loads_by_default():
    p = ember.nn.Parameter(ember.tensor([1.0, 2.0]))
    loaded = ember.load(_saved(p))
    assert type(loaded) is ember.nn.Parameter and loaded.requires_grad
    assert loaded.tolist() == [1.0, 2.0]
    frozen = ember.load(_saved(ember.nn.Parameter(ember.ones(1), requires_grad=False)))
    assert not frozen.requires_grad


def test_object_holding_tensors():
    shared = ember.arange(6.0)
    obj = Holder({"a": shared, "b": shared[2:]}, note="hello")
    with pytest.raises(pickle.UnpicklingError, match="Holder"):
        ember.load(_saved(obj))
    loaded = ember.load(_saved(obj), weights_only=False)
    assert loaded.note == "hello"
    assert loaded.weights["b"].tolist() == [2.0, 3.0, 4.0, 5.0]
    loaded.weights["a"][3] = 100.0  # views saved together still share storage
    assert loaded.weights["b"][1].item() == 100.0
    with ember.serialization.safe_globals([Holder]):
        assert ember.load(_saved(obj)).note == "hello"


def test_optimizer_state_and_modules_in_one_checkpoint():
    model = TinyNet()
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(ember.ones(1, 3)).sum().backward()
    opt.step()
    checkpoint = {"model": model, "optim": opt.state_dict(), "epoch": 3}
    loaded = ember.load(_saved(checkpoint), weights_only=False)
    assert loaded["epoch"] == 3
    assert loaded["model"].fc.weight.tolist() == model.fc.weight.tolist()
    assert loaded["optim"]["param_groups"][0]["momentum"] == 0.9
