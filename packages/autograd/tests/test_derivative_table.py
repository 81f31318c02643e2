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
        "aten._unique2.default",
        "aten.all.default",
        "aten.all.dim",
        "aten.all.dims",
        "aten.amax.default",
        "aten.amin.default",
        "aten.aminmax.default",
        "aten.any.default",
        "aten.any.dim",
        "aten.any.dims",
        "aten.argmax.default",
        "aten.argmin.default",
        "aten.as_strided.default",
        "aten.bernoulli.default",
        "aten.bernoulli.p",
        "aten.bernoulli_.Tensor",
        "aten.bernoulli_.float",
        "aten.bucketize.Scalar",
        "aten.bucketize.Tensor",
        "aten.cat.default",
        "aten.count_nonzero.default",
        "aten.count_nonzero.dim_IntList",
        "aten.cumprod.default",
        "aten.cumprod_.default",
        "aten.cumsum.default",
        "aten.cumsum_.default",
        "aten.diagonal.default",
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
        "aten.kthvalue.default",
        "aten.linalg_vector_norm.default",
        "aten.logsumexp.default",
        "aten.masked_fill.Scalar",
        "aten.masked_fill.Tensor",
        "aten.masked_fill_.Scalar",
        "aten.masked_fill_.Tensor",
        "aten.masked_scatter.default",
        "aten.masked_scatter_.default",
        "aten.masked_select.default",
        "aten.max.default",
        "aten.max.dim",
        "aten.median.default",
        "aten.median.dim",
        "aten.min.default",
        "aten.min.dim",
        "aten.mode.default",
        "aten.multinomial.default",
        "aten.nanmean.default",
        "aten.nanmedian.default",
        "aten.nanmedian.dim",
        "aten.nansum.default",
        "aten.narrow.default",
        "aten.nonzero.default",
        "aten.nonzero_numpy.default",
        "aten.nonzero_static.default",
        "aten.normal.Tensor_Tensor",
        "aten.normal.Tensor_float",
        "aten.normal.float_Tensor",
        "aten.normal_.default",
        "aten.nuclear_norm.dim",
        "aten.one_hot.default",
        "aten.permute.default",
        "aten.prod.default",
        "aten.prod.dim_int",
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
        "aten.repeat.default",
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
        "aten.sort.default",
        "aten.sort.stable",
        "aten.split.Tensor",
        "aten.split_with_sizes.default",
        "aten.squeeze.default",
        "aten.squeeze.dims",
        "aten.std.correction",
        "aten.std_mean.correction",
        "aten.t.default",
        "aten.take.default",
        "aten.topk.default",
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
        "aten.var.correction",
        "aten.var_mean.correction",
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
