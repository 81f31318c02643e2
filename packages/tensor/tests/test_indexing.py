"""Basic indexing, ``t[...]`` and ``t[...] = value``, against PyTorch: results are views with
PyTorch's shape, strides and offset; assignment writes the base, broadcasting and casting."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, to_numpy, torch

import ember

pytestmark = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)

E = Ellipsis
INDICES = [
    0,
    -1,
    2,
    (1, 2),
    (-2, -3, -4),
    slice(None),
    slice(1, None),
    slice(None, None, 2),
    slice(1, -1, 3),
    slice(-100, 100),
    slice(5, 2),
    slice(None, None, 5),
    (slice(None), 1),
    (slice(None), slice(None), -1),
    (slice(2), slice(1, 3), slice(None, None, 2)),
    None,
    (None, 1, None),
    (1, None, slice(None), None),
    E,
    (E, 1),
    (1, E),
    (E, None),
    (0, E, 0),
    (None, E, None, 0),
    (1, 2, 3, E),
    True,
    False,
    (True, 1),
    (0, False),
    (E, True),
    (None, True, 1, slice(1, 3)),
    (),
    (slice(None), slice(None), slice(None)),
    np.int64(1),
]

LAYOUTS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.transpose(0, 2),
    "sliced": lambda t: t[:, :, ::1],
    "offset": lambda t: t[1:],
}


def _base(lib):
    return lib.tensor(np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5))


def _strides(t):
    """Strides of the dimensions that have them (a size-1 dimension's stride is never used)."""
    return [st for n, st in zip(t.shape, t.stride(), strict=True) if n != 1]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_getitem_matches_pytorch(index, layout):
    theirs_base, ours_base = LAYOUTS[layout](_base(torch)), LAYOUTS[layout](_base(ember))
    try:
        theirs = theirs_base[index]
    except Exception as error:
        with pytest.raises(type(error)):
            ours_base[index]
        return
    ours = ours_base[index]
    assert tuple(ours.shape) == tuple(theirs.shape), index
    if theirs.numel() > 1:
        assert _strides(ours) == _strides(theirs), index
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))
    assert ours is not ours_base
    is_view = theirs.untyped_storage().data_ptr() == theirs_base.untyped_storage().data_ptr()
    assert (ours.untyped_storage() is ours_base.untyped_storage()) == is_view, index
    if is_view:
        assert ours.storage_offset() == theirs.storage_offset(), index
    if ours.numel():
        version = ours_base._version
        ours.fill_(-1)
        theirs.fill_(-1)
        np.testing.assert_array_equal(to_numpy(ours_base), to_numpy(theirs_base))
        assert (ours_base._version > version) == is_view


SEVERAL_ELLIPSES = [
    (E, 0, E),
    (0, E, E),
    (E, E),
    (E, slice(1, 3), E),
    (E, [0, 1], E),
    (E, E, 0),
    (E, None, E, 1),
    ([0, 2], E, E, [1, 2]),
]


@pytest.mark.parametrize("index", SEVERAL_ELLIPSES, ids=repr)
def test_several_ellipses_as_pytorch(index):
    # Each ellipsis stands for the dimensions no other item takes; where that runs past the last
    # dimension both libraries raise IndexError.
    try:
        theirs = _base(torch)[index]
    except IndexError:
        with pytest.raises(IndexError):
            _base(ember)[index]
        return
    np.testing.assert_array_equal(to_numpy(_base(ember)[index]), to_numpy(theirs))


RANGES = [range(2), (slice(1, None), range(2)), (0, range(1, 3), range(2)), range(0), [range(2), range(1, 3)]]


@pytest.mark.parametrize("index", RANGES, ids=repr)
def test_ranges_index_as_lists(index):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a list of sequences is read as a tuple, with PyTorch's warning
        theirs, ours = _base(torch)[index], _base(ember)[index]
        np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))
        ours_base, theirs_base = _base(ember), _base(torch)
        ours_base[index] = -1
        theirs_base[index] = -1
    np.testing.assert_array_equal(to_numpy(ours_base), to_numpy(theirs_base))


BAD_INDICES = [
    (3, IndexError),
    (-4, IndexError),
    ((0, 4), IndexError),
    ((0, 0, 5), IndexError),
    ((0, 0, 0, 0), IndexError),
    ((E, 0, 0, 0, 0), IndexError),
    (slice(None, None, -1), ValueError),
    (slice(None, None, 0), ValueError),
    ("a", TypeError),
    (1.5, IndexError),
]


@pytest.mark.parametrize("index, error", BAD_INDICES, ids=[repr(i) for i, _ in BAD_INDICES])
def test_bad_indices_raise_like_pytorch(index, error):
    with pytest.raises(error):
        _base(torch)[index]
    with pytest.raises(error):
        _base(ember)[index]
    with pytest.raises(error):
        _base(ember)[index] = 0


