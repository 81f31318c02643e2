"""Every op of the core's tables, traced with the core decompositions, leaves only core ops.

For each OpInfo entry (``packages/tensor/tests/opinfo_*.py``) and its first samples, the call is
traced by ``make_fx(call, decomposition_table=core_aten_decompositions())``, with real values and
with symbolic shapes (so the decompositions are SymInt-safe; entries whose output shape depends on
the data, listed in ``test_make_fx_ops.DATA_DEPENDENT``, are traced with real values only), and:

1. every ``call_function`` node whose target is an op is tagged ``core``, or is one of the in-place
   or ``out=`` ops listed in ``NOT_CORE_LEFTOVERS`` (functionalization removes them);
2. running the graph gives eager's results: exactly where the result is exact (integers, booleans,
   and the values of ops that only move or select elements); otherwise within float32 tolerance of
   either the eager result or the float64 eager result (a decomposition may round at other steps
   than the kernel does).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "tensor" / "tests"))

from op_calls import clone, opinfos
from opinfo import TOLERANCES, build, dtype_name
from test_make_fx_ops import DATA_DEPENDENT

import ember
from ember._decomp import core_aten_decompositions
from ember.core.aten.sparse import coo_ops
from ember.core.dispatch import OpOverload
from ember.fx.experimental.proxy_tensor import make_fx

SAMPLES_PER_ENTRY = 2
ENTRIES = {op.name: op for op in opinfos()}
TABLE = core_aten_decompositions()

# In-place and out= ops stay in a lowered graph: functionalization, which runs before lowering in a
# compiler, turns each into its functional form, which is core or lowered by the table. These have no
# functional form among the core's ops; functionalization writes each as a functional op of its own.
_RANDOM_FILL = "a random in-place fill: functionalization writes it as the functional draw of the same generator"
NOT_CORE_LEFTOVERS = {
    "aten.copy_.default": "the write of a value into an existing tensor: functionalization replaces it by "
    "its source, and adds the final copy_ onto a mutated input itself",
    "aten.fill_.Scalar": "filling a fresh tensor (how full_like and the out= forms fill): functionalization "
    "writes it as full_like of that tensor",
    "aten.zero_.default": "zero_ is fill_ with 0",
    "aten.lift_fresh.default": "how a tensor made from Python data enters a trace (fake tensors convert it "
    "there): a constant of the graph, which PyTorch's table does not lower either",
    "aten._native_batch_norm_legit.default": "updates running_mean and running_var in place: functionalization "
    "writes it as the form that returns the new statistics (PyTorch's _native_batch_norm_legit_functional)",
    "aten.embedding_renorm_.default": "an in-place update of the embedding's rows: functionalization writes "
    "it as the renormed copy",
    **dict.fromkeys(
        [
            "aten.uniform_.default",
            "aten.normal_.default",
            "aten.exponential_.default",
            "aten.random_.default",
            "aten.random_.to",
            "aten.random_.from",
            "aten.bernoulli_.Tensor",
            "aten.bernoulli_.float",
        ],
        _RANDOM_FILL,
    ),
    **dict.fromkeys(
        ["aten.resize_.default", "aten.resize_as_.default"],
        "changes a tensor's sizes in place within its storage: a graph holds it as an eager call",
    ),
    "aten.from_file.default": "reads a file's bytes at run time: a graph holds it as an eager call",
    # The sparse layout's own ops: graphs of dense tensors never hold them, and the code generator
    # compiles dense tensors only, so they run as eager calls.
    **{
        str(op): "an op of the sparse layout, run eagerly"
        for op in vars(coo_ops).values()
        if isinstance(op, OpOverload)
    },
}

# Random ops draw from the generator: traced and eager calls are seeded alike and compared, but a
# decomposition (bernoulli as rand < p) draws in another order, so their values are not compared.
RANDOM = {
    "bernoulli",
    "bernoulli_p",
    "dropout",
    "F.dropout",
    "multinomial",
    "normal",
    "rand_like",
    "randn_like",
    "randint_like",
    "randperm",
    "rand",
    "randn",
    "randint",
}


def _leaves(value):
    if isinstance(value, ember.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [x for v in value for x in _leaves(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    return [value]


def _samples(entry):
    return entry.samples(entry.dtypes[0], np.random.default_rng(1234))[:SAMPLES_PER_ENTRY]


def _float64(value):
    """``value`` with floating tensors as float64: the reference a float32 decomposition is held to."""
    if isinstance(value, ember.Tensor):
        return value.double() if value.is_floating_point() and value.dtype != ember.float64 else value
    if isinstance(value, list | tuple):
        return type(value)(_float64(v) for v in value)
    if isinstance(value, dict):
        return {k: _float64(v) for k, v in value.items()}
    return value


def _close(a: np.ndarray, b: np.ndarray, dtype: str) -> bool:
    rtol, atol = TOLERANCES.get(dtype, (0, 0))
    # Rounding compounds over the few steps a decomposition takes.
    return a.shape == b.shape and np.allclose(a, b, rtol=10 * rtol, atol=10 * atol, equal_nan=True)


def _assert_matches(ours, eager, reference, where: str) -> None:
    ours, eager, reference = _leaves(ours), _leaves(eager), _leaves(reference)
    assert len(ours) == len(eager), where
    for i, (a, b) in enumerate(zip(ours, eager, strict=True)):
        at = f"{where}: output {i}"
        if not isinstance(b, ember.Tensor):
            assert a == b or (a != a and b != b), f"{at}: {a!r} != {b!r}"
            continue
        assert isinstance(a, ember.Tensor), at
        assert (tuple(a.shape), a.dtype) == (tuple(b.shape), b.dtype), (
            f"{at}: {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
        )
        x, y = np.asarray(a.detach()), np.asarray(b.detach())
        if not (a.is_floating_point() or a.is_complex()):
            np.testing.assert_array_equal(x, y, err_msg=at)
            continue
        if _close(x, y, dtype_name(b)):
            continue
        r = reference[i] if i < len(reference) else None
        ok = isinstance(r, ember.Tensor) and _close(x.astype(np.float64), np.asarray(r.detach()), dtype_name(b))
        assert ok, f"{at}: the lowered graph's values differ from eager's and from the float64 reference"


def _non_core(gm) -> list[str]:
    found = []
    for node in gm.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, OpOverload):
            op = node.target
            if "core" in op.tags or str(op) in NOT_CORE_LEFTOVERS:
                continue
            functional = op.functional
            if (
                op.form != "functional"
                and functional is not None
                and ("core" in functional.tags or functional in TABLE)
            ):
                continue  # functionalization's part: its functional form is core or lowered
            found.append(str(op))
    return sorted(set(found))


@pytest.mark.parametrize("mode", ["real", "symbolic"])
@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_lowered_graph_has_only_core_ops_and_eager_values(name, mode):
    entry = ENTRIES[name]
    if mode == "symbolic" and name in DATA_DEPENDENT:
        pytest.skip(f"data-dependent ({DATA_DEPENDENT[name]}): traced with real values only")

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
            gm = make_fx(call, decomposition_table=TABLE, tracing_mode=mode)(*clone((args, kwargs)))
            leftover = _non_core(gm)
            assert not leftover, f"{name}: non-core ops left after lowering: {leftover}"
            if name in RANDOM:
                ran += 1
                continue
            ember.manual_seed(0)
            ours = gm(*clone((args, kwargs)))
            try:
                reference = call(*_float64(clone((args, kwargs))))
            except Exception:
                reference = None  # an op without float64 support: compared with eager alone
        _assert_matches(ours, eager, reference, name)
        ran += 1
    if not ran:
        pytest.skip("every sample of this entry raises in eager (its errors are tested against PyTorch)")


def test_random_list_names_entries():
    assert RANDOM & set(ENTRIES), "RANDOM names no entry of the tables"


def test_table_holds_only_functional_non_core_ops():
    for op, fn in TABLE.items():
        assert op.form == "functional" and "core" not in op.tags, op
        assert fn is op.decomposition or callable(fn), op


def test_every_functional_op_is_core_or_decomposes():
    """An op outside the core set that no decomposition lowers would reach the code generator."""
    from ember.core.dispatch import all_ops

    stuck = [
        str(op)
        for op in all_ops()
        if op.namespace == "aten"
        and op.form == "functional"
        and "core" not in op.tags
        and op not in TABLE
        and str(op) not in NOT_CORE_LEFTOVERS
    ]
    assert not stuck, f"functional ops neither core nor decomposed: {stuck}"


def _training_step(x, target, conv_w, bn_w, bn_b, lin_w, lin_b):
    """A small CNN's loss and gradients: the backward ops (convolution, batch norm, GELU, log-softmax
    and NLL loss) reach the tracer as ops of their own. (Max pooling's backward is left out: its
    traced graph holds the input's metadata object as an argument, which make_fx cannot print.)"""
    F = ember.nn.functional
    h = F.conv2d(x, conv_w, padding=1)
    h = F.batch_norm(h, None, None, bn_w, bn_b, training=True)
    h = F.gelu(h)[:, :, ::2, ::2]
    h = F.layer_norm(h.flatten(1), (h[0].numel(),))
    loss = F.cross_entropy(F.linear(h, lin_w, lin_b), target) + F.mse_loss(h, h.detach() * 0.5)
    return (loss, *ember.autograd.grad(loss, [conv_w, bn_w, bn_b, lin_w, lin_b]))


def test_a_training_step_lowers_to_core_ops():
    ember.manual_seed(0)
    args = [
        ember.randn(4, 2, 6, 6, dtype=ember.float64),
        ember.tensor([0, 2, 1, 2]),
        *[ember.randn(*s, dtype=ember.float64, requires_grad=True) for s in [(3, 2, 3, 3), (3,), (3,), (3, 27), (3,)]],
    ]
    gm = make_fx(_training_step, decomposition_table=TABLE)(*args)
    assert not _non_core(gm), _non_core(gm)
    lowered = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert not lowered & {"aten.native_batch_norm_backward.default", "aten.nll_loss_backward.default"}
    eager = _training_step(*args)
    ours = gm(*[a.detach() for a in args])
    for a, b in zip(ours, eager, strict=True):
        np.testing.assert_allclose(np.asarray(a.detach()), np.asarray(b.detach()), rtol=1e-9, atol=1e-9)
