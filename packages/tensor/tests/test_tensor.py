"""Tensor metadata, views and copies against PyTorch.

The view table of ``opinfo_views`` runs here a second time: each result must have PyTorch's storage
offset and must be a view exactly when PyTorch's is (writing through it changes the base the same
way, and bumps the base's version counter).
"""

from __future__ import annotations

import warnings

import numpy as np
import opinfo_views
import pytest
from opinfo import ORACLE_MISSING, build, first_tensor, to_numpy, torch

import ember

pytestmark = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
VIEW_CASES = [pytest.param(op, id=op.name) for op in opinfo_views.OPS]


def _flat(result):
    return list(result) if isinstance(result, list | tuple) else [result]


def _fill_each(results, lib):
    """Write a distinct value through each result; the error type if that fails."""
    try:
        for i, r in enumerate(results):
            r.fill_(i % 2 == 0 if r.dtype == lib.bool else i + 7)
    except Exception as error:
        return type(error)
    return None


@pytest.mark.parametrize("op", VIEW_CASES)
def test_views_share_storage_like_pytorch(op):
    rng = np.random.default_rng(0)
    for dtype in ("float32", "bool"):
        for sample in op.samples(dtype, rng):
            if first_tensor(sample.args) is None:
                continue
            outcome = {}
            for lib in (torch, ember):
                args, kwargs = build(sample.args, lib), build(sample.kwargs, lib)
                base = args[0]
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        results = _flat(op.call(lib, *args, **kwargs))
                except Exception:
                    outcome[lib] = None
                    continue
                offsets = [r.storage_offset() for r in results]
                version = base._version
                error = _fill_each(results, lib)
                outcome[lib] = (offsets, error, to_numpy(base), base._version > version)
            if outcome[torch] is None:
                continue
            assert outcome[ember] is not None, f"{sample}: we raised, PyTorch did not"
            (t_offsets, t_error, t_base, t_bumped), (e_offsets, e_error, e_base, e_bumped) = (
                outcome[torch],
                outcome[ember],
            )
            assert e_offsets == t_offsets, f"{sample}: storage offsets {e_offsets} != {t_offsets}"
            assert (e_error is None) == (t_error is None), f"{sample}: writing raised {e_error} vs PyTorch's {t_error}"
            if t_error is not None:
                assert issubclass(e_error, t_error), f"{sample}: {e_error} vs {t_error}"
                continue
            np.testing.assert_array_equal(e_base, t_base, err_msg=f"{sample}: base after writing through the result")
            if t_bumped:
                assert e_bumped, f"{sample}: the base's version did not change"


# -- metadata ---------------------------------------------------------------------------------------


def _pair(array, transform=lambda t: t):
    return transform(ember.tensor(array)), transform(torch.tensor(array))


METADATA_CASES = [
    ("contiguous", lambda t: t),
    ("transposed", lambda t: t.transpose(0, 1)),
    ("sliced", lambda t: t[1:, ::2]),
    ("selected", lambda t: t[1]),
    ("expanded", lambda t: t[:1].expand(4, 6)),
    ("scalar", lambda t: t[1, 2]),
    ("empty", lambda t: t[:0]),
    ("unsqueezed", lambda t: t[:, None, 1:2]),
]


