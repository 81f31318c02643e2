"""``ember.nn.parallel`` against PyTorch's CPU build: DataParallel's outputs, attributes and state
dict keys; DistributedDataParallel resolves to ember.distributed's class."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

import ember  # noqa: E402
from ember import nn  # noqa: E402


def _pair():
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    ours = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    ours.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def test_data_parallel_matches_torch():
    ours, theirs = _pair()
    dp_ours, dp_theirs = nn.DataParallel(ours), torch.nn.DataParallel(theirs)
    assert dp_ours.module is ours and dp_theirs.module is theirs
    assert dp_ours.device_ids == dp_theirs.device_ids == []
    assert dp_ours.dim == 0
    assert list(dp_ours.state_dict()) == list(dp_theirs.state_dict())
    assert repr(dp_ours).splitlines()[0] == repr(dp_theirs).splitlines()[0]
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    out_ours, out_theirs = dp_ours(ember.tensor(x)), dp_theirs(torch.tensor(x))
    np.testing.assert_allclose(np.asarray(out_ours.detach()), out_theirs.detach().numpy(), rtol=1e-6, atol=1e-6)
    # Gradients reach the wrapped module's parameters.
    out_ours.sum().backward()
    out_theirs.sum().backward()
    np.testing.assert_allclose(np.asarray(ours[0].weight.grad), theirs[0].weight.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_data_parallel_state_dict_round_trip():
    _, theirs = _pair()
    state = torch.nn.DataParallel(theirs).state_dict()
    wrapped = nn.DataParallel(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)))
    wrapped.load_state_dict({k: ember.tensor(v.numpy()) for k, v in state.items()})
    np.testing.assert_array_equal(np.asarray(wrapped.module[0].weight.detach()), theirs[0].weight.detach().numpy())


def test_data_parallel_function_needs_a_device():
    with pytest.raises(RuntimeError) as want:
        torch.nn.parallel.data_parallel(torch.nn.Linear(2, 2), torch.ones(1, 2))
    with pytest.raises(RuntimeError) as got:
        nn.parallel.data_parallel(nn.Linear(2, 2), ember.ones(1, 2))
    assert str(got.value) == str(want.value)


def test_distributed_data_parallel_is_ember_distributeds_class():
    from ember.nn.parallel import DistributedDataParallel

    assert issubclass(DistributedDataParallel, nn.Module)
    try:
        from ember.distributed.ddp import DistributedDataParallel as provided
    except ImportError:  # ember-distributed not installed: the name answers with a class that says so
        with pytest.raises(RuntimeError, match=r"ember\.distributed"):
            DistributedDataParallel(nn.Linear(2, 2))
        return
    assert DistributedDataParallel is provided
    assert nn.parallel.distributed.DistributedDataParallel is provided
    with pytest.raises(ValueError, match="init_process_group"):
        DistributedDataParallel(nn.Linear(2, 2))  # no process group yet
