"""Result layouts of the joining and rearranging families on randomly strided inputs, against PyTorch.

Each case makes the same tensor in both libraries from a random shape, a random permutation of its
storage order, random slicing steps and maybe a broadcast (stride-0) dim, then compares the result's
shape, strides and values of cat, stack, flip, roll, repeat and tril, and the meta result's strides.
"""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

pytestmark = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _strided(rng: np.random.Generator, ndim: int):
    """A recipe for a strided tensor: (storage shape, permutation, steps, expand dim)."""
    shape = (
        tuple(int(s) for s in rng.integers(0, 4, size=ndim))
        if rng.random() < 0.15
        else tuple(int(s) for s in rng.integers(1, 4, size=ndim))
    )
    perm = tuple(int(p) for p in rng.permutation(ndim))
    steps = tuple(int(s) for s in rng.choice([1, 1, 2], size=ndim))
    expand = int(rng.integers(0, ndim)) if ndim and rng.random() < 0.2 else None
    return shape, perm, steps, expand


def _build(lib, recipe, values: np.ndarray):
    shape, perm, steps, expand = recipe
    stored = tuple(shape[p] * steps[p] for p in perm)
    base = lib.tensor(values[: int(np.prod(stored))].tolist(), dtype=lib.float64).reshape(stored)
    inverse = tuple(int(i) for i in np.argsort(perm))
    t = base.permute(*inverse)
    t = t[tuple(slice(None, None, s) for s in steps)]
    if expand is not None and t.shape[expand] > 0:
        index = [slice(None)] * t.ndim
        index[expand] = slice(0, 1)
        t = t[tuple(index)].expand(*t.shape)
    return t


def _compare(ours, theirs, label: str) -> None:
    assert tuple(ours.shape) == tuple(theirs.shape), label
    if theirs.numel() > 1:
        assert ours.stride() == theirs.stride(), f"{label}: {ours.stride()} vs {theirs.stride()}"
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=label)


def _meta_like(t):
    elements = t.untyped_storage().nbytes() // t.element_size()
    return ember.empty(elements, dtype=t.dtype, device="meta").as_strided(t.shape, t.stride(), t.storage_offset())


def _check(fn, recipes, label: str, values) -> None:
    inputs = {lib: [_build(lib, r, values) for r in recipes] for lib in (ember, torch)}
    try:
        theirs = fn(torch, inputs[torch])
    except (RuntimeError, IndexError, ValueError, TypeError) as error:
        with pytest.raises(type(error)):
            fn(ember, inputs[ember])
        return
    ours = fn(ember, inputs[ember])
    _compare(ours, theirs, label)
    meta = fn(ember, [_meta_like(t) for t in inputs[ember]])
    assert (tuple(meta.shape), meta.stride()) == (tuple(ours.shape), ours.stride()), f"{label}: meta"


@pytest.mark.parametrize("seed", range(6))
def test_random_layouts(seed: int):
    rng = np.random.default_rng(seed)
    values = np.arange(4096, dtype=np.float64)
    for case in range(40):
        ndim = int(rng.integers(1, 6))
        a, b = _strided(rng, ndim), _strided(rng, ndim)
        dim = int(rng.integers(-ndim, ndim))
        label = f"seed {seed} case {case}: {a} {b} dim {dim}"
        # cat: b takes a's sizes off the dim, so most pairs join; the layout comes from both.
        b = (tuple(s if i == dim % ndim else a[0][i] for i, s in enumerate(b[0])), *b[1:])
        _check(lambda lib, ts, d=dim: lib.cat(ts, d), [a, b], "cat " + label, values)
        _check(lambda lib, ts, d=dim: lib.stack([ts[0], ts[0]], d), [a], "stack " + label, values)
        _check(lambda lib, ts, d=dim: lib.flip(ts[0], [d]), [a], "flip " + label, values)
        _check(lambda lib, ts: lib.flip(ts[0], list(range(ts[0].ndim))), [a], "flip all " + label, values)
        shift = int(rng.integers(-5, 6))
        _check(lambda lib, ts, d=dim, s=shift: lib.roll(ts[0], s, d), [a], "roll " + label, values)
        _check(lambda lib, ts, s=shift: lib.roll(ts[0], s), [a], "roll flat " + label, values)
        _check(lambda lib, ts: ts[0].repeat(*([2] * (ts[0].ndim + 1))), [a], "repeat " + label, values)
        if ndim >= 2:
            _check(lambda lib, ts, s=shift: lib.tril(ts[0], s), [a], "tril " + label, values)
