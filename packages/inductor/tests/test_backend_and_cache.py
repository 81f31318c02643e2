"""The backend through ember.compile, dtypes, the disk cache (warm start), and errors."""

from __future__ import annotations

import numpy as np
import pytest
from inductor_testing import Recorder, assert_same, compile_with_inductor

import ember
import ember.inductor
from ember.aot.aot_autograd import aot_function
from ember.inductor import config, cpp_builder


def _fn(x, y):
    return (x * y + 1).tanh().sum(-1)


def test_ember_compile_with_compile_fx():
    x, y = ember.randn(8, 16), ember.randn(8, 16)
    compiled = ember.compile(_fn, backend=ember.inductor.compile_fx)
    assert_same(compiled(x, y), _fn(x, y))


def test_backend_named_inductor_comes_from_the_entry_point():
    from ember.dynamo.backends import list_backends, lookup_backend

    assert "inductor" in list_backends()
    assert lookup_backend("inductor") is ember.inductor.compile_fx
    x, y = ember.randn(8, 16), ember.randn(8, 16)
    assert_same(ember.compile(_fn, backend="inductor")(x, y), _fn(x, y))


def test_config_answers_at_pytorchs_path():
    import ember._inductor.config as c

    assert c is config


@pytest.mark.parametrize("dtype", [ember.float64, ember.float16, ember.bfloat16, ember.int64, ember.bool])
def test_dtypes(dtype):
    x = (ember.randn(6, 10) * 4).to(dtype)

    def fn(t):
        if dtype == ember.bool:
            return t & ~t.t().t(), t.sum(1)
        return t * 2 + t, t.amax(1), (t.to(ember.float32) / 3).to(dtype)

    compiled, _ = compile_with_inductor(fn)
    for got, want in zip(compiled(x), fn(x), strict=True):
        assert_same(got, want, rtol=1e-2 if dtype in (ember.float16, ember.bfloat16) else 1e-6)


def test_warm_start_skips_the_cpp_compile(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    x = ember.randn(5, 7)

    def fn(t):
        return (t - 0.25).abs() * 3

    before = dict(cpp_builder.stats)
    cold, _ = compile_with_inductor(fn)
    assert_same(cold(x), fn(x))
    assert cpp_builder.stats["compiles"] == before["compiles"] + 1
    assert len(list(tmp_path.rglob("*.so"))) == 1
    assert not list(tmp_path.rglob("*tmp*"))  # written under a temporary name, renamed into place
    warm, _ = compile_with_inductor(fn)
    assert_same(warm(x), fn(x))
    assert cpp_builder.stats["compiles"] == before["compiles"] + 1
    assert cpp_builder.stats["cache_hits"] == before["cache_hits"] + 1


def test_the_cache_key_covers_source_compiler_flags_and_cpu():
    key = cpp_builder.cache_key("int x;")
    assert key == cpp_builder.cache_key("int x;") and key != cpp_builder.cache_key("int y;")
    assert cpp_builder.cpu_features()


def test_inputs_of_other_sizes_raise():
    rec = Recorder()
    aot_function(lambda t: t + 1, fw_compiler=rec)(ember.randn(3, 4))
    with pytest.raises(RuntimeError, match="specialized on sizes"):
        rec.graphs[0]([ember.randn(3, 5)])


def test_inputs_with_other_strides_are_copied_to_the_kernels_layout():
    rec = Recorder()
    aot_function(lambda t: t * 2, fw_compiler=rec)(ember.randn(3, 4))
    t = ember.randn(4, 3).t()
    (out,) = rec.graphs[0]([t])
    assert_same(out, t * 2, check_strides=False)


def test_the_kernel_checks_the_strides_it_was_built_for():
    from ember.inductor.wrapper import KernelStep

    rec = Recorder()
    aot_function(lambda t: t * 2, fw_compiler=rec)(ember.randn(3, 4))
    (step,) = [s for s in rec.graphs[0].steps if isinstance(s, KernelStep)]
    with pytest.raises(RuntimeError, match=r"specialized for arg0 .*\(1, 3\)"):
        step({"arg0": ember.randn(4, 3).t()})  # called directly: no copy to the expected layout


def test_a_graph_with_symbolic_sizes_runs_at_each_size():
    def fn(t):
        return (t * 2).sum(-1)

    compiled = ember.compile(fn, backend=ember.inductor.compile_fx, dynamic=True)
    for n in (5, 7, 5):
        x = ember.randn(n, 3)
        assert_same(compiled(x), fn(x))


def test_no_compiler_gives_a_clear_error(monkeypatch):
    monkeypatch.setattr(config.cpp, "cxx", "no-such-compiler-xyz")
    cpp_builder.find_compiler.cache_clear()
    try:
        with pytest.raises(RuntimeError, match=r"C\+\+17 compiler with OpenMP.*no-such-compiler-xyz"):
            cpp_builder.find_compiler()
    finally:
        monkeypatch.undo()
        cpp_builder.find_compiler.cache_clear()


def test_unbuilt_modes_raise():
    with pytest.raises(NotImplementedError, match="max-autotune"):
        ember.inductor.compile_fx(None, [], mode="max-autotune")
    with pytest.raises(NotImplementedError, match="coordinate_descent_tuning"):
        ember.inductor.compile_fx(None, [], options={"coordinate_descent_tuning": True})


def test_output_code_is_logged_with_each_nodes_op(capfd):
    ember.logs.set_logs(output_code=True)
    try:
        compiled, rec = compile_with_inductor(lambda t: t.exp() + 1)
        np.testing.assert_allclose(compiled(ember.ones(3)).numpy(), np.e + 1, rtol=1e-6)
    finally:
        ember.logs.set_logs()
    assert "// exp = aten.exp.default" in capfd.readouterr().err
    assert "// exp = aten.exp.default" in rec.graphs[0].source
    assert "// add = aten.add.Tensor" in rec.graphs[0].source


def test_vectorization_report_names_vectorized_loops():
    if cpp_builder.find_compiler().split("/")[-1] not in ("g++", "c++"):
        pytest.skip("-fopt-info-vec is GCC's")
    compiled, rec = compile_with_inductor(lambda t: t * 3 + 1)
    compiled(ember.randn(4096))
    report = cpp_builder.vectorization_report(rec.graphs[0].source)
    assert "vectorized" in report