@pytest.mark.parametrize("name, transform", METADATA_CASES, ids=[c[0] for c in METADATA_CASES])
@pytest.mark.parametrize("dtype", ["float32", "int16", "complex64", "bool", "bfloat16"])
def test_metadata_matches_pytorch(name, transform, dtype):
    array = np.arange(24).reshape(4, 6)
    ours = transform(ember.tensor(array).to(getattr(ember, dtype)))
    theirs = transform(torch.tensor(array).to(getattr(torch, dtype)))
    assert tuple(ours.size()) == tuple(theirs.size()) and tuple(ours.shape) == tuple(theirs.shape)
    assert isinstance(ours.shape, ember.Size) and isinstance(ours.shape, tuple)
    assert ours.stride() == theirs.stride()
    for d in range(-ours.dim(), ours.dim()):
        assert ours.size(d) == theirs.size(d) and ours.stride(d) == theirs.stride(d)
    assert ours.storage_offset() == theirs.storage_offset()
    assert ours.is_contiguous() == theirs.is_contiguous()
    assert (ours.numel(), ours.dim(), ours.ndim) == (theirs.numel(), theirs.dim(), theirs.ndim)
    assert (ours.element_size(), ours.itemsize, ours.nbytes) == (theirs.element_size(), theirs.itemsize, theirs.nbytes)
    assert ours.is_floating_point() == theirs.is_floating_point()
    assert ours.is_complex() == theirs.is_complex()
    if dtype != "bfloat16":
        assert ours.tolist() == theirs.tolist()
    base = ember.tensor(array).to(getattr(ember, dtype))
    ours = transform(base)
    if ours.numel():
        assert ours.data_ptr() == base.data_ptr() + ours.storage_offset() * ours.element_size()


def test_size_and_its_repr():
    t = ember.empty(2, 3)
    assert repr(t.shape) == "ember.Size([2, 3])" == repr(torch.Size([2, 3])).replace("torch", "ember")
    assert repr(ember.empty(()).shape) == "ember.Size([])"
    assert t.shape == (2, 3) and t.shape.numel() == 6
    assert isinstance(t.shape[1:], ember.Size) and t.shape[1:] == (3,)
    for op in (lambda s: s + (4,), lambda s: (1,) + s, lambda s: s * 2, lambda s: 2 * s, lambda s: s[::-1]):
        ours, theirs = op(t.shape), op(torch.Size([2, 3]))
        assert ours == theirs and type(ours).__name__ == type(theirs).__name__
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.zeros(2).shape + [3]
    with pytest.raises(IndexError):
        t.size(2)
    with pytest.raises(IndexError):
        t.stride(-3)


@pytest.mark.parametrize("value", [[2.5], [[7]], [True], 3, [1 + 2j], []])
def test_item_and_conversions(value):
    ours, theirs = ember.tensor(value), torch.tensor(value)
    if theirs.numel() != 1:
        for fn in (lambda t: t.item(), float, int, bool, complex):
            with pytest.raises(Exception) as their_error:
                fn(theirs)
            with pytest.raises(their_error.type):
                fn(ours)
        return
    assert ours.item() == theirs.item() and type(ours.item()) is type(theirs.item())
    if not theirs.is_complex():
        assert float(ours) == float(theirs) and int(ours) == int(theirs) and bool(ours) == bool(theirs)


def test_item_errors_for_many_elements():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="4 elements"):
            lib.zeros(4).item()
        with pytest.raises(RuntimeError, match="ambiguous"):
            bool(lib.zeros(2))
        with pytest.raises(RuntimeError, match="ambiguous"):
            bool(lib.zeros(0))


def test_meta_tensors_have_no_values():
    for lib in (torch, ember):
        meta = lib.zeros(1, device="meta")
        with pytest.raises(RuntimeError, match="meta"):
            meta.item()
        with pytest.raises(NotImplementedError):
            meta.tolist()
        with pytest.raises(NotImplementedError):
            lib.zeros(2).copy_(lib.zeros(2, device="meta"))
    assert ember.zeros(2, 3, device="meta").numel() == 6


def test_len_iter_bool():
    array = np.arange(6).reshape(3, 2)
    ours, theirs = ember.tensor(array), torch.tensor(array)
    assert len(ours) == len(theirs) == 3
    assert [r.tolist() for r in ours] == [r.tolist() for r in theirs]
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            len(lib.tensor(1))
        with pytest.raises(TypeError):
            iter(lib.tensor(1))
    assert bool(ember.tensor([0])) is False and bool(ember.tensor(3)) is True
    assert [0, 1, 2, 3][ember.tensor(2)] == 2
    with pytest.raises(TypeError):
        [0, 1][ember.tensor(1.0)]


