"""Indirect loads and scatters (``lowering_indirect.py``, ``lowering_scatter.py``) compiled against eager
and against PyTorch: embedding, index_select, gather (any dimension size), advanced indexing (None
entries, broadcasting, negative indices), index_put with and without accumulate, float32/float64 with
int32/int64 indices. The oracle-free tests are in ``test_indirect_kernels.py``."""

from __future__ import annotations

import numpy as np
import pytest
from inductor_testing import assert_same, compile_with_inductor

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

DTYPES = {"float32": (ember.float32, torch.float32), "float64": (ember.float64, torch.float64)}
INDEX_DTYPES = {"int64": (ember.int64, torch.int64), "int32": (ember.int32, torch.int32)}


def _both(array: np.ndarray, dtypes: tuple) -> tuple:
    return ember.tensor(array).to(dtypes[0]), torch.tensor(array).to(dtypes[1])


def _check(fn, arrays: list, dtypes: list, lowered: str, rtol: float = 1e-6):
    """``fn`` compiled, eager and under PyTorch on the same data: equal (and ``lowered`` was lowered)."""
    ours = [_both(a, d)[0] for a, d in zip(arrays, dtypes, strict=True)]
    theirs = [_both(a, d)[1] for a, d in zip(arrays, dtypes, strict=True)]
    compiled, rec = compile_with_inductor(lambda *a: fn(ember, *a))
    got, want, oracle = compiled(*ours), fn(ember, *ours), fn(torch, *theirs)
    assert_same(got, want, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(got.numpy(), oracle.numpy(), rtol=rtol, atol=rtol)
    assert lowered in {str(t) for t in rec.graphs[0].lowered}, rec.graphs[0].fallbacks
    assert not [op for op, _ in rec.graphs[0].fallbacks if lowered in op]
    return rec


def _index(rng, n: int, shape: tuple, negative: bool = False) -> np.ndarray:
    low = -n if negative else 0
    return rng.integers(low, n, size=shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", INDEX_DTYPES)
def test_embedding(dtype, idtype):
    rng = np.random.default_rng(0)
    w, idx = rng.standard_normal((50, 24)), _index(rng, 50, (3, 7))
    _check(lambda t, w, i: t.nn.functional.embedding(i, w) * 2 + 1, [w, idx], [DTYPES[dtype], INDEX_DTYPES[idtype]],
           "aten.embedding.default")  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", INDEX_DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select(dtype, idtype, dim):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 5, 4))
    idx = _index(rng, x.shape[dim], (9,))
    _check(lambda t, x, i: t.index_select(x, dim, i).sin(), [x, idx], [DTYPES[dtype], INDEX_DTYPES[idtype]],
           "aten.index_select.default")  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("n", [3, 3000])
def test_gather_any_dimension_size(dtype, dim, n):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((n, 4) if dim == 0 else (4, n))
    idx = _index(rng, n, (5, 4) if dim == 0 else (4, 5))
    _check(lambda t, x, i: t.gather(x, dim, i) - 1, [x, idx], [DTYPES[dtype], INDEX_DTYPES["int64"]],
           "aten.gather.default")  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", INDEX_DTYPES)
@pytest.mark.parametrize(
    "case",
    ["first", "middle", "two_adjacent", "separated", "broadcast"],
)
def test_advanced_indexing_with_negative_indices(dtype, idtype, case):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 6, 7))
    i5, i6, i7 = _index(rng, 5, (4,), True), _index(rng, 6, (4,), True), _index(rng, 7, (4,), True)
    fns = {
        "first": (lambda t, x, a, b: x[a] * 3, [i5, i6]),
        "middle": (lambda t, x, a, b: x[:, b] * 3, [i5, i6]),
        "two_adjacent": (lambda t, x, a, b: x[:, a, b] * 3, [i6, i7]),
        "separated": (lambda t, x, a, b: x[a, :, b] * 3, [i5, i7]),
        "broadcast": (lambda t, x, a, b: x[a.reshape(4, 1), :, b.reshape(1, 4)] * 3, [i5, i7]),
    }
    fn, idx = fns[case]
    _check(fn, [x, *idx], [DTYPES[dtype], INDEX_DTYPES[idtype], INDEX_DTYPES[idtype]], "aten.index.Tensor")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", INDEX_DTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(dtype, idtype, accumulate):
    rng = np.random.default_rng(4)
    x, v = rng.standard_normal((8, 5)), rng.standard_normal((6, 5))
    # distinct rows when not accumulating (which duplicate wins is not specified), some negative
    idx = rng.permutation(np.arange(-8, 8))[:6] if not accumulate else _index(rng, 8, (6,), True)
    if not accumulate:
        idx = np.array([i for i in idx if (i + 8) % 8 not in [(j + 8) % 8 for j in idx[: list(idx).index(i)]]])
        v = v[: len(idx)]
    _check(lambda t, x, i, v: t.index_put(x * 2, (i,), v, accumulate=accumulate) + 1, [x, idx, v],
           [DTYPES[dtype], INDEX_DTYPES[idtype], DTYPES[dtype]], "aten.index_put.default")  # fmt: skip


def test_index_put_broadcast_values_and_two_index_tensors():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 5, 6))
    a, b = _index(rng, 4, (3,)), _index(rng, 5, (3,))
    v = rng.standard_normal((6,))
    _check(lambda t, x, a, b, v: t.index_put(x, (a, b), v, accumulate=True), [x, a, b, v],
           [DTYPES["float64"], INDEX_DTYPES["int64"], INDEX_DTYPES["int64"], DTYPES["float64"]],
           "aten.index_put.default")  # fmt: skip


def test_setitem_with_a_slice_between_index_tensors():
    rng = np.random.default_rng(8)
    x, v = rng.standard_normal((4, 5, 6)), rng.standard_normal((3, 5))
    a, b = _index(rng, 4, (3,)), _index(rng, 6, (3,))

    def fn(t, x, a, b, v):
        y = x * 1
        y[a, :, b] = v
        return y

    _check(fn, [x, a, b, v], [DTYPES["float64"], INDEX_DTYPES["int64"], INDEX_DTYPES["int64"], DTYPES["float64"]],
           "aten.index_put.default")  # fmt: skip
