"""ember.utils.benchmark's Fuzzer against torch.utils.benchmark's: the same seed gives the same
parameters, sizes, strides and layouts (values differ: Ember's generator is not PyTorch's).

PyTorch 2.13 refuses every normalized dict distribution ("Distribution is not normalized": its
check is inverted) and NumPy refuses the others, so the comparisons use ranges only; dict
distributions are tested on their own."""

import numpy as np
import pytest

import ember
import ember.utils.benchmark as benchmark

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
import torch.utils.benchmark  # noqa: E402, F811  (a submodule: import it)


def _spec(module, dtype_name="float32"):
    b = module.utils.benchmark
    dtype = getattr(module, dtype_name)
    return {
        "parameters": [
            b.FuzzedParameter("k0", 1, 64, distribution="loguniform"),
            b.FuzzedParameter("k1", 2, 9, distribution="uniform"),
            [b.FuzzedParameter("k2", 1, 4, distribution="uniform")],
            b.FuzzedParameter("dim", 1, 3, distribution="uniform", strict=True),
            b.FuzzedParameter("step", 1, 2, distribution="uniform"),
            b.FuzzedParameter("scale", 0.5, 2.0, distribution="uniform"),
        ],
        "tensors": [
            b.FuzzedTensor(
                "x",
                size=("k0", "k1", "k2"),
                steps=("step", 1, "step"),
                dim_parameter="dim",
                probability_contiguous=0.4,
                max_elements=300,
                max_allocation_bytes=40_000,
                dtype=dtype,
            ),
            b.FuzzedTensor("y", size=("k1", 5), min_elements=10, dtype=dtype),
        ],
        "constraints": [lambda params: params["k0"] % 3 != 0],
        "seed": 1234,
    }


@pytest.mark.parametrize("dtype_name", ["float32", "int64", "complex64"])
def test_same_draws_as_torch(dtype_name):
    ours = benchmark.Fuzzer(**_spec(ember, dtype_name))
    theirs = torch.utils.benchmark.Fuzzer(**_spec(torch, dtype_name))
    for (ot, op, oparams), (tt, tp, tparams) in zip(ours.take(25), theirs.take(25), strict=True):
        assert oparams == tparams
        for name in ("x", "y"):
            assert tuple(ot[name].shape) == tuple(tt[name].shape)
            assert tuple(ot[name].stride()) == tuple(tt[name].stride())
            assert ot[name].dtype.itemsize == tt[name].dtype.itemsize
            for key in ("numel", "steps", "is_contiguous"):
                assert op[name][key] == tp[name][key]
            np.testing.assert_array_equal(op[name]["order"], tp[name]["order"])
            assert op[name]["dtype"].replace("ember", "torch") == tp[name]["dtype"]
    assert ours.rejection_rate == theirs.rejection_rate > 0


def test_the_same_seed_gives_the_same_tensors():
    first = [t["x"] for t, _, _ in benchmark.Fuzzer(**_spec(ember)).take(3)]
    again = [t["x"] for t, _, _ in benchmark.Fuzzer(**_spec(ember)).take(3)]
    for a, b in zip(first, again, strict=True):
        assert ember.equal(a, b)


def test_sparse_tensors_follow_torch():
    def spec(module):
        b = module.utils.benchmark
        return {
            "parameters": [
                b.FuzzedParameter("n", 4, 32, distribution="uniform"),
                b.FuzzedParameter("density", 0.1, 0.4, distribution="uniform"),
                b.FuzzedParameter("coalesced", 0, 1, distribution="uniform"),
                b.FuzzedParameter("sparse_dim", 1, 2, distribution="uniform"),
            ],
            "tensors": [b.FuzzedSparseTensor("s", size=("n", "n", 3), sparse_dim=True, density=True)],
            "seed": 5,
        }

    ours = benchmark.Fuzzer(**spec(ember)).take(10)
    theirs = torch.utils.benchmark.Fuzzer(**spec(torch)).take(10)
    for (ot, op, oparams), (tt, tp, tparams) in zip(ours, theirs, strict=True):
        assert oparams == tparams
        assert tuple(ot["s"].shape) == tuple(tt["s"].shape)
        assert ot["s"].is_sparse
        for key in ("numel", "is_coalesced", "density", "sparse_dim", "dense_dim", "is_hybrid"):
            assert op["s"][key] == tp["s"][key], key


def test_errors_match():
    for module in (benchmark, torch.utils.benchmark):
        with pytest.raises(AssertionError, match="Unknown distribution"):
            module.FuzzedParameter("a", 1, 2, distribution="normal")
    with pytest.raises(AssertionError, match="not normalized"):
        benchmark.FuzzedParameter("a", distribution={1: 0.5})
    with pytest.raises(AssertionError, match="'minval' must be None"):
        benchmark.FuzzedParameter("a", 1, distribution={1: 1.0})
    cycle = {
        "parameters": [
            benchmark.FuzzedParameter("a", distribution={benchmark.ParameterAlias("b"): 1.0}),
            benchmark.FuzzedParameter("b", distribution={benchmark.ParameterAlias("a"): 1.0}),
        ],
        "tensors": [],
        "seed": 0,
    }
    with pytest.raises(ValueError, match="ParameterAlias cycle detected"):
        next(benchmark.Fuzzer(**cycle).take(1))
    with pytest.raises(ValueError, match="Duplicate names"):
        benchmark.Fuzzer([benchmark.FuzzedParameter("x", 1, 2, "uniform")], [benchmark.FuzzedTensor("x", (1,))])
    impossible = {"parameters": [benchmark.FuzzedParameter("a", 1, 2, "uniform")], "tensors": [], "seed": 0}
    with pytest.raises(ValueError, match="Failed to generate"):
        next(benchmark.Fuzzer(**impossible, constraints=[lambda p: False]).take(1))


def test_helpers_and_module_paths():
    assert benchmark.ordered_unique([3, 1, 3, 2, 1]) == torch.utils.benchmark.ordered_unique([3, 1, 3, 2, 1])
    before = ember.get_num_threads()
    with benchmark.set_torch_threads(1):
        assert ember.get_num_threads() == 1
    assert ember.get_num_threads() == before
    from ember.utils.benchmark.utils.fuzzer import Fuzzer
    from ember.utils.benchmark.utils.timer import Timer

    assert Fuzzer is benchmark.Fuzzer and Timer is benchmark.Timer


def test_dict_distributions_and_aliases():
    parameters = [
        benchmark.FuzzedParameter("n", 5, 9, distribution="uniform"),
        benchmark.FuzzedParameter("m", distribution={1: 0.25, benchmark.ParameterAlias("n"): 0.75}),
    ]
    draws = [params for _, _, params in benchmark.Fuzzer(parameters, [], seed=3).take(400)]
    aliased = sum(p["m"] == p["n"] for p in draws)
    assert {p["m"] for p in draws} - {1} <= set(range(5, 10))
    assert 240 < aliased < 360  # 300 expected; the binomial spread is about 9
