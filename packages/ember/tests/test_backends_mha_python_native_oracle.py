"""ember.backends.mha and ember.backends.python_native answer the same sequence of calls as PyTorch's."""

import pytest

import ember
import ember.backends.mha
import ember.backends.python_native

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
import torch.backends.mha  # noqa: E402, F811  (a submodule: import it)
import torch.backends.python_native  # noqa: E402

STEPS = [
    "pn.all_dsls",
    "pn.available_dsls",
    "pn.get_dsl_operations('triton')",
    "pn.is_operation_disabled('mm')",
    "pn.disable_operations('mm', 'bmm')",
    "pn.is_operation_disabled('bmm')",
    "pn.enable_operations('bmm')",
    "(pn.is_operation_disabled('mm'), pn.is_operation_disabled('bmm'))",
    "pn.enable_operations('mm')",
    "pn.triton.name, pn.triton.available, pn.triton.version, pn.triton.enabled",
    "pn.triton.disable()",
    "pn.triton.enabled, pn.is_dsl_disabled('triton'), repr(pn.triton)",
    "pn.triton.enable()",
    "setattr(pn.cutedsl, 'enabled', False)",
    "pn.cutedsl.enabled",
    "setattr(pn.cutedsl, 'enabled', True)",
    "pn.disable_dispatch_keys('CUDA')",
    "pn.enable_dispatch_keys('CUDA')",
    "mha.get_fastpath_enabled()",
    "mha.set_fastpath_enabled(False)",
    "mha.get_fastpath_enabled()",
    "mha.set_fastpath_enabled(True)",
]


def _run(pn, mha):
    answers = []
    for step in STEPS:
        answers.append(eval(step, {"pn": pn, "mha": mha}))
    with pn.operations_disabled("mm"):
        answers.append(pn.is_operation_disabled("mm"))
    answers.append(pn.is_operation_disabled("mm"))
    with pn.triton.disabled():
        answers.append(pn.triton.enabled)
    answers.append(pn.triton.enabled)
    return answers


def test_the_same_answers_as_torch():
    assert _run(ember.backends.python_native, ember.backends.mha) == _run(
        torch.backends.python_native, torch.backends.mha
    )


def test_unknown_attribute():
    with pytest.raises(AttributeError, match="has no attribute 'foo'"):
        ember.backends.python_native.foo  # noqa: B018
    assert {"mha", "python_native"} <= set(ember.backends.__all__)


def test_cusparselt_answers_as_a_build_without_it():
    import torch.backends.cusparselt

    assert ember.backends.cusparselt.is_available() is False
    assert ember.backends.cusparselt.version() is None and ember.backends.cusparselt.get_max_alg_id() is None
    if not torch.backends.cusparselt.is_available():
        assert torch.backends.cusparselt.version() is None
