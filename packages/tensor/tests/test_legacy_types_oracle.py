"""The legacy tensor types (``FloatTensor``, ...), ``Tensor.type()`` and the device/layout flags,
against PyTorch."""

import warnings

import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

import ember  # noqa: E402

NAMES = [
    "FloatTensor",
    "DoubleTensor",
    "HalfTensor",
    "BFloat16Tensor",
    "LongTensor",
    "IntTensor",
    "ShortTensor",
    "CharTensor",
    "ByteTensor",
    "BoolTensor",
]
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]


@pytest.mark.parametrize("name", NAMES)
def test_type_objects(name):
    ours, theirs = getattr(ember, name), getattr(torch, name)
    assert ours.__name__ == theirs.__name__
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    assert ours.is_cuda is theirs.is_cuda and ours.is_sparse is theirs.is_sparse
    assert issubclass(ours, ember.Tensor) is issubclass(theirs, torch.Tensor)
    assert type(ours).__name__ == type(theirs).__name__ == "tensortype"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_isinstance(name, dtype):
    ours = isinstance(ember.zeros(2, dtype=getattr(ember, dtype)), getattr(ember, name))
    theirs = isinstance(torch.zeros(2, dtype=getattr(torch, dtype)), getattr(torch, name))
    assert ours is theirs
    assert not isinstance(1.0, getattr(ember, name)) and not isinstance(1.0, getattr(torch, name))


@pytest.mark.parametrize("name", NAMES)
def test_construction(name):
    data = [1, 0, 3]
    for args in ((), (2, 3), (data,), (ember.Size([2]),)):
        torch_args = tuple(torch.Size(a) if isinstance(a, ember.Size) else a for a in args)
        ours, theirs = getattr(ember, name)(*args), getattr(torch, name)(*torch_args)
        assert isinstance(ours, ember.Tensor)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
        if args == (data,):
            assert ours.tolist() == theirs.tolist()


def test_construction_from_tensor_and_errors():
    a = ember.ones(2)
    alias = ember.FloatTensor(a)
    alias[0] = 5.0
    assert a.tolist() == [5.0, 1.0]  # shares the data, as PyTorch's does
    t_alias = torch.FloatTensor(torch.ones(2))
    assert t_alias.dtype == torch.float32
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.ones(2).long())
    with pytest.raises(TypeError):
        ember.FloatTensor(ember.ones(2).long())
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.FloatTensor([1.0], dtype=lib.float64)
        with pytest.raises(TypeError, match="invalid data type 'str'"):
            lib.FloatTensor("a")
        assert lib.FloatTensor([1.0], device="cpu").tolist() == [1.0]
    with pytest.raises(RuntimeError) as want:
        torch.FloatTensor([1.0], device="meta")
    with pytest.raises(RuntimeError) as got:
        ember.FloatTensor([1.0], device="meta")
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("dtype", DTYPES)
def test_type_string(dtype):
    assert ember.zeros(1, dtype=getattr(ember, dtype)).type() == torch.zeros(1, dtype=getattr(torch, dtype)).type()


@pytest.mark.parametrize("target", ["DoubleTensor", "IntTensor", "torch.LongTensor", "torch.HalfTensor", "float64"])
def test_type_conversion(target):
    source_e, source_t = ember.tensor([1.5, -2.0]), torch.tensor([1.5, -2.0])
    if target.startswith("torch.") or target == "float64":
        arg_e = getattr(ember, target) if target == "float64" else target
        arg_t = getattr(torch, target) if target == "float64" else target
    else:
        arg_e, arg_t = getattr(ember, target), getattr(torch, target)
    ours, theirs = source_e.type(arg_e), source_t.type(arg_t)
    assert ours.type() == theirs.type()
    assert ours.tolist() == theirs.tolist()


def test_type_errors():
    for bad in ("torch.Foo", int):
        with pytest.raises(ValueError) as want:
            torch.ones(2).type(bad)
        with pytest.raises(ValueError) as got:
            ember.ones(2).type(bad)
        assert str(got.value) == str(want.value)


def test_set_default_tensor_type():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ember.set_default_tensor_type(ember.DoubleTensor)
            assert ember.get_default_dtype() is ember.float64
            assert ember.tensor([1.0]).dtype is ember.float64
            ember.set_default_tensor_type("torch.FloatTensor")
            assert ember.get_default_dtype() is ember.float32
            with pytest.raises(TypeError, match="only floating-point types"):
                ember.set_default_tensor_type(ember.LongTensor)
            with pytest.raises(TypeError, match="only floating-point types"):
                torch.set_default_tensor_type(torch.LongTensor)
        with pytest.warns(UserWarning, match="deprecated"):
            ember.set_default_tensor_type(ember.FloatTensor)
    finally:
        ember.set_default_dtype(ember.float32)


FLAGS = [
    "is_cpu",
    "is_cuda",
    "is_meta",
    "is_xpu",
    "is_mps",
    "is_xla",
    "is_ipu",
    "is_mtia",
    "is_maia",
    "is_vulkan",
    "is_mkldnn",
    "is_quantized",
    "is_sparse",
    "is_sparse_csr",
    "is_nested",
]


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_flags(device):
    ours, theirs = ember.ones(2, device=device), torch.ones(2, device=device)
    for flag in FLAGS:
        assert getattr(ours, flag) is getattr(theirs, flag), flag


def test_every_flag_of_torch_exists():
    theirs = {n for n in dir(torch.Tensor) if n.startswith("is_") and isinstance(getattr(torch.Tensor, n), property)}
    theirs |= {n for n in dir(torch.ones(1)) if n.startswith("is_") and not callable(getattr(torch.ones(1), n))}
    missing = sorted(n for n in theirs if not hasattr(ember.ones(1), n))
    assert missing == []
