"""ember.compile's API against torch.compile's: decorator forms, errors, OptimizedModule, Module.compile."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

import ember  # noqa: E402


def f(x):
    return x + 1


@pytest.mark.parametrize("lib", ["torch", "ember"])
def test_decorator_forms_wrap_the_function(lib):
    compile_ = torch.compile if lib == "torch" else ember.compile
    wrapped = compile_(f, backend="eager")
    assert wrapped is not f and wrapped.__name__ == "f" and wrapped.__wrapped__ is f
    decorated = compile_(backend="eager", fullgraph=True)(f)
    assert decorated.__wrapped__ is f
    assert compile_(f, backend="eager", disable=True) is f


@pytest.mark.parametrize(
    "kwargs",
    [
        {"mode": "default", "options": {}},  # both at once
        {"mode": "fastest"},  # no such mode
        {"backend": "no_such_backend"},
    ],
)
def test_bad_arguments_raise_the_same_error_type(kwargs):
    with pytest.raises(RuntimeError) as expected:
        torch.compile(f, **kwargs)
    with pytest.raises(RuntimeError) as got:
        ember.compile(f, **kwargs)
    if "backend" not in kwargs:
        assert str(got.value).split(",")[0] == str(expected.value).split(",")[0]


def test_a_non_callable_is_refused_alike():
    with pytest.raises(AssertionError, match="A callable function is expected"):
        torch.compile(5)
    with pytest.raises(AssertionError, match="A callable function is expected"):
        ember.compile(5)


def test_optimized_module_and_its_state_dict_keys():
    tm, em = torch.nn.Linear(2, 3), ember.nn.Linear(2, 3)
    tc, ec = torch.compile(tm, backend="eager"), ember.compile(em, backend="eager")
    assert type(tc).__name__ == type(ec).__name__ == "OptimizedModule"
    assert tc._orig_mod is tm and ec._orig_mod is em
    assert ec.weight is em.weight and tc.weight is tm.weight
    assert repr(ec) == repr(tc)
    # PyTorch prefixes the keys with "_orig_mod."; Ember keeps the module's own keys, so that a
    # checkpoint of a compiled model loads into the model (see OptimizedModule's docstring).
    assert list(tc.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
    assert list(ec.state_dict()) == list(tm.state_dict()) == ["weight", "bias"]


def test_module_compile_in_place_keeps_the_type():
    tm, em = torch.nn.Linear(2, 3), ember.nn.Linear(2, 3)
    assert tm.compile(backend="eager") is None and em.compile(backend="eager") is None
    assert type(tm) is torch.nn.Linear and type(em) is ember.nn.Linear
    assert (tm._compiled_call_impl is None) == (em._compiled_call_impl is None) is False
    assert list(em.state_dict()) == list(tm.state_dict())


def test_dynamo_names_answer_alike():
    for name in (
        "reset",
        "explain",
        "mark_dynamic",
        "mark_static",
        "maybe_mark_dynamic",
        "optimize",
        "disable",
        "allow_in_graph",
        "list_backends",
        "register_backend",
        "run",
    ):
        assert hasattr(torch._dynamo, name) and hasattr(ember._dynamo, name), name
    for name in (
        "disable",
        "reset",
        "is_compiling",
        "allow_in_graph",
        "is_dynamo_compiling",
        "list_backends",
        "set_stance",
    ):
        assert hasattr(torch.compiler, name) and hasattr(ember.compiler, name), name
    assert ember._dynamo.config.cache_size_limit == torch._dynamo.config.cache_size_limit
    for name in (
        "suppress_errors",
        "automatic_dynamic_shapes",
        "assume_static_by_default",
        "force_parameter_static_shapes",
        "accumulated_cache_size_limit",
        "recompile_limit",
        "capture_scalar_outputs",
        "capture_dynamic_output_shape_ops",
    ):
        assert getattr(ember._dynamo.config, name) == getattr(torch._dynamo.config, name), name


def test_mark_dynamic_marks_alike():
    t, e = torch.ones(3, 4), ember.ones(3, 4)
    torch._dynamo.mark_dynamic(t, 0)
    ember._dynamo.mark_dynamic(e, 0)
    assert t._dynamo_dynamic_indices == e._dynamo_dynamic_indices == {0}
    torch._dynamo.mark_static(t, 1)
    ember._dynamo.mark_static(e, 1)
    assert t._dynamo_static_indices == e._dynamo_static_indices == {1}
