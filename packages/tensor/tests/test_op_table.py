"""What the op table promises every op: a meta function of its own, apart from its CPU kernel."""

from __future__ import annotations

import ember
from ember.core.dispatch import all_ops


def test_meta_functions_are_not_cpu_kernels():
    shared = [str(op) for op in all_ops() if op.meta is not None and op.meta is op.kernel("cpu")]
    assert not shared, f"these ops use their CPU kernel as their meta function (it must not read data): {shared}"


def test_every_op_with_a_cpu_kernel_has_a_meta_path():
    missing = [str(op) for op in all_ops() if op.kernel("cpu") and op.meta is None and op.decomposition is None]
    assert not missing, f"ops with a CPU kernel but neither a meta function nor a decomposition: {missing}"


def test_a_meta_function_runs_on_metadata_alone():
    x = ember.empty(2, 5, 7, device="meta")
    assert x.sum(1).shape == (2, 7) and x.sum(1).device.type == "meta"
    values, indices = x.sort(-1)
    assert (values.shape, indices.dtype) == ((2, 5, 7), ember.int64)
    assert ember.randn(3, 4, device="meta").shape == (3, 4)