def test_tolist_matches_pytorch():
    for value in ([[1, 2], [3, 4]], 5, [True, False], [1.5, 2.25], [[1j, 2]], []):
        ours, theirs = ember.tensor(value), torch.tensor(value)
        assert ours.tolist() == theirs.tolist()
        assert type(ours.tolist()) is type(theirs.tolist())
    assert ember.tensor([1.5, 2.0], dtype=ember.bfloat16).tolist() == [1.5, 2.0]


def test_version_counter_semantics():
    base = ember.zeros(3, 4)
    view = base[1]
    assert base._version == view._version == 0
    view.fill_(1)
    assert base._version == view._version == 1
    base.zero_()
    assert view._version == 2
    other = base.clone()
    assert other._version == 0
    base.add_(1)
    assert other._version == 0 and base._version == 3
    detached = base.detach()
    detached.fill_(2)
    assert base._version == 4 and base.tolist()[0][0] == 2.0
    base[0, 0] = 5
    assert base._version == 5 and view._version == 5


# -- copies -----------------------------------------------------------------------------------------


def _both(array, transform=lambda t: t, dtype=None):
    out = []
    for lib in (ember, torch):
        t = lib.tensor(array)
        if dtype is not None:
            t = t.to(getattr(lib, dtype))
        out.append(transform(t))
    return out


def _same(ours, theirs):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


@pytest.mark.parametrize(
    "src_shape, src_dtype, dst_dtype",
    [
        ((3, 4), "float64", "float32"),
        ((4,), "int64", "float16"),
        ((1, 4), "float32", "int32"),
        ((), "complex64", "complex128"),
        ((3, 4), "bool", "int8"),
        ((3, 1), "float32", "bfloat16"),
        ((3, 4), "float32", "bool"),
        ((3, 4), "uint8", "int64"),
    ],
)
def test_copy_broadcasts_and_casts(src_shape, src_dtype, dst_dtype):
    rng = np.random.default_rng(1)
    src = (rng.uniform(-5, 5, size=src_shape) * 4).round() / 4
    src = np.abs(src) if src_dtype == "uint8" else src
    results = []
    for lib in (ember, torch):
        dst = lib.zeros(3, 4, dtype=getattr(lib, dst_dtype)).transpose(0, 1).transpose(0, 1)
        s = lib.tensor(src).to(getattr(lib, src_dtype))
        before = dst._version
        returned = dst.copy_(s)
        assert returned is dst and dst._version > before
        results.append(dst)
    _same(*results)


def test_copy_complex_to_real_keeps_the_real_part():
    results = []
    for lib in (ember, torch):
        dst = lib.zeros(2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dst.copy_(lib.tensor([1.5 + 2j, -3 - 1j]))
        results.append(dst)
    _same(*results)


OVERLAPS = {
    "shifted": lambda t: t[1:].copy_(t[:-1]),
    "shifted_back": lambda t: t[:-1].copy_(t[1:]),
    "itself": lambda t: t.copy_(t),
    "disjoint": lambda t: t[:2].copy_(t[3:5]),
    "same_memory_other_strides": lambda t: t[:4].view(2, 2).copy_(t[:4].view(2, 2).t()),
    "broadcast_row": lambda t: t.view(2, 3)[1:].copy_(t.view(2, 3)[0]),
}


@pytest.mark.parametrize("name", list(OVERLAPS))
def test_copy_between_overlapping_tensors_like_pytorch(name):
    theirs, ours = torch.arange(6.0), ember.arange(6.0)
    try:
        OVERLAPS[name](theirs)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            OVERLAPS[name](ours)
        return
    OVERLAPS[name](ours)
    assert ours.tolist() == theirs.tolist()


def test_copy_errors():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError):
            lib.zeros(3).copy_(lib.zeros(4))
        with pytest.raises(RuntimeError):
            lib.zeros(1).copy_(lib.zeros(3))
        with pytest.raises(TypeError):
            lib.zeros(3).copy_([1, 2, 3])


