"""Advanced indexing through ``t[...]`` and ``t[...] = v`` against PyTorch: integer tensors of each
index dtype, lists (nested too), NumPy arrays, bool masks and bools, mixed with slices, None, ``...``
and ints; where the indexed dimensions go, broadcasting, negative positions, result strides, and
PyTorch's errors. Also the meta kernels of the data-dependent ops, which raise as PyTorch's do."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, to_numpy, torch

import ember

pytestmark = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _base(lib, layout="contiguous"):
    t = lib.arange(120, dtype=lib.float32).reshape(4, 5, 6)
    if layout == "transposed":
        t = lib.arange(120, dtype=lib.float32).reshape(6, 5, 4).permute(2, 1, 0)
    elif layout == "sliced":
        t = lib.arange(240, dtype=lib.float32).reshape(4, 5, 12)[:, :, ::2]
    return t


def L(lib, values, dtype="int64"):
    return lib.tensor(values, dtype=getattr(lib, dtype))


E = Ellipsis
INDICES = {
    "long rows": lambda lib: L(lib, [2, 0, -1, 2]),
    "int32": lambda lib: L(lib, [1, 3], "int32"),
    "2d index": lambda lib: L(lib, [[0, 1], [3, -2]]),
    "middle dim": lambda lib: (slice(None), L(lib, [4, 0, 1])),
    "last dim": lambda lib: (E, L(lib, [5, 0])),
    "adjacent pair": lambda lib: (slice(1, 3), L(lib, [0, 4]), L(lib, [5, 1])),
    "broadcast pair": lambda lib: (L(lib, [[0], [3]]), L(lib, [1, 2, 4])),
    "separated by slice": lambda lib: (L(lib, [0, 3]), slice(None), L(lib, [1, 5])),
    "separated, broadcast": lambda lib: (L(lib, [[0], [3]]), slice(None, None, 2), L(lib, [1, 5, 2])),
    "int between": lambda lib: (L(lib, [0, 3]), 1, L(lib, [1, 5])),
    "int then index after slice": lambda lib: (0, slice(None), L(lib, [1, 5])),
    "None first": lambda lib: (None, L(lib, [1, 2])),
    "None between": lambda lib: (L(lib, [1, 2]), None, L(lib, [0, 3])),
    "list": lambda lib: [0, 2, 3],
    "list in tuple": lambda lib: (slice(None), [1, 1, 0]),
    "nested list in tuple": lambda lib: ([[0, 1], [2, 3]], slice(1, 3)),
    "numpy array": lambda lib: np.array([3, 1]),
    "numpy in tuple": lambda lib: (slice(None), np.array([[0], [4]]), np.array([1, 2])),
    "bool list": lambda lib: [True, False, True, True],
    "empty list": lambda lib: [],
    "empty index": lambda lib: L(lib, []),
    "mask full": lambda lib: _base(lib) > 60,
    "mask 2d": lambda lib: (_base(lib) > 60)[:, :, 0],
    "mask middle": lambda lib: (slice(None), L(lib, [True, False, True, False, True], "bool")),
    "mask and index": lambda lib: (L(lib, [True, False, True, True], "bool"), slice(None), L(lib, [0, 1, 5])),
    "uint8 mask": lambda lib: L(lib, [1, 0, 1, 0], "uint8"),
    "all-false mask": lambda lib: L(lib, [False] * 4, "bool"),
    "True with index": lambda lib: (True, L(lib, [1, 3])),
    "ellipsis middle": lambda lib: (L(lib, [1]), E, L(lib, [2, 3])),
    "0-dim tensor int": lambda lib: (L(lib, 2), L(lib, [1, 2])),
    "transposed index": lambda lib: L(lib, [[0, 1, 2], [3, 2, 1]]).t(),
}


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("name", list(INDICES))
def test_getitem_matches_pytorch(name, layout):
    make = INDICES[name]
    theirs = _quiet(lambda: _base(torch, layout)[make(torch)])
    ours = _quiet(lambda: _base(ember, layout)[make(ember)])
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype == ember.float32
    if theirs.numel() > 1:
        assert ours.stride() == theirs.stride(), name
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))
    base = _base(ember, layout)
    assert _quiet(lambda: base[make(ember)]).untyped_storage() is not base.untyped_storage()


@pytest.mark.parametrize("name", [n for n in INDICES if n != "uint8 mask"])
def test_setitem_matches_pytorch(name):
    make = INDICES[name]
    results = []
    for lib in (torch, ember):
        t = _base(lib, "transposed").clone()
        shape = _quiet(lambda t=t, lib=lib: t[make(lib)]).shape
        values = lib.arange(int(np.prod(shape)), dtype=lib.float32).reshape(shape) * -1 - 1
        _quiet(lambda t=t, lib=lib, v=values: t.__setitem__(make(lib), v))
        _quiet(lambda t=t, lib=lib: t.__setitem__(make(lib), 7.5))
        t2 = _base(lib).clone()
        _quiet(lambda t2=t2, lib=lib: t2.__setitem__(make(lib), lib.tensor(3.0)))
        results.append((to_numpy(t), to_numpy(t2)))
    np.testing.assert_array_equal(results[1][0], results[0][0])
    np.testing.assert_array_equal(results[1][1], results[0][1])


def test_setitem_broadcasts_and_casts_like_pytorch():
    for lib in (torch, ember):
        t = lib.zeros(4, 3, dtype=lib.int64)
        t[L(lib, [0, 2])] = lib.tensor([[1, 2, 3]])  # a leading size-1 dimension is dropped
        t[L(lib, [1, 3]), 1] = 2.9  # a float into an int tensor truncates
        t[t > 2] += 10
        t[[3, 3], [0, 0]] += 1  # not accumulate: both write the same sum
        t[t[:, 0] > 1] = lib.tensor(5.9, dtype=lib.float64)  # one mask and one value: masked_fill_, which casts
        t[:, L(lib, [True, False, True], "bool")] = lib.tensor([-4])
        if lib is torch:
            expected = t.numpy().copy()
    np.testing.assert_array_equal(t.numpy(), expected)


def test_index_put_accumulate_sums_repeats():
    for lib in (torch, ember):
        t = lib.zeros(5, 3, dtype=lib.float64)
        idx = L(lib, [0, 4, 0, 0, -1])
        values = lib.arange(15, dtype=lib.float64).reshape(5, 3)
        t.index_put_((idx,), values, accumulate=True)
        t.index_put_((L(lib, [1, 1]), L(lib, [2, 2])), lib.tensor([1.0, 2.0], dtype=lib.float64), accumulate=True)
        if lib is torch:
            expected = t.numpy().copy()
    np.testing.assert_array_equal(t.numpy(), expected)


def test_index_put_last_write_wins():
    # PyTorch leaves repeated positions undefined without accumulate; ours keeps the last value.
    t = ember.zeros(3)
    t[ember.tensor([1, 1, 1])] = ember.tensor([1.0, 2.0, 3.0])
    assert t.tolist() == [0.0, 3.0, 0.0]


ERRORS = {
    "out of range": (lambda lib: L(lib, [5]), IndexError, "index 5 is out of bounds for dimension 0 with size 4"),
    "negative out of range": (lambda lib: L(lib, [-5]), IndexError, "index -5 is out of bounds"),
    "second dim": (lambda lib: (slice(None), L(lib, [7])), IndexError, "index 7 is out of bounds for dimension 0"),
    "float index": (lambda lib: L(lib, [1.0], "float32"), IndexError, "tensors used as indices must be long"),
    "int8 index": (lambda lib: L(lib, [1], "int8"), IndexError, "tensors used as indices must be long"),
    "too many": (lambda lib: (L(lib, [0]), 0, 0, 0), IndexError, "too many indices for tensor of dimension 3"),
    "mask shape": (lambda lib: (slice(None), L(lib, [True, False], "bool")), IndexError, "The shape of the mask"),
    "no broadcast": (lambda lib: (L(lib, [0, 1]), L(lib, [0, 1, 2])), IndexError, "shape mismatch"),
    "False with index": (lambda lib: (L(lib, [1, 3]), False), IndexError, "shape mismatch"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_getitem_errors(name):
    make, error, match = ERRORS[name]
    with pytest.raises(error):
        _base(torch)[make(torch)]
    with pytest.raises(error, match=match):
        _base(ember)[make(ember)]
    with pytest.raises(error, match=match):
        _base(ember)[make(ember)] = 1.0


def test_setitem_errors():
    t = ember.zeros(3)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        t[ember.tensor([0])] = ember.tensor([1.0], dtype=ember.float64)
    with pytest.raises(RuntimeError, match="shape mismatch: value tensor of shape"):
        t[ember.tensor([0, 1])] = ember.ones(3)
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="boolean masks"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.zeros(3)[lib.tensor([1, 0, 1], dtype=lib.uint8)] = 2.0
        with pytest.raises(RuntimeError, match="without overflow"):
            lib.zeros(3, dtype=lib.uint8)[lib.tensor([0])] = 300


def test_take_along_dim_refuses_out_of_range():
    # PyTorch 2.13 returns whatever lies past the end here; we refuse.
    with pytest.raises(RuntimeError, match="out of bounds"):
        ember.take_along_dim(ember.ones(3, 4), ember.tensor([[9]]), 1)


def test_where_with_condition_only():
    c = torch.tensor([[True, False], [True, True]])
    theirs, ours = torch.where(c), ember.where(ember.tensor(c.tolist()))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


DATA_DEPENDENT = {
    "mask index": lambda t: t[t > 0],
    "nonzero": lambda t: ember.nonzero(t),
    "argwhere": lambda t: ember.argwhere(t),
    "masked_select": lambda t: ember.masked_select(t, t > 0),
    "unique": lambda t: ember.unique(t),
    "unique_consecutive": lambda t: ember.unique_consecutive(t),
    "where(condition)": lambda t: ember.where(t > 0),
}


@pytest.mark.parametrize("name", list(DATA_DEPENDENT))
def test_meta_refuses_data_dependent_shapes(name):
    with pytest.raises(NotImplementedError):
        DATA_DEPENDENT[name](ember.empty(3, 4, device="meta"))


def test_meta_index_with_integer_tensors():
    t = ember.empty(4, 5, 6, device="meta").permute(2, 0, 1)
    idx = ember.empty(2, 3, dtype=ember.int64, device="meta")
    cpu = ember.zeros(4, 5, 6).permute(2, 0, 1)[:, ember.zeros(2, 3, dtype=ember.int64)]
    meta = t[:, idx]
    assert (meta.shape, meta.stride(), meta.device.type) == (cpu.shape, cpu.stride(), "meta")


def test_basic_indexing_stays_a_view():
    t = ember.zeros(4, 5)
    view = t[1:3, ::2]
    assert view.untyped_storage() is t.untyped_storage()


# -- random mixes of every kind of index ---------------------------------------------------------------

SHAPE = (4, 3, 5, 2)


def _random_index(seed: int, lib) -> tuple:
    """The same random index for either library: ints, slices, None, ``...``, bools, tensors, masks, lists."""
    rng = np.random.default_rng(seed)
    items, ellipsis = [], False
    for position in range(rng.integers(1, 5)):
        size = SHAPE[min(position, 3)]
        kind = rng.integers(8)
        if kind == 6 and ellipsis:
            kind = 2
        if kind == 0:
            items.append(int(rng.integers(-size, size)))
        elif kind == 1:
            items.append(
                slice([None, 1, -2][rng.integers(3)], [None, 3, -1][rng.integers(3)], [None, 2][rng.integers(2)])
            )
        elif kind == 2:
            items.append(None)
        elif kind == 3:
            shape = [(2,), (3, 1), (1,), ()][rng.integers(4)]
            items.append(lib.tensor(rng.integers(-size, size, shape).tolist()))
        elif kind == 4:
            items.append(lib.tensor(rng.integers(0, 2, (size,)).astype(bool).tolist()))
        elif kind == 5:
            items.append(rng.integers(-size, size, 2).tolist())
        elif kind == 6:
            items.append(Ellipsis)
            ellipsis = True
        else:
            items.append(bool(rng.integers(2)))
    return tuple(items)


def _transposed_base(lib):
    data = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    return lib.from_numpy(np.ascontiguousarray(data.transpose(2, 0, 3, 1))).permute(1, 3, 0, 2)


def _outcome(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    except (IndexError, RuntimeError, TypeError, ValueError) as error:
        return type(error)


@pytest.mark.parametrize("chunk", range(4))
def test_random_indices_match_pytorch(chunk):
    for seed in range(chunk * 150, (chunk + 1) * 150):
        results = []
        for lib in (torch, ember):
            index = _random_index(seed, lib)

            def read(lib=lib, index=index):
                r = _transposed_base(lib)[index]
                return tuple(r.shape), (r.stride() if r.numel() > 1 else None), to_numpy(r).copy()

            def write(lib=lib, index=index):
                t = _transposed_base(lib)
                shape = t[index].shape
                t[index] = -1.5
                t[index] = lib.arange(int(np.prod(shape)), dtype=lib.float32).reshape(shape) + 1000
                return to_numpy(t).copy()

            results.append((_outcome(read), _outcome(write)))
        (their_read, their_write), (our_read, our_write) = results
        for theirs, ours in ((their_read, our_read), (their_write, our_write)):
            if isinstance(theirs, type) or isinstance(ours, type):
                assert ours is theirs, f"seed {seed}: {_random_index(seed, torch)}: ours {ours}, PyTorch {theirs}"
            elif isinstance(theirs, tuple):
                assert ours[:2] == theirs[:2], f"seed {seed}: {_random_index(seed, torch)}"
                np.testing.assert_array_equal(ours[2], theirs[2])
            else:
                np.testing.assert_array_equal(ours, theirs, err_msg=f"seed {seed}: {_random_index(seed, torch)}")
