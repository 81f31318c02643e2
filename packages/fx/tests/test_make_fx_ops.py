"""Every op of the core's tables traced by ``make_fx`` in each tracing mode gives eager's results.

For each OpInfo entry (``packages/tensor/tests/opinfo_*.py``; the ops themselves are tested against
PyTorch there) and its first samples, the call is traced with ``tracing_mode`` real, fake and
symbolic, and the graph is run on the same inputs: its outputs must equal what the eager call
gives, bit for bit (the graph replays the ops eager runs), and the ``meta["val"]`` of the output
nodes must have the eager outputs' shapes (under symbolic shapes, once the sizes are substituted).

Calls whose output shape depends on the input's values cannot be traced without data: under fake
and symbolic tracing they must raise the named error of the fake tensor or the shape environment.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "tensor" / "tests"))

from op_calls import clone, opinfos
from opinfo import build

import ember
from ember._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
)
from ember.fx.experimental.proxy_tensor import make_fx
from ember.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

SAMPLES_PER_ENTRY = 2
MODES = ("real", "fake", "symbolic")
DATA_DEPENDENT_ERRORS = (DataDependentOutputException, DynamicOutputShapeException, GuardOnDataDependentSymNode)

# Entries whose samples read tensor values to decide an output's shape or a Python value: under
# fake and symbolic tracing they raise one of DATA_DEPENDENT_ERRORS (checked both ways).
DATA_DEPENDENT = {
    **dict.fromkeys(
        ["nonzero", "nonzero_as_tuple", "argwhere", "where_condition"],
        "the number of nonzero elements is the output's size",
    ),
    "masked_select": "the number of true mask elements is the output's size",
    "unique": "the number of distinct values is the output's size",
    "unique_consecutive": "the number of runs is the output's size",
    "F.one_hot inferred": "without num_classes, the largest index gives the output's size",
    **dict.fromkeys(["bincount", "Tensor.bincount"], "the largest value gives the output's size"),
    "tensor_split_tensor": "the split positions are a tensor's values",
    "cov_weighted": "the weighted degrees of freedom are checked against zero on the host",
    **dict.fromkeys(
        ["allclose", "Tensor.allclose", "equal", "Tensor.equal"], "the answer is a Python bool read from the values"
    ),
    "quantile_tensor_q": "q is checked to lie in [0, 1] on the host",
    **dict.fromkeys(["histogram_auto_range", "histogramdd_auto_range"], "the range's ends are read from the values"),
    **dict.fromkeys(["gcd", "lcm"], "Euclid's steps run until every remainder is zero"),
    "repeat_interleave_tensor": "the repeats' sum is the output's size",
    "unravel_index": "the indices are checked against the shape on the host",
    "istft": "the overlap-added window is checked against zero on the host (the NOLA condition)",
}

ENTRIES = {op.name: op for op in opinfos()}


def _leaves(value):
    if isinstance(value, ember.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [x for v in value for x in _leaves(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    return [value]


def _samples(entry):
    dtype = entry.dtypes[0]
    return entry.samples(dtype, np.random.default_rng(1234))[:SAMPLES_PER_ENTRY]


def _assert_same(ours, eager) -> None:
    ours, eager = _leaves(ours), _leaves(eager)
    assert len(ours) == len(eager)
    for a, b in zip(ours, eager, strict=True):
        if isinstance(b, ember.Tensor):
            assert isinstance(a, ember.Tensor)
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_array_equal(np.asarray(a.detach()), np.asarray(b.detach()))
        else:
            assert a == b or (a != a and b != b)


def _hint(value):
    from ember.core.symbolic import SymInt

    return int(value.node.hint) if isinstance(value, SymInt) else value


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_traced_graph_gives_eager_results(name, mode):
    entry = ENTRIES[name]

    def call(args, kwargs):
        return entry.call(ember, *args, **kwargs)

    ran = 0
    for sample in _samples(entry):
        args, kwargs = build(sample.args, ember), build(sample.kwargs, ember)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                ember.manual_seed(0)
                eager = call(*clone((args, kwargs)))
            except Exception:
                continue  # errors are compared with PyTorch's in the op tests
            if mode != "real" and name in DATA_DEPENDENT:
                with pytest.raises(DATA_DEPENDENT_ERRORS):
                    make_fx(call, tracing_mode=mode)(*clone((args, kwargs)))
                ran += 1
                continue
            gm = make_fx(call, tracing_mode=mode)(*clone((args, kwargs)))
            ember.manual_seed(0)
            ours = gm(*clone((args, kwargs)))
        _assert_same(ours, eager)
        (output,) = [n for n in gm.graph.nodes if n.op == "output"]
        for node, value in zip(_leaves(output.args[0]), _leaves(eager), strict=True):
            if isinstance(value, ember.Tensor):
                assert tuple(_hint(s) for s in node.meta["val"].shape) == tuple(value.shape), node
        ran += 1
    if not ran:
        pytest.skip("every sample of this entry raises in eager (its errors are tested against PyTorch)")


def test_data_dependent_list_is_current():
    assert set(DATA_DEPENDENT) <= set(ENTRIES), sorted(set(DATA_DEPENDENT) - set(ENTRIES))
