"""The derivative table covers the core: every op taking a tensor is differentiable, marked not, or decomposed."""

from __future__ import annotations

import pytest

import ember
from ember.autograd import registry
from ember.core.dispatch import define, undefine

# Ops whose derivative is not written yet. The list only shrinks: an op that gains an entry or a mark
# must leave it (test_pending_ops_are_still_missing fails otherwise).
PENDING = frozenset(
    {
        "aten._adaptive_avg_pool2d.default",
        "aten._native_batch_norm_legit.default",
        "aten._native_batch_norm_legit.no_stats",
        "aten._pad_circular.default",
        "aten._unique2.default",
        "aten._upsample_nearest_exact1d.default",
        "aten._upsample_nearest_exact2d.default",
        "aten.addmm.default",
        "aten.addmm_.default",
        "aten.as_strided.default",
        "aten.avg_pool2d.default",
        "aten.baddbmm.default",
        "aten.baddbmm_.default",
        "aten.bernoulli.default",
        "aten.bernoulli.p",
        "aten.bernoulli_.Tensor",
        "aten.bernoulli_.float",
        "aten.binary_cross_entropy.default",
        "aten.binary_cross_entropy_with_logits.default",
        "aten.bmm.default",
        "aten.bucketize.Scalar",
        "aten.bucketize.Tensor",
        "aten.cat.default",
        "aten.constant_pad_nd.default",
        "aten.convolution.default",
        "aten.diagonal.default",
        "aten.dot.default",
        "aten.dropout.default",
        "aten.dropout_.default",
        "aten.embedding_renorm_.default",
        "aten.exponential_.default",
        "aten.flip.default",
        "aten.gather.default",
        "aten.index.Tensor",
        "aten.index_add.default",
        "aten.index_add_.default",
        "aten.index_copy.default",
        "aten.index_copy_.default",
        "aten.index_fill.int_Scalar",
        "aten.index_fill.int_Tensor",
        "aten.index_fill_.int_Scalar",
        "aten.index_fill_.int_Tensor",
        "aten.index_put_.default",
        "aten.index_select.default",
        "aten.kl_div.default",
        "aten.masked_fill.Scalar",
        "aten.masked_fill.Tensor",
        "aten.masked_fill_.Scalar",
        "aten.masked_fill_.Tensor",
        "aten.masked_scatter.default",
        "aten.masked_scatter_.default",
        "aten.masked_select.default",
        "aten.max_pool2d_with_indices.default",
        "aten.multinomial.default",
        "aten.mv.default",
        "aten.narrow.default",
        "aten.native_dropout.default",
        "aten.native_group_norm.default",
        "aten.nll_loss_forward.default",
        "aten.nonzero.default",
        "aten.nonzero_numpy.default",
        "aten.nonzero_static.default",
        "aten.normal.Tensor_Tensor",
        "aten.normal.Tensor_float",
        "aten.normal.float_Tensor",
        "aten.normal_.default",
        "aten.one_hot.default",
        "aten.permute.default",
        "aten.put.default",
        "aten.put_.default",
        "aten.rand_like.default",
        "aten.rand_like.generator",
        "aten.randint_like.default",
        "aten.randint_like.generator",
        "aten.randint_like.low_dtype",
        "aten.randint_like.low_generator_dtype",
        "aten.randn_like.default",
        "aten.randn_like.generator",
        "aten.random_.default",
        "aten.random_.from",
        "aten.random_.to",
        "aten.reflection_pad1d.default",
        "aten.reflection_pad2d.default",
        "aten.reflection_pad3d.default",
        "aten.repeat.default",
        "aten.replication_pad1d.default",
        "aten.replication_pad2d.default",
        "aten.replication_pad3d.default",
        "aten.scatter.reduce",
        "aten.scatter.src",
        "aten.scatter.value",
        "aten.scatter.value_reduce",
        "aten.scatter_.reduce",
        "aten.scatter_.src",
        "aten.scatter_.value",
        "aten.scatter_.value_reduce",
        "aten.scatter_add.default",
        "aten.scatter_add_.default",
        "aten.scatter_reduce.two",
        "aten.scatter_reduce_.two",
        "aten.searchsorted.Scalar",
        "aten.searchsorted.Tensor",
        "aten.smooth_l1_loss.default",
        "aten.split.Tensor",
        "aten.split_with_sizes.default",
        "aten.squeeze.default",
        "aten.squeeze.dims",
        "aten.t.default",
        "aten.take.default",
        "aten.transpose.int",
        "aten.tril.default",
        "aten.tril_.default",
        "aten.triu.default",
        "aten.triu_.default",
        "aten.unbind.int",
        "aten.unfold.default",
        "aten.uniform_.default",
        "aten.unique_consecutive.default",
        "aten.unique_dim.default",
        "aten.unsqueeze.default",
        "aten.upsample_bilinear2d.default",
        "aten.upsample_nearest1d.default",
        "aten.upsample_nearest2d.default",
        "aten.vdot.default",
        "aten.view.dtype",
    }
)


def test_every_op_has_a_derivative_or_a_mark():
    missing = {str(op) for op in registry.missing()} - PENDING
    assert not missing, f"ops without a derivative, a nondifferentiable mark or a decomposition: {sorted(missing)}"


def test_pending_ops_are_still_missing():
    done = PENDING - {str(op) for op in registry.missing()}
    assert not done, f"these ops have an entry now: remove them from PENDING: {sorted(done)}"


def test_inplace_ops_use_their_functional_entry():
    aten = ember.ops.aten
    assert registry.lookup(aten.mul_.Tensor) is registry.lookup(aten.mul.Tensor)


def test_a_new_op_without_entry_is_reported_and_refuses_to_record():
    op = define("autograd_table_probe(Tensor self) -> Tensor", namespace="ember_test")
    op.register_kernel("cpu")(lambda self: self.clone())
    try:
        x = ember.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="derivative for 'ember_test::autograd_table_probe' is not implemented"):
            op(x)
        with ember.no_grad():
            assert not op(x).requires_grad
    finally:
        undefine(op)


def test_a_formula_is_registered_once():
    with pytest.raises(RuntimeError, match="defined twice"):
        registry.derivative(ember.ops.aten.mul.Tensor)(lambda grad, **_: None)


def test_out_overloads_refuse_to_record():
    x = ember.ones(3, requires_grad=True)
    out = ember.empty(3)
    with pytest.raises(RuntimeError, match=r"out=\.\.\. arguments don't support automatic differentiation"):
        ember.add(x, x, out=out)
