"""Every decomposition against its op's CPU kernel, on the calls the OpInfo samples make.

An op with both a kernel and a decomposition has two implementations that must agree: the kernel
runs in eager mode, the decomposition wherever a pass lowers to core ops. ``op_calls.recording()``
keeps the first calls each op receives while the OpInfo tables run (a few per dtype, arguments
cloned before the call); each is replayed here, on fresh clones, through ``op.kernel`` and
``op.decomposition``, comparing results and the arguments they mutate: dtypes, shapes and values.
The sampled results themselves are compared with PyTorch's in ``test_ops.py``.

Ops with a decomposition that no sample reaches are listed in ``NOT_SAMPLED``, each with where it is
checked instead; a test keeps that list current.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_calls import Call, clone, files_named, key, recording
from opinfo import TOLERANCES, dtype_name, to_numpy

import ember
from ember.core.dispatch import OpOverload, all_ops

NOT_SAMPLED = {
    "aten::convolution_backward.default": "a backward op: kernel and decomposition against PyTorch in "
    "test_convolution_backward.py",
    "aten::max_pool2d_with_indices_backward.default": "a backward op: kernel and decomposition against "
    "PyTorch in test_max_pool_backward.py",
    "aten::native_batch_norm_backward.default": "a backward op: kernel and decomposition against PyTorch in "
    "test_batch_norm_backward.py",
    "aten::threshold_backward.default": "a backward op: kernel and decomposition in test_threshold_backward.py",
    "aten::nll_loss_backward.default": "a backward op: kernel and decomposition against PyTorch in "
    "test_nll_loss_backward.py",
    "aten::_scaled_dot_product_efficient_attention.default": "attention with any mask: the decomposition "
    "against the kernel in packages/nn/tests/test_sdpa_front_end.py",
    "aten::_scaled_dot_product_efficient_attention_backward.default": "its backward: the decomposition "
    "against the kernel in packages/nn/tests/test_sdpa_front_end.py",
    "aten::_scaled_dot_product_flash_attention_for_cpu.default": "attention: the decomposition against the "
    "kernel in packages/sdpa/tests/test_attention_ops.py",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward.default": "attention's backward: the "
    "decomposition against the kernel in packages/sdpa/tests/test_attention_ops.py",
}


def _kernel(op: OpOverload):
    return op.kernel("cpu") or op.kernel("*")


DECOMPOSED = sorted((op for op in all_ops() if op.decomposition is not None and _kernel(op) is not None), key=key)


def _replay(fn, call: Call):
    """``fn`` on fresh clones of the recorded arguments: (result, arguments after, error)."""
    args, kwargs = clone(call.args), clone(call.kwargs)
    ember.manual_seed(0)  # random ops (dropout) draw the same numbers through either path
    try:
        return fn(*args, **kwargs), (args, kwargs), None
    except Exception as error:
        return None, (args, kwargs), error


def _tolerance(dtype: str) -> tuple[float, float]:
    # float64: both paths do the same arithmetic, possibly in another order (a sum by rows or by a
    # product with ones), so only rounding at the last bits differs. Lower precisions round each
    # step of the decomposition where the kernel may keep float32 or float64 intermediates.
    if dtype == "float64":
        return (1e-10, 1e-10)
    return TOLERANCES.get(dtype, (0, 0))


def assert_agree(ours, theirs, where: str) -> None:
    """``ours`` (the decomposition's) against ``theirs`` (the kernel's)."""
    if isinstance(theirs, list | tuple):
        assert isinstance(ours, list | tuple) and len(ours) == len(theirs), f"{where}: {ours!r} vs {theirs!r}"
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            assert_agree(a, b, f"{where}[{i}]")
        return
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and ours.keys() == theirs.keys(), f"{where}: {ours!r} vs {theirs!r}"
        for k in theirs:
            assert_agree(ours[k], theirs[k], f"{where}[{k!r}]")
        return
    if not isinstance(theirs, ember.Tensor):
        assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"
        return
    assert isinstance(ours, ember.Tensor), f"{where}: a {type(ours).__name__}, the kernel gave a tensor"
    assert ours.dtype == theirs.dtype, f"{where}: dtype {ours.dtype} vs the kernel's {theirs.dtype}"
    assert tuple(ours.shape) == tuple(theirs.shape), f"{where}: shape {tuple(ours.shape)} vs {tuple(theirs.shape)}"
    rtol, atol = _tolerance(dtype_name(theirs))
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=rtol, atol=atol, equal_nan=True, err_msg=where)


def _describe(call: Call) -> str:
    def show(v):
        if isinstance(v, ember.Tensor):
            return f"{dtype_name(v)}{list(v.shape)}"
        if isinstance(v, list | tuple):
            return "[" + ", ".join(show(x) for x in v) + "]"
        return repr(v)

    args = ", ".join([show(a) for a in call.args] + [f"{k}={show(v)}" for k, v in call.kwargs.items()])
    return f"{call.op}({args})"


@pytest.mark.parametrize("op", [pytest.param(op, id=key(op)) for op in DECOMPOSED if key(op) not in NOT_SAMPLED])
def test_decomposition_matches_kernel(op: OpOverload):
    calls = recording().calls.get(key(op), [])
    assert calls, f"{key(op)}: no OpInfo sample reaches it; add one or list it in NOT_SAMPLED"
    for call in calls:
        where = _describe(call)
        expected, expected_args, expected_error = _replay(_kernel(op), call)
        got, got_args, error = _replay(op.decomposition, call)
        if expected_error is not None:
            assert error is not None, f"{where}: the kernel raised {expected_error!r}, the decomposition returned"
            continue
        if error is not None:
            raise AssertionError(f"{where}: the decomposition raised {error!r}") from error
        assert_agree(got, expected, where)
        assert_agree(got_args, expected_args, f"{where} (arguments after the call)")


def test_not_sampled_is_current():
    """NOT_SAMPLED names existing ops with a kernel and a decomposition that no sample reaches."""
    decomposed = {key(op) for op in DECOMPOSED}
    gone = sorted(set(NOT_SAMPLED) - decomposed)
    assert not gone, f"NOT_SAMPLED names ops without both a kernel and a decomposition: {gone}"
    reached = sorted(set(NOT_SAMPLED) & recording().reached)
    assert not reached, f"OpInfo samples now reach these; drop them from NOT_SAMPLED: {reached}"
    missing_files = {op: files_named(reason) for op, reason in NOT_SAMPLED.items() if files_named(reason)}
    assert not missing_files, f"NOT_SAMPLED reasons name test files that do not exist: {missing_files}"
