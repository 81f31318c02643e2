"""``ember.save``/``ember.load`` against ``torch.save``/``torch.load``, in both directions: every
dtype, views sharing one storage, containers and scalars, paths and file objects, map_location,
mmap, and the archive's layout (records, 64-byte alignment) as PyTorch writes it."""

from __future__ import annotations

import io
import pathlib
import pickle
import pickletools
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember.core.serialization import archive
from ember.core.tensor import _new

torch = pytest.importorskip(
    "torch", reason="PyTorch is the oracle; it is installed only in the Python 3.11 test sessions"
)

DTYPES = [
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool",
    "complex64",
    "complex128",
]


def _values(dtype: str, shape=(3, 4), seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("complex"):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.startswith(("int", "uint")):
        return rng.integers(-100 if dtype.startswith("int") else 0, 100, shape).astype(dtype)
    return rng.standard_normal(shape).astype(np.float32)


def _pair(dtype: str, shape=(3, 4), seed=0):
    """The same tensor in ember and in torch."""
    values = _values(dtype, shape, seed)
    e = ember.tensor(values.tolist(), dtype=getattr(ember, dtype))
    t = torch.tensor(values.tolist(), dtype=getattr(torch, dtype))
    return e, t


def _as_numpy(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        if x.dtype == torch.bfloat16:
            return x.float().numpy()
        return x.numpy()
    if x.dtype is ember.bfloat16:
        return x.float().numpy()
    return x.numpy()


def _same(e, t) -> None:
    assert isinstance(e, ember.Tensor) and isinstance(t, torch.Tensor)
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    assert tuple(e.shape) == tuple(t.shape)
    assert tuple(e.stride()) == tuple(t.stride())
    assert e.storage_offset() == t.storage_offset()
    np.testing.assert_array_equal(_as_numpy(e), _as_numpy(t))


def _save_ember(obj, **kw) -> io.BytesIO:
    buffer = io.BytesIO()
    ember.save(obj, buffer, **kw)
    buffer.seek(0)
    return buffer


def _save_torch(obj, **kw) -> io.BytesIO:
    buffer = io.BytesIO()
    torch.save(obj, buffer, **kw)
    buffer.seek(0)
    return buffer


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_both_ways(dtype):
    e, t = _pair(dtype)
    from_ember = torch.load(_save_ember({"w": e}), weights_only=True)["w"]
    _same(e, from_ember)
    from_torch = ember.load(_save_torch({"w": t}))["w"]
    _same(from_torch, t)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "complex64", "bool"])
def test_non_contiguous_views_keep_their_layout(dtype):
    e, t = _pair(dtype, (4, 6))
    views_e = {"t": e.t(), "cols": e[:, 1::2], "row": e[2], "tail": e[1:, 3:]}
    views_t = {"t": t.t(), "cols": t[:, 1::2], "row": t[2], "tail": t[1:, 3:]}
    loaded_t = torch.load(_save_ember(views_e))
    loaded_e = ember.load(_save_torch(views_t))
    for key in views_e:
        _same(views_e[key], loaded_t[key])
        _same(loaded_e[key], views_t[key])


def test_views_of_one_storage_are_saved_once_and_share_after_loading():
    base = ember.arange(12.0).reshape(3, 4)
    state = {"base": base, "t": base.t(), "row": base[1], "again": base}
    buffer = _save_ember(state)
    names = zipfile.ZipFile(buffer).namelist()
    assert [n for n in names if "/data/" in n] == ["archive/data/0"]
    loaded_t = torch.load(io.BytesIO(buffer.getvalue()))
    assert loaded_t["t"].untyped_storage().data_ptr() == loaded_t["base"].untyped_storage().data_ptr()
    assert loaded_t["again"] is loaded_t["base"]
    buffer.seek(0)
    loaded = ember.load(buffer)
    assert loaded["again"] is loaded["base"]
    loaded["row"].fill_(-1.0)
    assert loaded["base"][1].tolist() == [-1.0] * 4
    assert loaded["t"][:, 1].tolist() == [-1.0] * 4

    tb = torch.arange(12.0).reshape(3, 4)
    from_torch = ember.load(_save_torch({"base": tb, "t": tb.t(), "row": tb[1]}))
    from_torch["row"].fill_(7.0)
    assert from_torch["base"][1].tolist() == [7.0] * 4
    assert from_torch["t"][:, 1].tolist() == [7.0] * 4


