"""Every OpInfo op under ``vmap`` against a Python loop over the batch.

Each sample's tensors become a batch of three lanes (floating lanes scaled differently, so that lanes
differ while staying in the op's domain; integer and bool lanes are copies, so indices stay valid).
The op is mapped once with each tensor argument batched alone at dim 0, and once with every tensor
argument batched at its last dim; the result must equal the op called on each lane and stacked.
"""

from __future__ import annotations

import importlib
import pathlib

import numpy as np
import pytest
from opinfo import OpInfo, build, to_numpy

import ember
from ember.func import vmap
from ember.func._tree import flatten, unflatten

TABLE_DIR = pathlib.Path(__file__).parents[2] / "tensor" / "tests"
TABLES = sorted(p.stem for p in TABLE_DIR.glob("opinfo_*.py"))
OPS: list[OpInfo] = [op for table in TABLES for op in importlib.import_module(table).OPS if op.transforms]
RANDOM = {op.name for op in importlib.import_module("opinfo_random").OPS}
# Ops whose result shape depends on the data: vmap refuses them, as PyTorch's does.
DYNAMIC = {
    "masked_select",
    "nonzero",
    "nonzero_as_tuple",
    "where_condition",
    "argwhere",
    "unique",
    "unique_consecutive",
    "F.one_hot inferred",
    "bincount",
    "Tensor.bincount",
    # split where a batched tensor's values say: each lane would cut differently (refused as .item()).
    "tensor_split_tensor",
    # loops or checks that read the values: gcd's Euclid steps, repeats or indices checked against bounds.
    "gcd",
    "lcm",
    "repeat_interleave_tensor",
    "unravel_index",
    "quantile_tensor_q",
    # as_strided's sizes and strides describe one lane's memory: refused with a clear error.
    "as_strided",
}
# Refusals with a clear error for one layout of the batch, by OpInfo name.
REFUSED = {
    "view_dtype": "needs each lane's last dim contiguous",
    "view_as_complex": "needs each lane's last dim contiguous",
    "view_as_complex_copy": "needs each lane's last dim contiguous",
}
LANES = 3
CASES = [pytest.param(op, id=op.name) for op in OPS if op.name not in RANDOM]


def _samples(op: OpInfo) -> list:
    """The first and the last sample of the first dtype (float32, else int64 or bool) the op computes in."""
    for name in (*(d for d in ("float32", "float64", "int64", "bool") if d in op.dtypes), op.dtypes[0]):
        samples = op.samples(name, np.random.default_rng(7))
        if not samples:
            continue
        try:
            op.call(ember, *build(samples[0].args, ember), **build(samples[0].kwargs, ember))
        except Exception:
            continue
        return samples[:1] + samples[-1:] if len(samples) > 1 else samples
    return []


def _lanes(t: ember.Tensor) -> list:
    if t.is_floating_point() or t.is_complex():
        return [t * (1.0 - 0.25 * k) for k in range(LANES)]
    return [t.clone() for _ in range(LANES)]


def _compare(ours, expected, what: str) -> None:
    if isinstance(ours, tuple | list):
        assert isinstance(expected, tuple | list) and len(ours) == len(expected), what
        for x, y in zip(ours, expected, strict=True):
            _compare(x, y, what)
    else:
        _compare_arrays(to_numpy(ours), to_numpy(expected), what)


def _compare_arrays(a, b, what: str) -> None:
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}"
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, equal_nan=True, err_msg=what)


def _stack(results: list):
    first = results[0]
    if isinstance(first, ember.Tensor):
        return ember.stack(results)
    return tuple(_stack([r[i] for r in results]) for i in range(len(first)))


def _tensor_results(value) -> tuple:
    return tuple(x for x in flatten(value)[0] if isinstance(x, ember.Tensor))


def _check_sample(op: OpInfo, sample) -> int:
    args = build(sample.args, ember)
    kwargs = build(sample.kwargs, ember)
    leaves, spec = flatten(args)
    positions = [i for i, x in enumerate(leaves) if isinstance(x, ember.Tensor)]
    if not positions:
        return 0
    try:
        reference = op.call(ember, *args, **kwargs)
    except Exception:
        return 0  # an error sample's own business; errors are tested elsewhere
    if not _tensor_results(reference):
        return 0
    lanes = {i: _lanes(leaves[i]) for i in positions}

    def call_with(flat: list):
        return _tensor_results(op.call(ember, *unflatten(flat, spec), **kwargs))

    def lane_leaves(k: int, batched: set) -> list:
        return [lanes[i][k] if i in batched else x for i, x in enumerate(leaves)]

    plans = [({i}, 0) for i in positions] + [(set(positions), -1)]
    checked = 0
    for batched, dim in plans:
        expected = _stack([call_with(lane_leaves(k, batched)) for k in range(LANES)])
        inputs = [
            ember.stack(lanes[i], dim=dim if dim == 0 else lanes[i][0].ndim) if i in batched else x
            for i, x in enumerate(leaves)
        ]
        in_dims = tuple((0 if dim == 0 else inputs[i].ndim - 1) if i in batched else None for i in range(len(inputs)))
        try:
            ours = vmap(lambda *flat: call_with(list(flat)), in_dims=in_dims)(*inputs)
        except RuntimeError as error:
            # Writing batched values into an unbatched tensor is refused, as PyTorch refuses it.
            if "is not possible because there exists a Tensor `other`" in str(error) and dim == 0:
                continue
            # Samples whose call reads values on the host (NumPy checks of the result) cannot be mapped.
            if "cannot convert a batched tensor to NumPy" in str(error):
                continue
            if op.name in REFUSED and REFUSED[op.name] in str(error):
                continue
            raise
        _compare(ours, expected, f"{op.name} {sample} batched {sorted(batched)} at {dim}")
        checked += 1
    return checked + (_check_nested(op, sample, leaves, positions, lanes, call_with) if checked else 0)


