"""``DataParallel`` when a CUDA plugin reports devices (a stand-in plugin; no GPU needed)."""

import importlib

import pytest

from ember import nn

# The module, not the function of the same name that ember.nn.parallel exports.
dp_module = importlib.import_module("ember.nn.parallel.data_parallel")


class FakeCuda:
    def device_count(self):
        return 2


@pytest.fixture
def two_devices(monkeypatch):
    monkeypatch.setattr(dp_module, "_accelerator", lambda: FakeCuda())


def test_device_ids_and_output_device(two_devices):
    with pytest.warns(UserWarning, match="runs the whole batch on cuda:0"):
        wrapped = nn.DataParallel(nn.ReLU())
    assert wrapped.device_ids == [0, 1] and wrapped.output_device == 0
    single = nn.DataParallel(nn.ReLU(), device_ids=[1], output_device=1)
    assert single.device_ids == [1] and single.output_device == 1


def test_parameters_must_be_on_the_first_device(two_devices):
    with pytest.raises(RuntimeError) as error:
        nn.DataParallel(nn.Linear(2, 2), device_ids=[0])
    assert str(error.value) == (
        "module must have its parameters and buffers on device cuda:0 (device_ids[0]) "
        "but found one of them on device: cpu"
    )