def test_nested_containers_and_python_scalars():
    e, t = _pair("float32", (2, 2))
    obj_e = OrderedDict(
        layer={"weight": e, "list": [e, 1, 2.5, "text", None, True, False], "tuple": (3, (4, e))},
        step=10**20,
        neg=-7,
        big=2**62,
        name="ünïcode",
        raw=b"\x00\x01bytes",
        flt=float("inf"),
        cx=complex(1, -2),
        nothing=None,
        empty=[],
    )
    obj_e["layer"]["od"] = OrderedDict(b=1, a=2)
    loaded = torch.load(_save_ember(obj_e))
    assert type(loaded) is OrderedDict and list(loaded) == list(obj_e)
    assert type(loaded["layer"]["od"]) is OrderedDict and list(loaded["layer"]["od"]) == ["b", "a"]
    for key in ("step", "neg", "big", "name", "raw", "flt", "cx", "nothing", "empty"):
        assert loaded[key] == obj_e[key] and type(loaded[key]) is type(obj_e[key])
    assert loaded["layer"]["list"][1:] == [1, 2.5, "text", None, True, False]
    assert isinstance(loaded["layer"]["tuple"], tuple) and loaded["layer"]["tuple"][0] == 3
    _same(e, loaded["layer"]["tuple"][1][1])
    # The same object saved by torch comes back identical through ember.
    obj_t = dict(loaded)
    back = ember.load(_save_torch(obj_t))
    for key in ("step", "neg", "big", "name", "raw", "flt", "cx", "nothing", "empty"):
        assert back[key] == obj_e[key] and type(back[key]) is type(obj_e[key])
    _same(back["layer"]["weight"], t)
    assert back["layer"]["list"][0] is back["layer"]["weight"]


def test_dtypes_devices_and_sizes_inside_the_pickle():
    obj = {
        "dtype": ember.bfloat16,
        "device": ember.device("cpu"),
        "size": ember.Size([2, 3]),
        "meta": ember.device("meta"),
    }
    loaded = torch.load(_save_ember(obj))
    assert loaded == {
        "dtype": torch.bfloat16,
        "device": torch.device("cpu"),
        "size": torch.Size([2, 3]),
        "meta": torch.device("meta"),
    }
    back = ember.load(_save_torch(loaded))
    assert back["dtype"] is ember.bfloat16 and back["device"] == ember.device("cpu")
    assert type(back["size"]) is ember.Size and back["size"] == (2, 3)


def test_state_dict_metadata_attribute_round_trips():
    module = torch.nn.Linear(3, 2)
    state = module.state_dict()
    assert hasattr(state, "_metadata")
    loaded = ember.load(_save_torch(state))
    assert loaded._metadata == state._metadata
    for key in state:
        _same(loaded[key], state[key])


def test_requires_grad_and_meta_tensors():
    t = torch.randn(2, 3, requires_grad=True)
    m = torch.empty(4, 5, device="meta").t()
    loaded = ember.load(_save_torch({"t": t.detach().requires_grad_(), "m": m}))
    assert loaded["t"].requires_grad
    assert loaded["m"].device.type == "meta" and tuple(loaded["m"].shape) == (5, 4) and loaded["m"].stride() == (1, 5)
    e = ember.ones(2, 2).requires_grad_()
    me = ember.empty(4, 5, device="meta").t()
    back = torch.load(_save_ember({"e": e, "m": me}))
    assert back["e"].requires_grad and back["m"].is_meta and back["m"].stride() == (1, 5)


def test_zero_size_and_zero_dim_tensors():
    obj = {"empty": ember.empty(0, 3), "scalar": ember.tensor(3.5), "int": ember.tensor(7)}
    loaded = torch.load(_save_ember(obj))
    assert loaded["empty"].shape == (0, 3) and loaded["scalar"].item() == 3.5 and loaded["int"].dtype == torch.int64
    back = ember.load(_save_torch(loaded))
    assert back["empty"].shape == (0, 3) and back["scalar"].item() == 3.5 and back["int"].dtype is ember.int64


@pytest.mark.parametrize("kind", ["str", "pathlib", "file"])
def test_paths_and_files(tmp_path, kind):
    e, t = _pair("float64")
    target = tmp_path / "model.pt"
    where = {"str": str(target), "pathlib": target}.get(kind)
    if kind == "file":
        with open(target, "wb") as f:
            ember.save({"w": e}, f)
        with open(target, "rb") as f:
            loaded = ember.load(f)
    else:
        ember.save({"w": e}, where)
        loaded = ember.load(where)
    _same(loaded["w"], t)
    _same(e, torch.load(target)["w"])
    folder = "archive" if kind == "file" else "model"
    assert zipfile.ZipFile(target).namelist()[0] == f"{folder}/data.pkl"
    torch.save({"w": t}, target)
    _same(ember.load(where if kind != "file" else str(target))["w"], t)


