"""Every registered ``aten`` op is reached by an OpInfo sample, or says where else it is tested.

``op_calls.recording()`` runs every OpInfo entry (its call, in-place and ``out=`` variants) in Ember
under a dispatch mode that records each op overload called, kernels' and decompositions' own calls
included. An op no sample reaches must be listed in ``NOT_SAMPLED`` with the reason; the list is
checked both ways, so that it neither hides an op that samples now reach nor names one that is gone.
"""

from __future__ import annotations

import json

from op_calls import INDEX, files_named, index, key, recording

from ember.core.dispatch import all_ops

_BACKWARD = "a backward op, called by autograd with saved tensors: tested against PyTorch in {}"

NOT_SAMPLED = {
    "aten::convolution_backward.default": _BACKWARD.format("test_convolution_backward.py"),
    "aten::max_pool2d_with_indices_backward.default": _BACKWARD.format("test_max_pool_backward.py"),
    "aten::native_batch_norm_backward.default": _BACKWARD.format("test_batch_norm_backward.py"),
    "aten::nll_loss_backward.default": _BACKWARD.format("test_nll_loss_backward.py"),
    "aten::threshold_backward.default": _BACKWARD.format("test_threshold_backward.py"),
    "aten::_scaled_dot_product_efficient_attention.default": "attention with any mask, against PyTorch's "
    "(values, gradients, dropout) in packages/nn/tests/test_sdpa_front_end.py",
    "aten::_scaled_dot_product_efficient_attention_backward.default": "its backward, through the front "
    "end's gradients against PyTorch's in packages/nn/tests/test_sdpa_front_end.py",
    "aten::_scaled_dot_product_flash_attention_for_cpu.default": "attention, against PyTorch's op (values, "
    "meta, gradients, errors) in packages/sdpa/tests/test_attention_ops.py",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward.default": "attention's backward, against "
    "PyTorch's op in packages/sdpa/tests/test_attention_ops.py",
    **dict.fromkeys(
        ["aten::sym_size.int", "aten::sym_stride.int", "aten::sym_numel.default", "aten::sym_storage_offset.default"],
        "a size op, read by graphs: against PyTorch's in test_size_ops.py",
    ),
    "aten::_scaled_dot_product_flash_attention.default": "the cuda attention op: its meta function against "
    "PyTorch's and its core-op fallback in packages/sdpa/tests/test_attention_ops.py",
    **dict.fromkeys(
        [
            "aten::_sparse_coo_tensor_with_dims_and_tensors.default",
            "aten::to_dense.default",
            "aten::_to_sparse.sparse_dim",
            "aten::_coalesce.default",
            "aten::values.default",
            "aten::indices.default",
            "aten::_values.default",
            "aten::_indices.default",
            "aten::sparse_mask.default",
            "aten::_sparse_mm.default",
            "aten::_sparse_addmm.default",
            "aten::_sparse_sum.default",
            "aten::_sparse_sum.dim",
            "aten::_sparse_softmax.default",
            "aten::_sparse_log_softmax.default",
            "aten::hspmm.default",
        ],
        "a sparse COO op (OpInfo samples are dense): against PyTorch's in test_sparse_oracle.py, its gradient "
        "in test_sparse_gradients.py",
    ),
    **dict.fromkeys(
        ["aten::indices_copy.default", "aten::values_copy.default"],
        "a copy of a sparse tensor's indices or values (OpInfo samples are dense): in test_tensor_surface_oracle.py",
    ),
    "aten::from_file.default": "reads a file the test writes: against PyTorch's in test_tensor_surface_oracle.py",
}


def aten_ops() -> set[str]:
    return {key(op) for op in all_ops() if op.namespace == "aten"}


def test_every_aten_op_is_sampled():
    missing = sorted(aten_ops() - recording().reached - set(NOT_SAMPLED))
    assert not missing, (
        f"{len(missing)} registered ops are reached by no OpInfo sample: add samples to an opinfo_*.py "
        f"table, or list them in NOT_SAMPLED with where they are tested: {missing}"
    )


def test_not_sampled_is_current():
    gone = sorted(set(NOT_SAMPLED) - aten_ops())
    assert not gone, f"NOT_SAMPLED names ops that are not registered: {gone}"
    reached = sorted(set(NOT_SAMPLED) & recording().reached)
    assert not reached, f"OpInfo samples now reach these; drop them from NOT_SAMPLED: {reached}"
    missing_files = {op: files_named(reason) for op, reason in NOT_SAMPLED.items() if files_named(reason)}
    assert not missing_files, f"NOT_SAMPLED reasons name test files that do not exist: {missing_files}"
    assert all(reason.strip() for reason in NOT_SAMPLED.values()), "every NOT_SAMPLED entry needs a reason"


def test_the_opinfo_index_is_current():
    """opinfo_index.json (what ``ember.ops describe`` shows as an op's OpInfo entries) matches the samples."""
    current = index(recording())
    stored = json.loads(INDEX.read_text()) if INDEX.exists() else None
    assert stored == current, (
        "packages/tensor/tests/opinfo_index.json is out of date: run `python packages/tensor/tests/op_calls.py`"
    )


def test_describe_shows_the_entries_that_sample_an_op():
    from ember.library.describe import OPINFO_INDEX, describe

    assert INDEX.resolve() == OPINFO_INDEX
    text = describe("aten::add_.Tensor")
    assert "OpInfo" in text and "add" in text.split("OpInfo", 1)[1]
    assert "no sample reaches it" in describe("aten::sym_size.int")
