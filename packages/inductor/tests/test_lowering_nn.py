"""The nn ops lowered in ``lowering_nn.py``, compiled against eager on the OpInfo samples.

The samples of one op go into one graph (one compile): batch norm (evaluation, training with and
without running statistics, whose updates are compared too), gather, cat, max_pool2d with indices
(ties and NaN included) and its backward. Each graph is checked for having lowered the op.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from inductor_testing import assert_same, compile_with_inductor

import ember
from ember.inductor import lowering_nn  # noqa: F401  (registers its lowerings)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tensor" / "tests"))  # the OpInfo tables
import opinfo
import opinfo_index_ops
import opinfo_joining
import opinfo_normalization
import opinfo_pooling
import opinfo_view_copies

CASES = {
    # training and evaluation samples: both forms of the op
    "batch_norm": (
        opinfo_normalization,
        "F.batch_norm",
        ("aten._native_batch_norm_legit.default", "aten._native_batch_norm_legit_no_training.default"),
    ),
    "gather": (opinfo_index_ops, "gather", "aten.gather.default"),
    "cat": (opinfo_joining, "cat", "aten.cat.default"),
    "max_pool2d": (opinfo_pooling, "nn.functional.max_pool2d_with_indices", "aten.max_pool2d_with_indices.default"),
    "max_pool2d_ties": (opinfo_pooling, "nn.functional.max_pool2d_ties", "aten.max_pool2d_with_indices.default"),
    "scatter": (opinfo_index_ops, "scatter", "aten.scatter.src"),
    "scatter_add": (opinfo_index_ops, "scatter_add", "aten.scatter_add.default"),
    "slice_scatter": (opinfo_view_copies, "slice_scatter", "aten.slice_scatter.default"),
    "select_scatter": (opinfo_view_copies, "select_scatter", "aten.select_scatter.default"),
}


def _info(name):
    module, entry, _ = CASES[name]
    return next(o for o in module.OPS if o.name == entry)


def _flat(value, out):
    if isinstance(value, ember.Tensor):
        out.append(value)
    elif isinstance(value, list | tuple):
        for v in value:
            _flat(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _flat(v, out)


def _runs(info, sample) -> bool:
    """Whether eager runs the sample (some samples are there to check errors)."""
    tensors: list = []
    _flat(opinfo.build((sample.args, sample.kwargs), ember), tensors)
    if any(t.dtype.is_complex for t in tensors):
        return False  # the code generator has no complex kernels (eager runs them)
    try:
        info.call(ember, *opinfo.build(sample.args, ember), **opinfo.build(sample.kwargs, ember))
    except (RuntimeError, IndexError, ValueError, TypeError, NotImplementedError):
        return False
    return True


def _run_all(name, dtype):
    """(compiled results, eager results, the compiled graphs) over every sample of the op."""
    info = _info(name)
    samples = [s for s in info.samples(dtype, np.random.default_rng(0)) if _runs(info, s)]

    def make():
        return [(opinfo.build(s.args, ember), opinfo.build(s.kwargs, ember)) for s in samples]

    def fn(*flat):
        it = iter(flat)

        def rebuild(value):
            if isinstance(value, ember.Tensor):
                return next(it)
            if isinstance(value, list | tuple):
                return type(value)(rebuild(v) for v in value)
            if isinstance(value, dict):
                return {k: rebuild(v) for k, v in value.items()}
            return value

        outs = []
        for args, kwargs in built:
            result = info.call(ember, *rebuild(args), **rebuild(kwargs))
            _flat(result, outs)
        return tuple(outs)

    built = make()
    flat: list = []
    _flat(built, flat)
    want = fn(*flat)
    built = make()  # fresh running statistics for the compiled run
    flat = []
    _flat(built, flat)
    compiled, rec = compile_with_inductor(fn)
    got = compiled(*flat)
    return got, want, rec.graphs, [s.name for s in samples]


@pytest.fixture(scope="module", params=["batch_norm-float32", "batch_norm-float64", "gather-float32", "cat-float32",
                                        "max_pool2d-float32", "max_pool2d_ties-float32", "scatter-float32",
                                        "scatter-int64", "scatter_add-float32", "scatter_add-float64",
                                        "slice_scatter-float32", "slice_scatter-int64",
                                        "select_scatter-float32"])  # fmt: skip
def results(request):
    name, dtype = request.param.split("-")
    return name, dtype, _run_all(name, dtype)


def test_values_match_eager(results):
    _, dtype, (got, want, _, _) = results
    assert len(got) == len(want)
    rtol, atol = (1e-5, 1e-5) if dtype == "float32" else (1e-10, 1e-10)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w, rtol=rtol, atol=atol, check_strides=False)


# the samples a lowering leaves to eager, by a fragment of the reason it gives
LEFT_TO_EAGER = {
    "batch_norm": (),
    "gather": ("0-dimensional",),
    "cat": ("empty tensors only",),
    "max_pool2d": ("padding or dilation", "ceil_mode"),
    "max_pool2d_ties": ("padding or dilation",),
    "scatter": ("0-dimensional",),
    "scatter_add": (),
    "slice_scatter": (),
    "select_scatter": (),
}


def test_the_op_was_lowered(results):
    name, _, (_, _, graphs, _) = results
    ops = CASES[name][2] if isinstance(CASES[name][2], tuple) else (CASES[name][2],)
    assert set(ops) <= set().union(*[g.lowered for g in graphs])
    for g in graphs:
        for target, reason in g.fallbacks:
            if target in ops:
                assert any(fragment in reason for fragment in LEFT_TO_EAGER[name]), reason


def test_max_pool2d_backward_is_lowered_and_matches_eager():
    x = ember.randn(2, 3, 8, 6, requires_grad=True)
    xs = x.detach().clone().requires_grad_(True)

    def fn(t):
        out, _ = ember.nn.functional.max_pool2d(t, 2, return_indices=True)
        return (out * out).sum()

    compiled, rec = compile_with_inductor(fn)
    compiled(xs).backward()
    fn(x).backward()
    assert_same(xs.grad, x.grad)
    assert "aten.max_pool2d_with_indices_backward.default" in rec.graphs[1].lowered


def test_pooling_with_padding_falls_back_with_its_reason():
    x = ember.randn(1, 2, 5, 5)

    def fn(t):
        return ember.nn.functional.max_pool2d(t, 3, stride=2, padding=1) + 1

    compiled, rec = compile_with_inductor(fn)
    assert_same(compiled(x), fn(x))
    assert any("padding" in reason for _, reason in rec.graphs[0].fallbacks)


def test_gather_over_a_large_dimension_is_an_indirect_load():
    x, index = ember.randn(3, 5000), ember.randint(0, 5000, (3, 2))
    compiled, rec = compile_with_inductor(lambda a, i: a.gather(1, i) * 2)
    assert_same(compiled(x, index), x.gather(1, index) * 2)
    assert "aten.gather.default" in rec.graphs[0].lowered


def test_batch_norm_backward_reads_the_saved_statistics(capsys):
    """A compiled training step's backward uses the statistics its forward saved, as PyTorch's
    decomposition does, not a second pass over the activation that recomputes them."""
    nn = ember.nn
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
    x = ember.randn(2, 3, 6, 6)
    model(x).square().sum().backward()
    eager = model[0].weight.grad.clone()
    model.zero_grad()
    try:
        ember.logs.set_logs(aot_graphs=True)
        ember.compile(lambda x: model(x).square().sum())(x).backward()
    finally:
        ember.logs.set_logs()
    err = capsys.readouterr().err
    backward = err[err.index("AOT backward graph") :]
    assert "aten.mean" not in backward and "aten.var" not in backward
    np.testing.assert_allclose(model[0].weight.grad.numpy(), eager.numpy(), rtol=1e-4, atol=1e-5)
