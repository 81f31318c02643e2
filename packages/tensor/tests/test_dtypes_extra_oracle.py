"""The dtypes of limited support against PyTorch: their attributes, promotion, limits, factories,
conversions and the few ops PyTorch runs on them."""

from __future__ import annotations

import itertools
import pickle
import warnings

import numpy as np
import pytest

import ember
from ember.core import dtypes as D

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

EXTRA_NAMES = [d.name for d in D.EXTRA]
WIDE = ["uint16", "uint32", "uint64"]
FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"]


def _outcome(fn):
    """What a call gives: ("ok", value) or ("raises", exception type)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", fn()
        except Exception as e:  # the type is what is compared
            return "raises", type(e)


def test_every_extra_dtype_is_a_torch_dtype_and_all_is_unchanged():
    assert {d.name for d in D.ALL}.isdisjoint(EXTRA_NAMES)
    for name in EXTRA_NAMES:
        assert isinstance(getattr(torch, name), torch.dtype), name
    assert ember.chalf is ember.complex32 and torch.chalf is torch.complex32
    assert repr(ember.bit) == repr(torch.bit).replace("torch", "ember")


@pytest.mark.parametrize("name", EXTRA_NAMES)
def test_attributes_like_pytorch(name):
    ours, theirs = getattr(ember, name), getattr(torch, name)
    assert repr(ours) == repr(theirs).replace("torch", "ember")
    assert ours.itemsize == theirs.itemsize
    assert ours.is_floating_point == theirs.is_floating_point
    assert ours.is_complex == theirs.is_complex
    signed_ours, signed_theirs = _outcome(lambda: ours.is_signed), _outcome(lambda: theirs.is_signed)
    assert signed_ours == signed_theirs
    assert pickle.loads(pickle.dumps(ours)) is ours


def test_promotion_like_pytorch():
    names = [d.name for d in D.ALL] + EXTRA_NAMES
    for a, b in itertools.product(names, repeat=2):
        if a not in EXTRA_NAMES and b not in EXTRA_NAMES:
            continue
        expected = _outcome(lambda a=a, b=b: torch.promote_types(getattr(torch, a), getattr(torch, b)))
        got = _outcome(lambda a=a, b=b: ember.promote_types(getattr(ember, a), getattr(ember, b)))
        if expected[0] == "ok":
            assert got[0] == "ok" and got[1].name == str(expected[1]).removeprefix("torch."), (a, b)
        else:
            assert got == ("raises", RuntimeError), (a, b)  # PyTorch raises RuntimeError (or asserts)


def test_promotion_messages_name_the_types():
    with pytest.raises(
        RuntimeError, match=r"Promotion for uint16, uint32, uint64 types is not supported.*UInt16 and Int"
    ):
        ember.promote_types(ember.uint16, ember.int32)
    with pytest.raises(RuntimeError, match=r"Promotion for Float8 Types is not supported.*Float8_e5m2 and Float"):
        ember.promote_types(ember.float8_e5m2, ember.float32)
    with pytest.raises(RuntimeError, match="Promotion from Bits8 and Byte is unsupported"):
        ember.promote_types(ember.bits8, ember.uint8)


@pytest.mark.parametrize("name", EXTRA_NAMES)
def test_finfo_and_iinfo_like_pytorch(name):
    for ours_fn, theirs_fn in ((ember.finfo, torch.finfo), (ember.iinfo, torch.iinfo)):
        # PyTorch's finfo of float4_e2m1fn_x2 is made but raises TypeError when its fields are read.
        theirs_dtype, ours_dtype = getattr(torch, name), getattr(ember, name)
        expected = _outcome(lambda f=theirs_fn, d=theirs_dtype: (repr(f(d)), f(d))[1])
        got = _outcome(lambda f=ours_fn, d=ours_dtype: f(d))
        if expected[0] == "raises":
            assert got == expected, name
            continue
        fields = ("bits", "min", "max", "dtype") + (
            ("eps", "tiny", "smallest_normal", "resolution") if ours_fn is ember.finfo else ()
        )
        for field in fields:
            assert getattr(got[1], field) == getattr(expected[1], field), (name, field)


@pytest.mark.parametrize("name", EXTRA_NAMES)
@pytest.mark.parametrize("factory", ["empty", "zeros", "ones"])
def test_factories_like_pytorch(name, factory):
    expected = _outcome(lambda: getattr(torch, factory)(2, 3, dtype=getattr(torch, name)))
    got = _outcome(lambda: getattr(ember, factory)(2, 3, dtype=getattr(ember, name)))
    assert got[0] == expected[0], (name, factory, got)
    if got[0] == "raises":
        assert got[1] is expected[1]
        return
    assert got[1].dtype is getattr(ember, name) and tuple(got[1].shape) == (2, 3)
    if factory != "empty":  # the bytes, through a view as bytes
        assert got[1].view(ember.uint8).tolist() == expected[1].view(torch.uint8).tolist()


def test_storage_only_fill_names_the_type():
    with pytest.raises(NotImplementedError, match="\"fill_cpu\" not implemented for 'Int4'"):
        ember.ones(2, dtype=ember.int4)


VALUES = [0.0, 1.0, 2.5, 3.0, 7.0, 100.0, 255.0, 448.0, 1000.0]


@pytest.mark.parametrize("name", WIDE + FLOAT8 + ["complex32"])
def test_conversions_round_trip_like_pytorch(name):
    ours = ember.tensor(VALUES).to(getattr(ember, name))
    theirs = torch.tensor(VALUES).to(getattr(torch, name))
    assert ours.dtype is getattr(ember, name)
    assert ours.view(ember.uint8).tolist() == theirs.view(torch.uint8).tolist()  # the same bits
    for target in ("float32", "float64", "int64", "complex64"):
        back_ours, back_theirs = ours.to(getattr(ember, target)), theirs.to(getattr(torch, target))
        np.testing.assert_array_equal(np.array(back_ours.tolist()), np.array(back_theirs.tolist()), err_msg=target)
    np.testing.assert_array_equal(np.array(ours.tolist()), np.array(theirs.tolist()))
    assert ours[2].item() == theirs[2].item()


@pytest.mark.parametrize("name", WIDE + FLOAT8 + ["complex32"])
def test_copy_into_and_from(name):
    ours = ember.zeros(4, dtype=getattr(ember, name))
    theirs = torch.zeros(4, dtype=getattr(torch, name))
    ours.copy_(ember.tensor([1.0, 2.0, 4.0, 8.0]))
    theirs.copy_(torch.tensor([1.0, 2.0, 4.0, 8.0]))
    assert ours.tolist() == theirs.tolist()
    target_ours, target_theirs = ember.zeros(4), torch.zeros(4)
    target_ours.copy_(ours)
    target_theirs.copy_(theirs)
    assert target_ours.tolist() == target_theirs.tolist()


def test_complex32_values_and_printing():
    data = [1.5 + 2j, -3 + 0.25j]
    ours, theirs = ember.tensor(data, dtype=ember.complex32), torch.tensor(data, dtype=torch.complex32)
    assert ours.tolist() == theirs.tolist()
    assert ours.view(ember.uint8).tolist() == theirs.view(torch.uint8).tolist()
    assert repr(ours) == repr(theirs).replace("torch", "ember")
    assert ember.tensor([1.0, 2.0]).chalf().tolist() == torch.tensor([1.0, 2.0]).chalf().tolist()
    full_ours, full_theirs = (
        ember.full((2,), 1 - 2j, dtype=ember.complex32),
        torch.full((2,), 1 - 2j, dtype=torch.complex32),
    )
    assert full_ours.tolist() == full_theirs.tolist()


@pytest.mark.parametrize("name", WIDE + FLOAT8)
def test_printing_like_pytorch(name):
    ours = ember.tensor([1.0, 2.0, 3.0]).to(getattr(ember, name))
    theirs = torch.tensor([1.0, 2.0, 3.0]).to(getattr(torch, name))
    assert repr(ours) == repr(theirs).replace("torch", "ember")


@pytest.mark.parametrize("name", WIDE)
def test_wide_unsigned_ops_pytorch_supports(name):
    values = [0, 1, 7, 2**16 - 1]
    ours = ember.tensor(values, dtype=getattr(ember, name))
    theirs = torch.tensor(values, dtype=getattr(torch, name))
    for fn in (
        lambda t: t * t,
        lambda t: t == t,
        lambda t: t.sum(),
        lambda t: t & t,
        lambda t: t.sort().values,
        lambda t: t.cumsum(0),
        lambda t: t * 1.5,
        lambda t: t[[0, 2]],
        lambda t: t.reshape(2, 2).t().contiguous(),
    ):
        a, b = fn(ours), fn(theirs)
        assert str(a.dtype).removeprefix("ember.") == str(b.dtype).removeprefix("torch.")
        assert a.tolist() == b.tolist()
    assert ember.from_numpy(np.array(values, np.dtype(name))).tolist() == values


@pytest.mark.parametrize("name", FLOAT8)
def test_float8_views_and_concatenation(name):
    raw = [0, 56, 64, 72]
    ours = ember.tensor(raw, dtype=ember.uint8).view(getattr(ember, name))
    theirs = torch.tensor(raw, dtype=torch.uint8).view(getattr(torch, name))
    assert ours.tolist() == theirs.tolist()
    assert ember.cat([ours, ours]).tolist() == torch.cat([theirs, theirs]).tolist()
    assert (ours == ours).tolist() == (theirs == theirs).tolist()


def test_checkpoints_of_extra_dtypes_load_both_ways():
    import io

    values = {"u": [1, 70000], "f": [1.5, 3.0, -448.0], "c": [1 + 2j, -0.5j]}
    dtypes = {"u": "uint32", "f": "float8_e4m3fn", "c": "complex32"}
    ours = {k: ember.tensor(v).to(getattr(ember, dtypes[k])) for k, v in values.items()}
    theirs = {k: torch.tensor(v).to(getattr(torch, dtypes[k])) for k, v in values.items()}
    ours["f"] = ours["f"][1:]  # a view with an offset into its storage
    theirs["f"] = theirs["f"][1:]
    buffer = io.BytesIO()
    ember.save(ours, buffer)
    buffer.seek(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns that complex32 is experimental
        loaded = torch.load(buffer)
        buffer = io.BytesIO()
        torch.save(theirs, buffer)
    buffer.seek(0)
    back = ember.load(buffer)
    for k in values:
        assert loaded[k].dtype is theirs[k].dtype and loaded[k].tolist() == theirs[k].tolist()
        assert back[k].dtype is ours[k].dtype and back[k].tolist() == ours[k].tolist()


COMPLEX32_OPS = {
    "add": lambda lib, a, b: a + b,
    "sub": lambda lib, a, b: a - b,
    "mul": lambda lib, a, b: a * b,
    "neg": lambda lib, a, b: -a,
    "eq": lambda lib, a, b: a == b,
    "ne": lambda lib, a, b: a != b,
    "abs": lambda lib, a, b: a.abs(),
    "isnan": lambda lib, a, b: a.isnan(),
    "scalar": lambda lib, a, b: a + 1,
    "float_scalar": lambda lib, a, b: a * 1.5,
    "where": lambda lib, a, b: lib.where(a == b, a, b),
    "masked_fill": lambda lib, a, b: a.masked_fill(a == b, 2 - 1j),
    "add_": lambda lib, a, b: a.clone().add_(b),
    "nonzero": lambda lib, a, b: a.nonzero(),
    "promote": lambda lib, a, b: a + lib.ones(3),
}


@pytest.mark.parametrize("name", list(COMPLEX32_OPS))
def test_complex32_ops_pytorch_supports(name):
    # Values exact in half precision, so that PyTorch's rounding of each half-precision step and
    # Ember's rounding of the complex64 result agree.
    x, y = [1.5 + 2j, -0.25 + 0j, 3 - 1j], [0.5 - 1j, -0.25 + 0j, 2 + 4j]
    results = []
    for lib in (ember, torch):
        a, b = lib.tensor(x).to(lib.complex32), lib.tensor(y).to(lib.complex32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results.append(COMPLEX32_OPS[name](lib, a, b))
    ours, theirs = results
    assert str(ours.dtype).removeprefix("ember.") == str(theirs.dtype).removeprefix("torch.")
    assert ours.tolist() == theirs.tolist()


def test_complex32_views_of_halves_like_pytorch():
    results = []
    for lib in (ember, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            halves = lib.tensor([[1.0, 2.0], [3.0, -4.0], [0.5, 0.25]], dtype=lib.float16)
            z = lib.view_as_complex(halves)
            z[1] = 7 + 8j  # through the view, into the halves
            pair = lib.view_as_real(z)
            results.append((str(z.dtype).split(".")[1], z.tolist(), halves.tolist(), pair.tolist(), z.real.tolist()))
    assert results[0] == results[1]


@pytest.mark.parametrize("name", ["bits8", "bits16", "int4", "uint3", "float4_e2m1fn_x2"])
def test_storage_only_values_cannot_be_read_like_pytorch(name):
    for reader in (lambda t: t[0].item(), lambda t: t.tolist(), lambda t: bool(t[0])):
        ours = _outcome(lambda reader=reader: reader(ember.zeros(2, dtype=getattr(ember, name))))
        theirs = _outcome(lambda reader=reader: reader(torch.zeros(2, dtype=getattr(torch, name))))
        assert ours == theirs


def _pytorch_refusals(family: list[str]) -> set[str]:
    """The pointwise ops (functional forms, with only tensor operands required) whose CPU kernel
    PyTorch lacks for every dtype of ``family``."""
    from ember.core.dispatch import all_ops

    refused = set()
    for op in all_ops():
        if "pointwise" not in op.tags or op.namespace != "aten" or op.name.endswith("_") or "out" in op.tags:
            continue
        required = [a for a in op.schema.arguments if not a.has_default and not a.kwarg_only]
        if not required or not all(str(a.type) == "Tensor" for a in required):
            continue
        theirs = getattr(getattr(torch.ops.aten, op.name, None), op.overload or "default", None)
        if theirs is None:
            continue
        outcomes = set()
        for name in family:
            d = getattr(torch, name)
            sample = torch.tensor([1 + 1j, 2, 3]).to(d) if d is torch.complex32 else (torch.arange(3) + 1).to(d)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    theirs(*[sample.clone() for _ in required])
                outcomes.add("ok")
            except (NotImplementedError, RuntimeError) as error:
                outcomes.add(
                    "refused" if "not implemented for" in str(error) or "not supported" in str(error) else "other"
                )
            except Exception:  # any other failure is not a missing kernel
                outcomes.add("other")
        if outcomes == {"refused"}:
            refused.add(f"{op.name}.{op.overload}")
    return refused


@pytest.mark.parametrize(
    ("family", "table"),
    [(WIDE, "WIDE_UNSIGNED_REFUSED"), (FLOAT8, "FLOAT8_REFUSED"), (["complex32"], "COMPLEX32_REFUSED")],
)
def test_refusal_table_is_pytorchs(family, table):
    from ember.core import dtypes_refusals

    # Every op the table refuses, PyTorch refuses. (An op added to the op table later and missing
    # from this table is computed rather than refused: more permissive, never a wrong refusal.)
    assert set(getattr(dtypes_refusals, table)) <= _pytorch_refusals(family)


@pytest.mark.parametrize(
    ("name", "call", "type_name"),
    [
        ("uint16", lambda t: t + t, "UInt16"),
        ("uint32", lambda t: t < t, "UInt32"),
        ("uint64", lambda t: -t, "UInt64"),
        ("float8_e5m2", lambda t: t / t, "Float8_e5m2"),
        ("complex32", lambda t: t.exp(), "ComplexHalf"),
        ("uint16", lambda t: t.clone().sub_(t), "UInt16"),
    ],
)
def test_refused_ops_raise_like_pytorch(name, call, type_name):
    for lib in (ember, torch):
        t = lib.tensor([1.0, 2.0]).to(getattr(lib, name))
        with pytest.raises(NotImplementedError, match=f"not implemented for '{type_name}'"):
            call(t)