def test_archive_layout_matches_pytorch(tmp_path):
    e, t = _pair("float32", (5, 7))
    ours, theirs = tmp_path / "ours.pt", tmp_path / "theirs.pt"
    ember.save({"a": e, "b": ember.ones(3, dtype=ember.int16)}, ours)
    torch.save({"a": t, "b": torch.ones(3, dtype=torch.int16)}, theirs)
    ours_zip, theirs_zip = zipfile.ZipFile(ours), zipfile.ZipFile(theirs)
    strip = lambda names: [n.split("/", 1)[1] for n in names]  # noqa: E731
    assert strip(ours_zip.namelist()) == strip(theirs_zip.namelist())
    assert ours_zip.testzip() is None
    for info in ours_zip.infolist():
        assert info.compress_type == zipfile.ZIP_STORED
        with open(ours, "rb") as f:
            f.seek(info.header_offset + 26)
            name_len, extra_len = np.frombuffer(f.read(4), "<u2")
        assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0, info.filename
    for name in ("byteorder", "version", ".format_version", ".storage_alignment", "data/0", "data/1"):
        assert ours_zip.read(f"ours/{name}") == theirs_zip.read(f"theirs/{name}"), name
    # The pickle names exactly torch's globals.
    globals_ours = {arg for op, arg, _ in pickletools.genops(ours_zip.read("ours/data.pkl")) if op.name == "GLOBAL"}
    assert globals_ours == {
        "torch._utils _rebuild_tensor_v2",
        "torch FloatStorage",
        "torch ShortStorage",
        "collections OrderedDict",
    }
    # PyTorch's mmap path computes storage offsets from miniz's layout; ours must agree with it.
    torch.utils.serialization.config.load.calculate_storage_offsets = True
    try:
        _same(e, torch.load(ours, mmap=True)["a"])
    finally:
        torch.utils.serialization.config.load.calculate_storage_offsets = False


def test_zip64_records_are_read_by_both(monkeypatch, tmp_path):
    monkeypatch.setattr(archive, "ZIP64_LIMIT", 100)
    e, t = _pair("float64", (10, 20))
    path = tmp_path / "big.pt"
    ember.save({"w": e, "v": e[3]}, path)
    info = zipfile.ZipFile(path).getinfo("big/data/0")
    assert info.file_size == 1600 and zipfile.ZipFile(path).testzip() is None
    _same(e, torch.load(path)["w"])
    _same(ember.load(path)["w"], t)
    _same(ember.load(path, mmap=True)["v"], t[3])


def test_pickle_protocols(tmp_path):
    e, t = _pair("int32")
    for protocol in (2, 3, 4, 5):
        # PyTorch's weights-only unpickler refuses FRAME (4, 5) and warns on anything but protocol 2.
        loaded = torch.load(_save_ember({"w": e, "n": [1, "x"]}, pickle_protocol=protocol), weights_only=protocol == 2)
        _same(e, loaded["w"])
        back = ember.load(_save_torch({"w": t, "n": [1, "x"]}, pickle_protocol=protocol))
        _same(back["w"], t)
        assert back["n"] == [1, "x"]
    with pytest.raises(ValueError, match="pickle_protocol"):
        ember.save({}, io.BytesIO(), pickle_protocol=1)


def test_mmap_loads_copy_on_write(tmp_path):
    _e, t = _pair("float32", (8, 8))
    path = tmp_path / "m.pt"
    torch.save({"w": t}, path)
    loaded = ember.load(path, mmap=True)
    _same(loaded["w"], t)
    loaded["w"].fill_(0.0)
    _same(ember.load(path)["w"], t)  # the file is unchanged
    with pytest.raises(ValueError, match="file path"):
        ember.load(io.BytesIO(path.read_bytes()), mmap=True)