@pytest.mark.parametrize(
    "make_index",
    [
        lambda lib: lib.tensor(1),
        lambda lib: (lib.tensor(-1), lib.tensor(2, dtype=lib.int8)),
        lambda lib: (slice(None), lib.tensor(True)),
        lambda lib: lib.tensor(False),
        lambda lib: np.array(2),
    ],
)
def test_zero_dim_tensor_indices_act_as_numbers(make_index):
    theirs, ours = _base(torch)[make_index(torch)], _base(ember)[make_index(ember)]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))
    t = _base(ember)
    t[make_index(ember)] = -1
    expected = _base(torch)
    expected[make_index(torch)] = -1
    np.testing.assert_array_equal(to_numpy(t), to_numpy(expected))


def test_zero_dim_indexing():
    for lib in (torch, ember):
        t = lib.tensor(5.0)
        assert t[()].shape == () and t[...].shape == () and t[None].shape == (1,)
        assert t[True].shape == (1,) and t[False].shape == (0,)
        with pytest.raises(IndexError):
            t[0]


ADVANCED = [
    lambda lib: lib.tensor([0, 1]),
    lambda lib: [0, 1],
    lambda lib: lib.tensor([True, False, True]),
    lambda lib: (slice(None), lib.tensor([1])),
    lambda lib: (0, [1, 2]),
    lambda lib: np.array([0, 1]),
]


@pytest.mark.parametrize("make_index", ADVANCED)
def test_advanced_indexing_matches_pytorch(make_index):
    # The full coverage is in test_advanced_indexing.py; these copy rather than view.
    theirs, ours = _base(torch)[make_index(torch)], _base(ember)[make_index(ember)]
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))
    assert ours.untyped_storage() is not _base(ember).untyped_storage()


SETS = [
    (0, 7),
    ((1, 2), 3.5),
    ((slice(None), 1), -2),
    ((E, 2), True),
    ((slice(None, None, 2), None), 9),
    ((1,), lambda lib: lib.ones(5)),
    ((slice(None), slice(1, 3)), lambda lib: lib.arange(5, dtype=lib.float64)),
    ((slice(None), slice(1, 3)), lambda lib: lib.tensor([[1], [2]], dtype=lib.int32)),
    ((0, 0), lambda lib: lib.tensor(11)),
    (E, lambda lib: lib.tensor([[[1.5]]])),
    ((0, slice(None), 0), lambda lib: lib.tensor([True, False, True, False])),
    ((1, 1), 3 + 4j),
    ((1, 1), lambda lib: lib.tensor(3 + 4j)),
    ((True, 1), 5),
    (False, 5),
    ((E, True), lambda lib: lib.ones(5, 1)),
    ((1, 1), 3 + 0j),
    ((1, 1), float("nan")),
    ((1, 1), float("inf")),
    ((1, 1), 1e39),
    ((1, 1), 2**63),
    ((1, 1), 2**64),
    ((1, 1), -1),
    ((1, 1), 300),
    ((1, 1), -256),
]


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64", "uint8", "int8", "float16", "bfloat16"])
@pytest.mark.parametrize("index, value", SETS, ids=[repr(i) for i, _ in SETS])
def test_setitem_matches_pytorch(index, value, dtype):
    if value == 1e39 and dtype in ("float16", "bfloat16"):
        pytest.skip("PyTorch's setitem stores inf here while its fill_ refuses the value; we refuse both")
    outcome = {}
    for lib in (torch, ember):
        t = _base(lib).to(getattr(lib, dtype)).transpose(1, 2).transpose(1, 2)
        v = value(lib) if callable(value) else value
        version = t._version
        try:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t[index] = v
        except Exception as error:
            outcome[lib] = type(error)
            continue
        outcome[lib] = (to_numpy(t), str(t.dtype).split(".")[-1], t._version > version)
    if isinstance(outcome[torch], type):
        assert isinstance(outcome[ember], type) and issubclass(outcome[ember], outcome[torch])
        return
    assert not isinstance(outcome[ember], type), f"we raised {outcome[ember]}"
    np.testing.assert_array_equal(outcome[ember][0], outcome[torch][0])
    assert outcome[ember][1:] == outcome[torch][1:]


FILLS = [3 + 4j, 3 + 0j, 1e10, 1e39, -1, 300, -256, float("nan"), float("inf"), 2**63, 2**64, -(2**63) - 1]
# Floats convert only within the range (no wrapping into unsigned types, unlike integers), fractions included.
FILLS += [-1.25, -1.0, -0.0, 255.5, 127.5, -128.5, -129.0, 7.9]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "int8", "uint8", "bool", "complex64"])
@pytest.mark.parametrize("value", FILLS, ids=repr)
def test_fill_checks_overflow_like_pytorch(value, dtype):
    theirs, ours = torch.zeros(2, dtype=getattr(torch, dtype)), ember.zeros(2, dtype=getattr(ember, dtype))
    try:
        theirs.fill_(value)
    except Exception as error:
        with pytest.raises(type(error)):
            ours.fill_(value)
        return
    ours.fill_(value)
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


def test_setitem_shape_mismatch():
    for lib in (torch, ember):
        t = lib.zeros(3, 4)
        with pytest.raises(RuntimeError):
            t[0] = lib.ones(3)
        with pytest.raises(RuntimeError):
            t[:, 0] = lib.ones(2, 3)