CLONE_LAYOUTS = [
    ("contiguous", lambda t: t),
    ("transposed", lambda t: t.permute(2, 0, 1)),
    ("sliced", lambda t: t[:, ::2]),
    ("expanded", lambda t: t[:, :1].expand(2, 3, 4)),
    ("size-one", lambda t: t[:1, :, 1:2].transpose(0, 2)),
    ("reversed-transposed", lambda t: t.transpose(0, 1)),
    ("size-one-odd-stride", lambda t: t[:, 1:2]),
    ("empty", lambda t: t[:, :0]),
    ("sliced-transposed", lambda t: t[:, ::2].transpose(0, 2)),
    ("expanded-transposed", lambda t: t.unsqueeze(1).expand(2, 5, 3, 4).transpose(1, 3)),
]


@pytest.mark.parametrize("name, transform", CLONE_LAYOUTS, ids=[c[0] for c in CLONE_LAYOUTS])
@pytest.mark.parametrize("memory_format", [None, "preserve_format", "contiguous_format"])
def test_clone_strides_match_pytorch(name, transform, memory_format):
    array = np.arange(24.0).reshape(2, 3, 4)
    ours, theirs = _both(array, transform)
    kwargs = {} if memory_format is None else {"memory_format": memory_format}
    torch_kwargs = {} if memory_format is None else {"memory_format": getattr(torch, memory_format)}
    a, b = ours.clone(**kwargs), theirs.clone(**torch_kwargs)
    _same(a, b)
    assert a.stride() == b.stride()
    assert a.untyped_storage() is not ours.untyped_storage()
    assert ember.clone(ours).stride() == torch.clone(theirs).stride()
    c, d = ours.contiguous(), theirs.contiguous()
    assert c.stride() == d.stride() and c.is_contiguous()
    assert (c is ours) == (d is theirs)
    assert ember.empty_like(ours).stride() == torch.empty_like(theirs).stride()
    assert ember.zeros_like(ours).stride() == torch.zeros_like(theirs).stride()


CONVERSIONS = [
    "float",
    "double",
    "half",
    "bfloat16",
    "long",
    "int",
    "short",
    "char",
    "byte",
    "bool",
    "cfloat",
    "cdouble",
]


@pytest.mark.parametrize("name", CONVERSIONS)
def test_dtype_conversion_methods(name):
    array = np.array([[0.0, 1.5, -2.25], [3.0, 250.0, -0.0]])
    ours, theirs = _both(array, lambda t: t.t())
    if name in ("byte", "char"):
        ours, theirs = ours.abs() if hasattr(ours, "abs") else ours, theirs.abs()
        ours, theirs = _both(np.abs(array) % 100, lambda t: t.t())
    a, b = getattr(ours, name)(), getattr(theirs, name)()
    _same(a, b)
    assert a.stride() == b.stride()
    same_dtype_a, same_dtype_b = getattr(a, name)(), getattr(b, name)()
    assert (same_dtype_a is a) == (same_dtype_b is b)


