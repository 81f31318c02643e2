"""Tensors from Python data, NumPy and DLPack, against PyTorch: dtype inference, memory sharing
(write through one side, read through the other) and the errors for data that cannot be a tensor."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from opinfo import ORACLE_MISSING, to_numpy, torch

import ember

pytestmark = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _name(t) -> str:
    return str(t.dtype).split(".")[-1]


DATA = [
    True,
    [True, False],
    3,
    [1, 2, 3],
    2.5,
    [1, 2.5],
    [True, 2],
    [[1, 2], [3, 4]],
    [[True], [2.5]],
    1 + 2j,
    [1, 2j],
    [],
    [[]],
    [[], []],
    ((1, 2), (3, 4)),
    [(1, 2), [3, 4]],
    np.float32(1.5),
    np.int16(3),
    np.bool_(True),
    np.array([1, 2], dtype=np.int32),
    np.array([[1.5]], dtype=np.float16),
    np.array(2.5),
    np.array([1 + 1j], dtype=np.complex64),
    np.array([1, 2], dtype=np.uint8),
    [np.float32(1.5), np.float32(2.5)],
    [np.array([1, 2]), np.array([3, 4])],
    -(2**63),
    [ember.tensor(1), 2.5],
    [ember.tensor(1, dtype=ember.int8), ember.tensor(2, dtype=ember.int16)],
    [ember.tensor([1.5]), ember.tensor([[2.5]])],
    [[ember.tensor([1.0])], [ember.tensor(2.0)]],
    [np.int8(1), True],
    (np.float64(1), 2),
    [np.float16(1.5), 2.0],
]


def _as_torch(data):
    if isinstance(data, ember.Tensor):
        return torch.from_numpy(data.numpy().copy())
    if isinstance(data, list):
        return [_as_torch(x) for x in data]
    return data


@pytest.mark.parametrize("data", DATA, ids=repr)
def test_tensor_infers_dtype_like_pytorch(data):
    ours = ember.tensor(data)
    theirs = torch.tensor(_as_torch(data))
    assert _name(ours) == _name(theirs)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.is_contiguous() and ours.stride() == theirs.stride()
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


@pytest.mark.parametrize("data", [[1, 2.5], [[1, 2]], 3, [True], np.array([1, 2])], ids=repr)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8", "uint8", "bool", "complex64", "float64"])
def test_tensor_with_dtype(data, dtype):
    theirs = torch.tensor(data, dtype=getattr(torch, dtype))
    ours = ember.tensor(data, dtype=getattr(ember, dtype))
    assert _name(ours) == dtype
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


@pytest.mark.parametrize(
    "data, dtype",
    [
        ([300], "uint8"),
        ([-1], "uint8"),
        ([-255, 255], "uint8"),
        ([-256], "uint8"),
        ([128], "int8"),
        ([1.7, -2.5], "int64"),
        ([float("nan")], "int32"),
        ([float("inf")], "int64"),
        ([1e10], "int32"),
        ([3 + 0j], "int64"),
        ([3 + 1j], "int64"),
        ([float("nan"), 2], "bool"),
        ([2**63 - 1], "int64"),
        (2**63, None),
        ([2**64], "float64"),
    ],
    ids=repr,
)
def test_tensor_checks_conversions_like_pytorch(data, dtype):
    kwargs = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    try:
        theirs = torch.tensor(data, **kwargs)
    except Exception as error:
        with pytest.raises(type(error)):
            ember.tensor(data, **({} if dtype is None else {"dtype": getattr(ember, dtype)}))
        return
    ours = ember.tensor(data, **({} if dtype is None else {"dtype": getattr(ember, dtype)}))
    assert _name(ours) == _name(theirs)
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


def test_tensors_inside_lists_must_hold_one_element():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="one element"):
            lib.tensor([lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])])


def test_tensor_copies_and_options():
    array = np.array([1.0, 2.0])
    t = ember.tensor(array)
    array[0] = 5
    assert t.tolist() == [1.0, 2.0]
    source = ember.tensor([1.0, 2.0])
    copy = ember.tensor(source)
    source.fill_(0)
    assert copy.tolist() == [1.0, 2.0]
    assert ember.tensor([1.0], requires_grad=True).requires_grad
    assert not ember.tensor([1.0]).requires_grad
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="floating point"):
            lib.tensor([1, 2], requires_grad=True)
    meta = ember.tensor([1, 2], device="meta")
    assert meta.device == ember.device("meta") and meta.dtype is ember.int64 and meta.shape == (2,)
    assert ember.tensor(1.5, device=ember.device("cpu")).device.type == "cpu"
    assert ember.tensor(3, dtype=float).dtype is ember.float64


@pytest.mark.parametrize(
    "data",
    [[[1, 2], [3]], [[1], 2], [1, [2]], [[[1, 2]], [[3]]]],
    ids=repr,
)
def test_ragged_data_raises_like_pytorch(data):
    """Ragged sequences of one depth are a ValueError; a number next to a sequence a TypeError."""
    try:
        torch.tensor(data)
    except (TypeError, ValueError) as error:
        with pytest.raises(type(error)):
            ember.tensor(data)
    else:
        raise AssertionError("PyTorch accepted ragged data")


def test_ragged_data_of_one_depth_is_a_value_error():
    data = [[1, 2], [3]]
    with pytest.raises(ValueError):
        torch.tensor(data)
    with pytest.raises(ValueError):
        ember.tensor(data)


@pytest.mark.parametrize("data", ["abc", [1, "2"], [None], object(), [1, None]], ids=repr)
def test_non_numbers_raise_like_pytorch(data):
    with pytest.raises((TypeError, RuntimeError)) as error:
        torch.tensor(data)
    with pytest.raises(error.type):
        ember.tensor(data)


def test_strings_are_a_type_error():
    # PyTorch raises ValueError("too many dimensions 'str'") for a list of strings only; a string is
    # never a number, so we say so with the same TypeError wherever it is.
    for data in ("abc", ["a", "b"], [[1], ["2"]]):
        with pytest.raises(TypeError, match="str"):
            ember.tensor(data)


def test_as_tensor_shares_memory_when_it_can():
    array = np.arange(4.0)
    ours, theirs = ember.as_tensor(array), torch.as_tensor(array)
    array[0] = 7
    assert ours.tolist() == theirs.tolist() == [7.0, 1.0, 2.0, 3.0]
    converted = ember.as_tensor(array, dtype=ember.float32)
    array[1] = 8
    assert converted.tolist()[1] == 1.0 and converted.dtype is ember.float32
    same = ember.as_tensor(array, device="cpu")
    also_same = ember.as_tensor(array, device=ember.device("cpu"))
    array[2] = 9
    assert same.tolist()[2] == 9.0 and also_same.tolist()[2] == 9.0
    t = ember.tensor([1, 2])
    assert ember.as_tensor(t) is t
    assert ember.as_tensor(t, dtype=ember.int64) is t
    assert ember.as_tensor(t, dtype=ember.float32).dtype is ember.float32
    assert ember.as_tensor([1, 2.5]).dtype is ember.float32
    assert ember.as_tensor(array, device="meta").device.type == "meta"


def test_from_numpy_shares_memory_both_ways():
    array = np.arange(12, dtype=np.int32).reshape(3, 4)
    ours, theirs = ember.from_numpy(array), torch.from_numpy(array)
    assert ours.dtype is ember.int32 and ours.stride() == theirs.stride()
    array[0, 0] = 100
    assert ours[0, 0].item() == 100
    ours[1, 1] = -5
    assert array[1, 1] == -5
    ours.add_(1)
    assert array[0, 0] == 101
    assert ours.numpy() is not None and np.shares_memory(ours.numpy(), array)
    out = ours.numpy()
    out[2, 3] = 42
    assert ours[2, 3].item() == 42


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a.T,
        lambda a: a[:, ::2],
        lambda a: a[1:, 1:3],
        lambda a: a[::2],
        lambda a: np.broadcast_to(a[:1], (3, 4)),
        lambda a: a[:0],
        lambda a: np.array(a[1, 1]),
    ],
    ids=["transposed", "step", "window", "rows", "broadcast", "empty", "scalar"],
)
def test_from_numpy_non_contiguous(make):
    base = np.arange(12.0).reshape(3, 4)
    array = make(base)
    ours, theirs = ember.from_numpy(array), torch.from_numpy(array)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.stride() == theirs.stride()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    if array.size and array.flags.writeable:
        base += 1
        np.testing.assert_array_equal(ours.numpy(), array)
        np.testing.assert_array_equal(ours.clone().numpy(), theirs.numpy())


@pytest.mark.parametrize("make", [lambda a: a[::-1], lambda a: a[:, ::-2]], ids=["reversed", "reversed-step"])
def test_from_numpy_negative_strides(make):
    array = make(np.arange(12.0).reshape(3, 4))
    with pytest.raises(ValueError):
        torch.from_numpy(array)
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(array)


def test_from_numpy_errors():
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.from_numpy([1, 2])
        with pytest.raises(TypeError):
            lib.from_numpy(np.array(["a"]))


def test_numpy_shares_memory_and_refuses_what_it_cannot_show():
    t = ember.zeros(2, 3)
    array = t.numpy()
    array[1, 2] = 4
    assert t[1, 2].item() == 4.0
    t.fill_(1)
    assert array[0, 0] == 1.0
    view = t.t().numpy()
    assert view.shape == (3, 2) and np.shares_memory(view, array)
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.zeros(2, dtype=lib.bfloat16).numpy()
        with pytest.raises(RuntimeError):
            lib.zeros(2, requires_grad=True).numpy()
    assert ember.zeros(2, dtype=ember.bfloat16).numpy(force=True).dtype == ml_dtypes.bfloat16
    assert np.asarray(ember.tensor([1, 2])).tolist() == [1, 2]
    with pytest.raises(NotImplementedError):
        ember.zeros(2, device="meta").numpy()


def test_dlpack_from_numpy_and_back():
    array = np.arange(6.0).reshape(2, 3)
    t = ember.from_dlpack(array)
    array[0, 0] = 10
    assert t[0, 0].item() == 10.0
    t[1, 1] = -1
    assert array[1, 1] == -1
    back = np.from_dlpack(t)
    back[0, 1] = 20
    assert t[0, 1].item() == 20.0
    transposed = np.from_dlpack(t.t())
    assert transposed.shape == (3, 2) and transposed[1, 0] == 20.0


def test_dlpack_with_torch_both_ways():
    theirs = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    ours = ember.from_dlpack(theirs)
    assert ours.dtype is ember.float32 and tuple(ours.shape) == (2, 3)
    theirs[0, 0] = 10
    assert ours[0, 0].item() == 10.0
    ours[1, 2] = -3
    assert theirs[1, 2].item() == -3.0

    ours = ember.arange(12, dtype=ember.int64).reshape(3, 4)[:, 1:3]
    theirs = torch.from_dlpack(ours)
    assert theirs.stride() == ours.stride() and tuple(theirs.shape) == (3, 2)
    assert theirs.tolist() == ours.tolist()
    theirs[0, 0] = 99
    assert ours[0, 0].item() == 99
    ours[2, 1] = -7
    assert theirs[2, 1].item() == -7

    flags = ember.from_dlpack(torch.tensor([True, False]))
    assert flags.dtype is ember.bool and flags.tolist() == [True, False]
    assert ember.from_dlpack(ours) is ours
    with pytest.raises(RuntimeError):
        torch.from_dlpack(ember.zeros(2, requires_grad=True))
    with pytest.raises(BufferError):
        ember.zeros(2, device="meta").__dlpack_device__()


def test_legacy_constructor():
    assert ember.Tensor([1, 2]).dtype is ember.float32 and ember.Tensor([1, 2]).tolist() == [1.0, 2.0]
    assert tuple(ember.Tensor(2, 3).shape) == tuple(torch.Tensor(2, 3).shape)
    assert ember.Tensor(2, 3).dtype is ember.float32


def test_a_dispatch_mode_sees_tensors_made_from_data_through_lift_fresh():
    from ember.core.dispatch import DispatchMode
    from ember.ops import aten

    class Record(DispatchMode):
        def __init__(self) -> None:
            self.calls = []

        def __ember_dispatch__(self, func, types, args, kwargs):
            self.calls.append(func)
            return func(*args, **kwargs)

    array = np.arange(3.0)
    with Record() as record:
        made = [ember.tensor([1, 2]), ember.as_tensor(array), ember.from_numpy(array)]
    assert record.calls == [aten.lift_fresh.default] * 3
    assert np.shares_memory(made[2].numpy(), array)  # lift_fresh hands back the tensor itself