def test_map_location_forms():
    _e, t = _pair("float32")
    data = _save_torch({"w": t, "v": t[1:]}).getvalue()
    for where in (None, "cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda storage, loc: storage, lambda s, loc: None):
        loaded = ember.load(io.BytesIO(data), map_location=where)
        _same(loaded["w"], t)
        _same(loaded["v"], t[1:])
    meta = ember.load(io.BytesIO(data), map_location="meta")
    assert meta["w"].device.type == "meta" and meta["v"].storage_offset() == 4
    meta = ember.load(io.BytesIO(data), map_location={"cpu": "meta"})
    assert meta["w"].is_meta
    seen = []
    ember.load(io.BytesIO(data), map_location=lambda storage, loc: seen.append(loc))
    assert seen == ["cpu"]
    with pytest.raises(RuntimeError, match="CUDA device"):
        ember.load(io.BytesIO(data), map_location="cuda:0")
    with pytest.raises(TypeError, match="map_location"):
        ember.load(io.BytesIO(data), map_location=3)


def test_checkpoint_saved_on_another_device_needs_map_location():
    t = torch.arange(4.0)
    raw = io.BytesIO()
    torch.save({"w": t}, raw)
    # Rewrite the location tag as a CUDA machine would have written it.
    z = zipfile.ZipFile(io.BytesIO(raw.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as w:
        for info in z.infolist():
            data = z.read(info)
            if info.filename.endswith("data.pkl"):
                data = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
            w.writestr(info.filename, data)
    with pytest.raises(RuntimeError, match="map_location"):
        ember.load(io.BytesIO(out.getvalue()))
    _same(ember.load(io.BytesIO(out.getvalue()), map_location="cpu")["w"], t)
    _same(ember.load(io.BytesIO(out.getvalue()), map_location={"cuda:0": "cpu"})["w"], t)


def test_big_endian_checkpoints_are_swapped():
    t = torch.arange(6, dtype=torch.float32) * 1.5
    data = _save_torch({"w": t, "c": t.to(torch.complex64)}).getvalue()
    z = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as w:
        for info in z.infolist():
            raw = z.read(info)
            if info.filename.endswith("byteorder"):
                raw = b"big"
            elif "/data/" in info.filename:
                raw = np.frombuffer(raw, "<f4").astype(">f4").tobytes()
            w.writestr(info.filename, raw)
    loaded = ember.load(io.BytesIO(out.getvalue()))
    assert loaded["w"].tolist() == t.tolist()
    assert loaded["c"].tolist() == t.to(torch.complex64).tolist()


def test_full_unpickler_needs_to_be_asked_for_and_loads_tensors():
    _e, t = _pair("float32")
    data = _save_torch({"w": t, "obj": pathlib.PurePosixPath("a/b")}).getvalue()
    with pytest.raises(pickle.UnpicklingError, match="pathlib"):
        ember.load(io.BytesIO(data))
    loaded = ember.load(io.BytesIO(data), weights_only=False)
    _same(loaded["w"], t)
    assert loaded["obj"] == pathlib.PurePosixPath("a/b")
    with pytest.raises(RuntimeError, match="pickle_module"):
        ember.load(io.BytesIO(data), pickle_module=pickle)
    assert ember.load(io.BytesIO(data), pickle_module=pickle, weights_only=False)["obj"].name == "b"


def test_saving_two_dtypes_over_one_storage_is_refused():
    base = ember.zeros(4)
    other = _new(ember.Tensor, base._storage, (4,), (1,), 0, ember.int32, None)
    with pytest.raises(RuntimeError, match="different types"):
        ember.save([base, other], io.BytesIO())


def test_ember_names_are_what_torch_load_resolves():
    e = ember.ones(2)
    # torch's own weights-only unpickler, which resolves names through its allow-list.
    loaded = torch.load(_save_ember({"w": e, "dtype": ember.int8}), weights_only=True)
    assert loaded["dtype"] is torch.int8 and torch.equal(loaded["w"], torch.ones(2))


class _Parameter(ember.Tensor):
    """A stand-in for ember.nn.Parameter (a later layer), registered the way that layer registers it."""

    def __new__(cls, data, requires_grad=True):
        t = _new(cls, data._storage, data._shape, data._stride, data._offset, data.dtype, data._array)
        t.requires_grad = requires_grad
        return t


def test_parameters_need_their_class_registered(monkeypatch):
    from ember.core.serialization import rebuild

    data = _save_torch({"p": torch.nn.Parameter(torch.arange(3.0))}).getvalue()
    monkeypatch.setattr(rebuild, "_parameter", [])  # as without ember.nn, which registers its class
    with pytest.raises(RuntimeError, match=r"ember\.nn"):
        ember.load(io.BytesIO(data))
    monkeypatch.setattr(rebuild, "_parameter", [_Parameter])
    loaded = ember.load(io.BytesIO(data))["p"]
    assert type(loaded) is _Parameter and loaded.requires_grad and loaded.tolist() == [0.0, 1.0, 2.0]
    back = torch.load(_save_ember({"p": loaded, "frozen": _Parameter(ember.ones(2), requires_grad=False)}))
    assert type(back["p"]) is torch.nn.Parameter and back["p"].requires_grad
    assert torch.equal(back["p"].detach(), torch.arange(3.0))
    assert type(back["frozen"]) is torch.nn.Parameter and not back["frozen"].requires_grad


def test_other_tensor_subclasses_are_refused():
    class Sub(ember.Tensor):
        pass

    e = ember.ones(2)
    sub = _new(Sub, e._storage, e._shape, e._stride, 0, e.dtype, e._array)
    with pytest.raises(pickle.PicklingError, match="Sub"):
        ember.save(sub, io.BytesIO())
