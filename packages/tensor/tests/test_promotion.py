"""Dtypes, type promotion, casting and broadcasting against PyTorch, over every dtype pair and
random operand mixes (hypothesis)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opinfo import ORACLE_MISSING, torch

import ember
from ember.core import dtypes as D

pytestmark = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
NAMES = [d.name for d in D.ALL]
FAST = settings(max_examples=150, deadline=None, derandomize=True)


def ours(name):
    return getattr(ember, name)


def theirs(name):
    return getattr(torch, name)


def name_of(dtype) -> str:
    return str(dtype).split(".")[-1]


@pytest.mark.parametrize("a, b", list(itertools.product(NAMES, NAMES)))
def test_promote_types_all_pairs(a, b):
    assert name_of(ember.promote_types(ours(a), ours(b))) == name_of(torch.promote_types(theirs(a), theirs(b)))


@pytest.mark.parametrize("a, b", list(itertools.product(NAMES, NAMES)))
def test_can_cast_all_pairs(a, b):
    assert ember.can_cast(ours(a), ours(b)) == torch.can_cast(theirs(a), theirs(b))


@given(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4))
@FAST
def test_promote_types_is_associative_like_pytorch(names):
    result_ours, result_theirs = ours(names[0]), theirs(names[0])
    for n in names[1:]:
        result_ours = ember.promote_types(result_ours, ours(n))
        result_theirs = torch.promote_types(result_theirs, theirs(n))
    assert name_of(result_ours) == name_of(result_theirs)


SCALARS = [True, False, 3, -2, 2.5, 1e300, 1 + 2j]
operand = st.one_of(
    st.tuples(st.just("tensor"), st.sampled_from(NAMES)),
    st.tuples(st.just("zero_dim"), st.sampled_from(NAMES)),
    st.tuples(st.just("scalar"), st.sampled_from(SCALARS)),
)


def _build(spec, lib):
    kind, value = spec
    if kind == "tensor":
        return lib.ones(2, dtype=getattr(lib, value))
    if kind == "zero_dim":
        return lib.ones((), dtype=getattr(lib, value))
    return value


@given(st.lists(operand, min_size=1, max_size=2))
@FAST
def test_result_type_like_pytorch(specs):
    expected = _torch_result_type(specs)
    if expected is None:
        return
    assert name_of(ember.result_type(*[_build(s, ember) for s in specs])) == expected


def _torch_result_type(specs):
    built = [_build(s, torch) for s in specs]
    if len(built) == 1:
        if not isinstance(built[0], torch.Tensor):
            return None  # torch.result_type needs a tensor among two operands
        return name_of(torch.result_type(built[0], built[0]))
    if not any(isinstance(b, torch.Tensor) for b in built):
        return None
    return name_of(torch.result_type(*built))


@pytest.mark.parametrize("default", ["float64", "float16", "bfloat16"])
def test_set_default_dtype(default):
    before_ours, before_theirs = ember.get_default_dtype(), torch.get_default_dtype()
    try:
        ember.set_default_dtype(ours(default))
        torch.set_default_dtype(theirs(default))
        assert name_of(ember.get_default_dtype()) == default
        for data in (1.5, [1, 2.5], 1j, [3], True):
            if isinstance(data, complex) and default == "bfloat16":
                continue  # PyTorch refuses: "invalid default scalar type for complex"
            assert name_of(ember.tensor(data).dtype) == name_of(torch.tensor(data).dtype), data
        a, b = ember.tensor([1, 2]), torch.tensor([1, 2])
        assert name_of((a + 1.5).dtype) == name_of((b + 1.5).dtype)
        assert name_of(ember.result_type(a, 2.5)) == name_of(torch.result_type(b, 2.5))
        assert name_of(ember.zeros(2).dtype) == name_of(torch.zeros(2).dtype)
        assert name_of(ember.arange(0.0, 1.0, 0.5).dtype) == name_of(torch.arange(0.0, 1.0, 0.5).dtype)
        assert name_of(ember.full((2,), 1.5).dtype) == name_of(torch.full((2,), 1.5).dtype)
    finally:
        ember.set_default_dtype(before_ours)
        torch.set_default_dtype(before_theirs)
    assert ember.tensor(1.5).dtype is ember.float32


def test_promotion_functions_refuse_non_dtypes():
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.promote_types(lib.float32, "float")
        with pytest.raises(TypeError):
            lib.can_cast(lib.float32, 1)
        with pytest.raises(TypeError):
            lib.result_type(lib.ones(1), "a")


def test_set_default_dtype_refuses_non_floats():
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.set_default_dtype(lib.int32)
        with pytest.raises(TypeError):
            lib.set_default_dtype(lib.complex64)


ALIASES = ["float", "double", "half", "long", "int", "short", "bool", "cfloat", "cdouble", "uint8", "int8", "bfloat16"]


@pytest.mark.parametrize("alias", ALIASES)
def test_dtype_aliases(alias):
    assert getattr(ember, alias) is getattr(ember, name_of(getattr(torch, alias)))
    assert repr(getattr(ember, alias)) == repr(getattr(torch, alias)).replace("torch", "ember")
    d, t = getattr(ember, alias), getattr(torch, alias)
    assert (d.is_floating_point, d.is_complex, d.is_signed, d.itemsize) == (
        t.is_floating_point,
        t.is_complex,
        t.is_signed,
        t.itemsize,
    )


def test_dtypes_pickle_to_themselves():
    import pickle

    for d in D.ALL:
        assert pickle.loads(pickle.dumps(d)) is d


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128", None])
def test_finfo(name):
    ours_info = ember.finfo() if name is None else ember.finfo(ours(name))
    their_info = torch.finfo() if name is None else torch.finfo(theirs(name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours_info, field) == getattr(their_info, field), field
        assert type(getattr(ours_info, field)) is type(getattr(their_info, field)), field


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(name):
    ours_info, their_info = ember.iinfo(ours(name)), torch.iinfo(theirs(name))
    for field in ("bits", "max", "min", "dtype"):
        assert getattr(ours_info, field) == getattr(their_info, field), field


def test_finfo_iinfo_refuse_the_wrong_kind():
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.finfo(lib.int32)
        with pytest.raises(TypeError):
            lib.iinfo(lib.float32)
        with pytest.raises(TypeError):
            lib.iinfo(lib.bool)


shape = st.lists(st.integers(0, 4), max_size=4).map(tuple)


@given(st.lists(shape, min_size=1, max_size=4))
@FAST
def test_broadcast_shapes_like_pytorch(shapes):
    try:
        expected = tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        with pytest.raises(RuntimeError, match="must match"):
            ember.broadcast_shapes(*shapes)
        return
    result = ember.broadcast_shapes(*shapes)
    assert tuple(result) == expected and isinstance(result, ember.Size)


@given(st.lists(st.integers(1, 3), max_size=3).map(tuple), st.data())
@FAST
def test_broadcast_shapes_of_compatible_shapes(base, data):
    # Shapes made compatible by construction, so most examples take the success path.
    shapes = []
    for _ in range(data.draw(st.integers(1, 3))):
        keep = data.draw(st.integers(0, len(base)))
        dims = base[len(base) - keep :]
        shapes.append(tuple(1 if data.draw(st.booleans()) else n for n in dims))
    assert tuple(ember.broadcast_shapes(*shapes)) == tuple(torch.broadcast_shapes(*shapes))


def test_broadcast_shapes_accepts_ints_and_refuses_negative_sizes():
    assert tuple(ember.broadcast_shapes(3, (2, 1))) == tuple(torch.broadcast_shapes(3, (2, 1)))
    assert tuple(ember.broadcast_shapes()) == tuple(torch.broadcast_shapes())
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="negative length"):
            lib.broadcast_shapes((2, -1))


def test_numpy_dtype_mapping_round_trips():
    for d in D.ALL:
        assert D.from_numpy_dtype(d.np) is d
    with pytest.raises(TypeError):
        D.from_numpy_dtype(np.dtype("U3"))