def test_to_forms():
    ours, theirs = _both([[1.0, 2.0], [3.0, 4.0]])
    assert ours.to(ember.float32) is ours and theirs.to(torch.float32) is theirs
    assert ours.to("cpu") is ours and ours.to(ember.device("cpu")) is ours
    assert ours.to(ember.float32, copy=True) is not ours
    _same(ours.to(ember.int32), theirs.to(torch.int32))
    _same(ours.to("cpu", ember.float64), theirs.to("cpu", torch.float64))
    _same(ours.to(dtype=ember.float16), theirs.to(dtype=torch.float16))
    other_ours, other_theirs = _both([1, 2], dtype="int64")
    _same(ours.to(other_ours), theirs.to(other_theirs))
    _same(ours.type_as(other_ours), theirs.type_as(other_theirs))
    meta = ours.t().to("meta")
    assert meta.device.type == "meta" and meta.is_meta and meta.stride() == theirs.t().to("meta").stride()
    assert ours.to(device="meta", dtype=ember.float16).dtype is ember.float16
    with pytest.raises(NotImplementedError):
        meta.to("cpu")
    assert ours.cpu() is ours
    transposed = ours.t()
    assert transposed.to(memory_format=ember.contiguous_format) is transposed
    assert theirs.t().to(memory_format=torch.contiguous_format).stride() == transposed.stride()
    assert repr(ember.contiguous_format) == "ember.contiguous_format"


def test_metadata_only_inplace_views():
    for name, call in [
        ("t_", lambda t: t.t_()),
        ("transpose_", lambda t: t.transpose_(0, 1)),
        ("squeeze_", lambda t: t[:1].squeeze_()),
        ("squeeze_dim", lambda t: t[:, :1].squeeze_(1)),
        ("unsqueeze_", lambda t: t.unsqueeze_(1)),
    ]:
        ours, theirs = call(ember.arange(6.0).reshape(2, 3)), call(torch.arange(6.0).reshape(2, 3))
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride(), name
        assert ours.tolist() == theirs.tolist(), name


def test_fill_and_zero():
    for dtype in ("float32", "int32", "bool", "complex64"):
        results = []
        for lib in (ember, torch):
            t = lib.ones(3, 4, dtype=getattr(lib, dtype))[:, 1::2]
            version = t._version
            assert t.fill_(2) is t and t._version > version
            base = t
            base.zero_()
            t.fill_(lib.tensor(3))
            results.append(t)
        _same(*results)
    for lib in (ember, torch):
        with pytest.raises(RuntimeError):
            lib.zeros(3).fill_(lib.zeros(2))
        with pytest.raises(RuntimeError):
            lib.zeros(3, dtype=lib.int64).fill_(1 + 2j)


WRITES = {
    "fill_": lambda lib, t: t.fill_(1),
    "zero_": lambda lib, t: t.zero_(),
    "copy_": lambda lib, t: t.copy_(lib.ones(3, 4)),
    "copy_broadcast": lambda lib, t: t.copy_(lib.ones(4)),
    "add_": lambda lib, t: t.add_(1),
    "setitem_scalar": lambda lib, t: t.__setitem__(0, 1.0),
    "setitem_tensor": lambda lib, t: t.__setitem__(Ellipsis, lib.ones(3, 4)),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_inplace_on_expanded_tensor(name):
    """PyTorch refuses writes of distinct values into an expanded tensor, and allows fills."""
    write = WRITES[name]
    t = torch.zeros(1, 4).expand(3, 4)
    ours = ember.zeros(1, 4).expand(3, 4)
    try:
        write(torch, t)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            write(ember, ours)
        return
    write(ember, ours)
    assert ours.tolist() == t.tolist()


def _type_outcomes(lib):
    out = []
    for dtype in ("float32", "float64", "bfloat16", "int64", "uint8", "bool", "complex64"):
        x = lib.ones(2, dtype=getattr(lib, dtype))
        out.append(x.type())
        out.append(str(x.type(lib.float64).dtype).split(".")[-1])
        out.append(str(x.type("torch.ShortTensor").dtype).split(".")[-1])
        out.append(x.type(getattr(lib, dtype)) is x)
    for bad in ("torch.Foo", "FloatTensor", 3):
        try:
            lib.ones(1).type(bad)
        except (TypeError, ValueError) as error:
            out.append((type(error).__name__, str(error)))
    return out


@pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
def test_type_names_and_casts_as_pytorch():
    assert _type_outcomes(ember) == _type_outcomes(torch)
