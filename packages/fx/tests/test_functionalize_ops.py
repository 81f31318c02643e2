"""Every in-place and ``out=`` entry of the core's OpInfo tables, functionalized.

For each entry with an in-place form (``OpInfo.inplace``) or an ``out=`` form and its first samples:
``functionalize(f)`` gives eager's result and leaves the inputs as eager leaves them (the mutation
reaches them through the final ``copy_``), in both ``remove`` modes; and the graph of
``make_fx(functionalize(f))`` has no in-place or ``out=`` op but the ``copy_`` s onto the inputs at
its end. The ops themselves are compared with PyTorch in the tables' own tests.
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
from ember.fx.experimental.proxy_tensor import make_fx

SAMPLES_PER_ENTRY = 2
ENTRIES = {op.name: op for op in opinfos()}
INPLACE = sorted(name for name, op in ENTRIES.items() if op.inplace is not None)
OUT = sorted(name for name, op in ENTRIES.items() if op.out)
# Ops that mutate some arguments and have no functional form: functionalization runs them on copies
# of the mutated values (their graph keeps the op, applied to a fresh copy).
NO_FUNCTIONAL_FORM = {"_native_batch_norm_legit"}


def _leaves(value):
    if isinstance(value, list | tuple):
        return [x for v in value for x in _leaves(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    return [value]


def _samples(entry):
    return entry.samples(entry.dtypes[0], np.random.default_rng(1234))[:SAMPLES_PER_ENTRY]


def _numpy(t):
    return np.asarray(t.detach().numpy()) if isinstance(t, ember.Tensor) else t


def _assert_same(ours, eager) -> None:
    ours, eager = _leaves(ours), _leaves(eager)
    assert len(ours) == len(eager)
    for a, b in zip(ours, eager, strict=True):
        if isinstance(b, ember.Tensor):
            assert isinstance(a, ember.Tensor) and a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_array_equal(_numpy(a), _numpy(b))
        else:
            assert a == b or (a != a and b != b)


def _calls(entry, kind, sample):
    """The call of the sample as a function of its tensors, and those tensors."""
    args, kwargs = build(sample.args, ember), build(sample.kwargs, ember)
    if kind == "inplace":

        def f(args, kwargs):
            return entry.inplace(ember, *args, **kwargs)

        return f, (args, kwargs)
    ember.manual_seed(0)
    expected = entry.call(ember, *clone(args), **clone(kwargs))
    if not isinstance(expected, ember.Tensor):
        return None, None
    out = ember.empty(expected.shape, dtype=expected.dtype)

    def f(args, kwargs, out):
        return entry.call(ember, *args, **kwargs, out=out)

    return f, (args, kwargs, out)


def _check(name: str, kind: str) -> None:
    entry = ENTRIES[name]
    ran = 0
    for sample in _samples(entry):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                f, inputs = _calls(entry, kind, sample)
                if f is None:
                    continue
                eager_inputs = clone(inputs)
                ember.manual_seed(0)
                eager = f(*eager_inputs)
            except Exception:
                continue  # errors are compared with PyTorch's in the op tests
            for remove in ("mutations", "mutations_and_views"):
                ours_inputs = clone(inputs)
                ember.manual_seed(0)
                ours = ember.func.functionalize(f, remove=remove)(*ours_inputs)
                _assert_same(ours, eager)
                _assert_same(ours_inputs, eager_inputs)
                gm = make_fx(ember.func.functionalize(f, remove=remove))(*clone(inputs))
                _assert_functional(gm, name)
        ran += 1
    if not ran:
        pytest.skip("every sample of this entry raises in eager (its errors are tested against PyTorch)")


def _assert_functional(gm, name: str) -> None:
    calls = [
        n
        for n in gm.graph.nodes
        if n.op == "call_function" and isinstance(n.target, ember.ops.aten.add.Tensor.__class__)
    ]
    mutating = [i for i, n in enumerate(calls) if n.target.schema.is_mutable or n.target.tags & {"inplace", "out"}]
    copies = [i for i in mutating if calls[i].target is ember.ops.aten.copy_.default]
    others = [str(calls[i].target) for i in mutating if i not in copies]
    if name in NO_FUNCTIONAL_FORM:
        others = [o for o in others if o.split(".")[1] not in NO_FUNCTIONAL_FORM]
    assert not others, f"mutating ops left in the graph: {others}"
    for i in copies:
        assert calls[i].args[0].op == "placeholder", calls[i].format_node()
        # After the input copies, only views made again for outputs aliasing the inputs.
        assert all("view" in n.target.tags for n in calls[i + 1 :] if n.target is not ember.ops.aten.copy_.default)


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_functionalized(name):
    _check(name, "inplace")


@pytest.mark.parametrize("name", OUT)
def test_out_functionalized(name):
    _check(name, "out")


def test_tables_have_mutating_entries():
    assert len(INPLACE) > 20 and len(OUT) > 20
