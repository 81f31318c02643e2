"""Ops whose outputs carry no gradient: indices, counts, bins, one-hot codes, fresh draws, new
tensors made in another's likeness (``zeros_like``, ``new_full``: only the metadata is read), a
tensor's sizes read as ops (``sym_size``), and ``lift_fresh`` (a tensor just made from data, which
requires grad only after it).

``unique`` and its forms are different: PyTorch lets their values require grad but has no formula,
so the backward raises ``NotImplementedError`` naming the op, here as there.
"""

from __future__ import annotations

from ember.autograd.registry import derivative, nondifferentiable
from ember.core.dispatch import ops

aten = ops.aten

nondifferentiable(
    aten.searchsorted.Tensor,
    aten.searchsorted.Scalar,
    aten.bucketize.Tensor,
    aten.bucketize.Scalar,
    aten.one_hot.default,
    aten.histc.default,
    aten.hash_tensor.default,
    aten.multinomial.default,
    aten.rand_like.default,
    aten.rand_like.generator,
    aten.randn_like.default,
    aten.randn_like.generator,
    aten.randint_like.default,
    aten.randint_like.generator,
    aten.randint_like.low_dtype,
    aten.randint_like.low_generator_dtype,
    aten.empty_like.default,
    aten.full_like.default,
    aten.zeros_like.default,
    aten.ones_like.default,
    aten.new_empty.default,
    aten.new_empty_strided.default,
    aten.new_zeros.default,
    aten.new_ones.default,
    aten.new_full.default,
    # sizes and strides read as ops: integers, not tensors
    aten.sym_size.int,
    aten.sym_stride.int,
    aten.sym_numel.default,
    aten.sym_storage_offset.default,
    aten.lift_fresh.default,
)


def _not_implemented(name: str):
    def formula(grad, **_):
        raise NotImplementedError(f"the derivative for '{name}' is not implemented.")

    return formula


for _op, _name in (
    (aten._unique2.default, "_unique2"),
    (aten.unique_dim.default, "unique_dim"),
    (aten.unique_consecutive.default, "unique_consecutive"),
):
    derivative(_op, output_differentiable=(True, False, False))(_not_implemented(_name))

# bincount's weighted counts require grad where the weights do, with no formula (as in PyTorch).
derivative(aten.bincount.default)(_not_implemented("bincount"))


def _segment_reduce_backward_formula(*args, **kwargs):
    # The op has an argument named ``grad``: this formula takes everything by keyword.
    raise NotImplementedError("the derivative for '_segment_reduce_backward' is not implemented.")


# segment_reduce's backward op has no derivative of its own (no double backward, no forward mode), as in PyTorch.
derivative(aten._segment_reduce_backward.default)(_segment_reduce_backward_formula)


def _refuse_resize(grad, **_):
    raise RuntimeError("cannot resize variables that require grad")


# resize_ changes a tensor's size in place: PyTorch refuses it on tensors that require grad.
derivative(aten.resize_.default, aten.resize_as_.default)(_refuse_resize)
