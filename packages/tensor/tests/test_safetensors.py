"""``ember.core.safetensors`` against ``safetensors.torch``: every dtype both ways (bytes and files),
bfloat16 included, metadata, and ``safetensors.torch``'s refusals (non-contiguous, shared bytes)."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import safetensors

import ember
from ember.core import safetensors as es

torch = pytest.importorskip(
    "torch", reason="PyTorch is the oracle; it is installed only in the Python 3.11 test sessions"
)
st = pytest.importorskip(
    "safetensors.torch", reason="PyTorch is the oracle; it is installed only in the Python 3.11 test sessions"
)

DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool", "complex64"]


def _pair(dtype: str, shape=(3, 5)):
    rng = np.random.default_rng(1)
    values = rng.standard_normal(shape) * 10
    if dtype == "bool":
        values = values > 0
    elif dtype == "complex64":
        values = values + 1j * rng.standard_normal(shape)
    t = torch.from_numpy(values).to(getattr(torch, dtype))
    e = ember.from_numpy(values).to(getattr(ember, dtype))
    return e, t


def _numpy(x):
    if isinstance(x, torch.Tensor):
        return x.float().numpy() if x.dtype == torch.bfloat16 else x.numpy()
    return x.float().numpy() if x.dtype is ember.bfloat16 else x.numpy()


def _same(e, t):
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(_numpy(e), _numpy(t))


@pytest.mark.parametrize("dtype", DTYPES)
def test_bytes_both_ways(dtype):
    e, t = _pair(dtype)
    _same(e, t)
    from_ember = st.load(es.save({"x": e, "scalar": e[0, 0].clone()}))
    _same(e, from_ember["x"])
    _same(e[0, 0], from_ember["scalar"])
    from_torch = es.load(st.save({"x": t}))
    _same(from_torch["x"], t)
    from_torch["x"].zero_()  # writable, and its own memory


@pytest.mark.parametrize("dtype", DTYPES)
def test_files_both_ways(dtype, tmp_path):
    e, t = _pair(dtype, (4, 2, 3))
    es.save_file({"x": e, "empty": ember.empty(0, 3, dtype=e.dtype)}, tmp_path / "e.safetensors")
    loaded = st.load_file(tmp_path / "e.safetensors")
    _same(e, loaded["x"])
    assert loaded["empty"].shape == (0, 3)
    st.save_file({"x": t}, str(tmp_path / "t.safetensors"))
    back = es.load_file(str(tmp_path / "t.safetensors"))
    _same(back["x"], t)
    back["x"].zero_()


def test_many_tensors_and_metadata(tmp_path):
    tensors_e, tensors_t = {}, {}
    for i, dtype in enumerate(DTYPES):
        tensors_e[f"layer.{i}"], tensors_t[f"layer.{i}"] = _pair(dtype, (i + 1, 2))
    path = tmp_path / "m.safetensors"
    es.save_file(tensors_e, path, metadata={"format": "pt", "note": "ember"})
    with safetensors.safe_open(path, framework="pt") as f:
        assert f.metadata() == {"format": "pt", "note": "ember"}
        assert sorted(f.keys()) == sorted(tensors_t)
    loaded = es.load_file(path)
    assert sorted(loaded) == sorted(tensors_t)
    for name, t in tensors_t.items():
        _same(loaded[name], t)
    assert es.save(tensors_e, metadata={"a": "b"}) == st.save(tensors_t, metadata={"a": "b"})


def test_views_that_do_not_overlap_may_be_saved():
    base = ember.arange(10.0)
    out = st.load(es.save({"head": base[:4], "tail": base[4:]}))
    assert out["head"].tolist() == [0, 1, 2, 3] and out["tail"].tolist() == [4, 5, 6, 7, 8, 9]


def test_refusals_match_safetensors_torch():
    base = ember.arange(12.0).reshape(3, 4)
    with pytest.raises(ValueError, match="non contiguous"):
        es.save({"t": base.t()})
    with pytest.raises(RuntimeError, match="share memory"):
        es.save({"a": base, "b": base[1]})
    with pytest.raises(ValueError, match="dict"):
        es.save([base])
    with pytest.raises(ValueError, match="invalid"):
        es.save({"a": [1, 2]})
    with pytest.raises(ValueError, match="complex128"):
        es.save({"a": ember.zeros(2, dtype=ember.complex128)})
    with pytest.raises(ValueError, match="meta"):
        es.save({"a": ember.empty(2, device="meta")})
    with pytest.raises(TypeError, match="metadata"):
        es.save({"a": base}, metadata={"x": 1})
    # torch refuses the same inputs in the same way.
    with pytest.raises(ValueError, match="non contiguous"):
        st.save({"t": torch.ones(3, 4).t()})
    tb = torch.ones(3, 4)
    with pytest.raises(RuntimeError, match="share memory"):
        st.save({"a": tb, "b": tb[1]})


def test_dtypes_ember_lacks_and_bad_data(tmp_path):
    data = st.save({"u": torch.ones(2, dtype=torch.uint16)})
    with pytest.raises(TypeError, match="U16"):
        es.load(data)
    (tmp_path / "u.safetensors").write_bytes(data)
    with pytest.raises(TypeError, match="U16"):
        es.load_file(tmp_path / "u.safetensors")
    with pytest.raises(safetensors.SafetensorError):
        es.load(b"abc")
    with pytest.raises(safetensors.SafetensorError):
        es.load(b"\x08\x00\x00\x00\x00\x00\x00\x00{'a':1}")
    with pytest.raises(RuntimeError, match="not available"):
        es.load_file(tmp_path / "u.safetensors", device="cuda")


def test_bfloat16_bits_are_exact():
    bits = np.array([0x0000, 0x8000, 0x3F80, 0x7F80, 0xFF80, 0x7FC1, 0x0001, 0x7F7F], dtype=np.uint16)
    t = torch.from_numpy(bits.astype(np.int16)).view(torch.bfloat16)
    loaded = es.load(st.save({"b": t}))["b"]
    assert loaded.dtype is ember.bfloat16
    assert (loaded.numpy(force=True).view(np.uint16) == bits).all()
    again = st.load(es.save({"b": loaded}))["b"]
    assert (again.view(torch.int16).numpy().view(np.uint16) == bits).all()


def test_load_file_maps_copy_on_write_and_handles_unaligned_offsets(tmp_path):
    # Written by hand: the format allows a float64 tensor to start at byte 3 (safetensors' writer sorts
    # tensors by alignment, so it never does this itself).
    values = np.arange(5, dtype=np.float64) / 3
    header = json.dumps(
        {
            "a": {"dtype": "I8", "shape": [3], "data_offsets": [0, 3]},
            "b": {"dtype": "F64", "shape": [5], "data_offsets": [3, 43]},
        }
    ).encode()
    header += b" " * (-len(header) % 8)
    path = tmp_path / "odd.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes([0, 1, 2]) + values.tobytes())
    before = path.read_bytes()
    theirs = st.load_file(str(path))
    loaded = es.load_file(path)
    assert loaded["a"].tolist() == theirs["a"].tolist() == [0, 1, 2]
    np.testing.assert_array_equal(loaded["b"].numpy(), theirs["b"].numpy())
    loaded["a"].fill_(9)
    loaded["b"].fill_(9.0)
    assert path.read_bytes() == before
    assert es.load_file(path)["a"].tolist() == [0, 1, 2]
