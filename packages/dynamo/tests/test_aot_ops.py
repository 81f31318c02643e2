"""Every op with a derivative in the core's OpInfo tables, through aot_function: gradients equal eager's.

For each entry of ``packages/tensor/tests/opinfo_*.py`` that the gradient sweeps take (float64, not
an ``out=`` overload) and its first samples, the call is compiled by ``aot_function`` with nop
compilers (the graphs run as Python) under both partitioners; outputs and the gradients of a random
cotangent must equal the eager call's: outputs exactly (the forward graph runs the ops eager runs),
gradients to float64 rounding (where an input is used twice, its gradients are summed in the order
the traced backward met them, and a min-cut backward may recompute a value).
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "tensor" / "tests"))

from op_calls import opinfos
from opinfo import T, build

import ember
from ember._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException
from ember.aot import aot_function, default_partition, min_cut_rematerialization_partition, nop
from ember.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

SAMPLES_PER_ENTRY = 2
DATA_DEPENDENT_ERRORS = (DataDependentOutputException, DynamicOutputShapeException, GuardOnDataDependentSymNode)

# Entries whose samples cannot be traced without data: the output's size depends on the values.
DATA_DEPENDENT = {
    **dict.fromkeys(
        ["nonzero", "nonzero_as_tuple", "argwhere"],
        "the number of nonzero elements is the output's size",
    ),
    "masked_select": "the number of true mask elements is the output's size",
    **dict.fromkeys(
        ["masked_scatter", "masked_scatter_"], "its derivative takes masked_select of the gradient by the mask"
    ),
    "unique": "the number of distinct values is the output's size",
    "unique_consecutive": "the number of runs is the output's size",
    "repeat_interleave_tensor": "the sum of the repeats is the output's size",
    "quantile_tensor_q": "q's values are checked in [0, 1] on the host",
    "cov_weighted": "the weighted degrees of freedom are checked against zero on the host",
}
# Entries that write into inputs that require grad, which AOT autograd refuses by name.
MUTATES_INPUTS = {"F.embedding max_norm": "max_norm renormalizes rows of the weight in place"}
RANDOM_TABLES = ("opinfo_random",)

ENTRIES = {
    op.name: op
    for op in opinfos()
    if "float64" in op.dtypes and op.transforms and op.call.__module__ not in RANDOM_TABLES
}
PARTITIONERS = {"default": default_partition, "min_cut": min_cut_rematerialization_partition}


def _with_grad(value):
    if isinstance(value, T):
        if value.array.dtype.kind in "fc":
            return T(value.array, value.layout, requires_grad=True)
        return value
    if isinstance(value, list):
        return [_with_grad(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_with_grad(v) for v in value)
    if isinstance(value, dict):
        return {k: _with_grad(v) for k, v in value.items()}
    return value


def _tensors(value) -> list:
    if isinstance(value, ember.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [x for v in value for x in _tensors(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _tensors(v)]
    return []


def _run(entry, sample, compile_with):
    """(outputs, input gradients) of one sample, eager or through aot_function."""
    args, kwargs = build(_with_grad(sample.args), ember), build(_with_grad(sample.kwargs), ember)
    inputs = [t for t in _tensors((args, kwargs)) if t.requires_grad]

    def call(args, kwargs):
        return entry.call(ember, *args, **kwargs)

    fn = call if compile_with is None else aot_function(call, nop, partition_fn=compile_with)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(args, kwargs)
    outs = [o for o in _tensors(out) if o.requires_grad]
    if not inputs or not outs:
        return _tensors(out), None
    rng = np.random.default_rng(7)
    cots = [ember.tensor(rng.standard_normal(tuple(o.shape))).to(o.dtype) for o in outs]
    grads = ember.autograd.grad(outs, inputs, cots, allow_unused=True)
    return _tensors(out), grads


def _same(a, b, exact: bool) -> None:
    if a is None or b is None:
        assert a is None and b is None
        return
    a, b = np.asarray(a.detach()), np.asarray(b.detach())
    if exact or a.dtype.kind not in "fc":
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("partition", sorted(PARTITIONERS))
@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_gradients_through_aot_function_equal_eager(name, partition):
    entry = ENTRIES[name]
    compared = 0
    for sample in entry.samples("float64", np.random.default_rng(1234))[:SAMPLES_PER_ENTRY]:
        if sample.kwargs.get("_indices") is False:
            # The sample would check in Python that the indices point at the values: no trace holds that
            # bool. The same call returning its indices compares them exactly instead.
            sample = dataclasses.replace(sample, kwargs={**sample.kwargs, "_indices": True})
        try:
            eager_out, eager_grads = _run(entry, sample, None)
        except Exception:
            continue  # errors are compared with PyTorch's in the op tests
        if name in DATA_DEPENDENT:
            with pytest.raises(DATA_DEPENDENT_ERRORS):
                _run(entry, sample, PARTITIONERS[partition])
            compared += 1
            continue
        if name in MUTATES_INPUTS:
            with pytest.raises(NotImplementedError, match="which require grad"):
                _run(entry, sample, PARTITIONERS[partition])
            compared += 1
            continue
        out, grads = _run(entry, sample, PARTITIONERS[partition])
        assert len(out) == len(eager_out)
        for a, b in zip(out, eager_out, strict=True):
            _same(a, b, exact=True)
        if eager_grads is None:
            assert grads is None
        else:
            for a, b in zip(grads, eager_grads, strict=True):
                _same(a, b, exact=False)
        compared += 1
    if not compared:
        pytest.skip("every sample of this entry raises in eager (its errors are tested against PyTorch)")


def test_listed_entries_are_current():
    assert set(DATA_DEPENDENT) | set(MUTATES_INPUTS) <= set(ENTRIES)