def _check_nested(op: OpInfo, sample, leaves: list, positions: list, lanes: dict, call_with) -> int:
    """Two levels: every tensor batched at 0 in both, the outer lanes being the inner ones in two orders."""
    orders = [list(range(LANES)), list(reversed(range(LANES)))]
    expected = _stack(
        [
            _stack([call_with([lanes[i][k] if i in lanes else x for i, x in enumerate(leaves)]) for k in o])
            for o in orders
        ]
    )
    inputs = [
        ember.stack([ember.stack([lanes[i][k] for k in o]) for o in orders]) if i in lanes else x
        for i, x in enumerate(leaves)
    ]
    in_dims = tuple(0 if i in lanes else None for i in range(len(inputs)))
    mapped = vmap(vmap(lambda *flat: call_with(list(flat)), in_dims=in_dims), in_dims=in_dims)
    try:
        ours = mapped(*inputs)
    except RuntimeError as error:
        if "cannot convert a batched tensor to NumPy" in str(error):
            return 0
        raise
    _compare(ours, expected, f"{op.name} {sample} nested")
    return 1


@pytest.mark.parametrize("op", CASES)
def test_vmap_matches_loop(op: OpInfo):
    samples = _samples(op)
    if op.name in DYNAMIC:
        with pytest.raises(RuntimeError, match="vmap"):
            for sample in samples:
                _check_sample(op, sample)
        return
    checked = sum(_check_sample(op, sample) for sample in samples)
    if checked == 0:
        pytest.skip(f"{op.name}: no sample with tensor inputs and tensor results")


# Derivatives that cannot batch yet (strict: an entry that passes must leave the list): they read a
# value on the host (.item() in the even split of max/min/median ties) or select by mask (a shape that
# depends on the data).
GRAD_NOT_BATCHABLE = frozenset({"masked_scatter", "masked_scatter_"})
GRAD_CASES = [
    pytest.param(
        op,
        id=op.name,
        marks=[pytest.mark.xfail(strict=True, reason="its derivative cannot batch")]
        if op.name in GRAD_NOT_BATCHABLE
        else [],
    )
    for op in OPS
    if op.name not in RANDOM and op.name not in DYNAMIC and "float64" in op.dtypes
]


@pytest.mark.parametrize("op", GRAD_CASES)
def test_per_sample_gradients_match_loop(op: OpInfo):
    """``vmap(grad(f))`` against ``grad(f)`` per lane: the derivative formulas run on batched tensors."""
    from ember.func import grad

    checked = 0
    for sample in op.samples("float64", np.random.default_rng(3))[:2]:
        args, kwargs = build(sample.args, ember), build(sample.kwargs, ember)
        leaves, spec = flatten(args)
        floats = [i for i, x in enumerate(leaves) if isinstance(x, ember.Tensor) and x.is_floating_point()]
        if not floats:
            continue

        def f(*chosen, leaves=leaves, spec=spec, floats=floats, kwargs=kwargs):
            flat = list(leaves)
            for i, value in zip(floats, chosen, strict=True):
                flat[i] = value
            outs = [
                o for o in _tensor_results(op.call(ember, *unflatten(flat, spec), **kwargs)) if o.is_floating_point()
            ]
            return sum(((o * o).sum() for o in outs), ember.zeros((), dtype=ember.float64))

        lanes = [_lanes(leaves[i]) for i in floats]
        g = grad(f, argnums=tuple(range(len(floats))))
        try:
            expected = _stack([g(*(lane[k] for lane in lanes)) for k in range(LANES)])
        except Exception:
            continue  # no gradient without vmap (a derivative not written yet, or integer-only outputs)
        try:
            ours = vmap(g)(*(ember.stack(lane) for lane in lanes))
        except RuntimeError as error:
            if "cannot convert a batched tensor to NumPy" in str(error):
                continue  # the sample's call checks its result on the host
            raise
        _compare(ours, expected, f"{op.name} {sample} per-sample gradients")
        checked += 1
    if checked == 0:
        pytest.skip(f"{op.name}: no sample with a gradient")
