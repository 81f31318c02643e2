"""``threshold_backward``: the gradient of ReLU (and of ``threshold``), as PyTorch's op of that name:
``grad_output`` where ``self > threshold``, else 0 (nan in ``self`` lets the gradient through).

One kernel instead of a comparison and a ``where``: the mask is made and used in one go, and the
choice goes through ``ember.core.bitselect`` since ReLU's masks flip at random. Operands promote as
a binary op's do; the threshold is cast to their dtype first, as PyTorch's kernel casts it.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.aten.shape.copying import checked_scalar
from ember.core.bitselect import select
from ember.core.pointwise import define_pointwise, unsupported


def _check(p, inputs, params) -> None:
    if p.compute is D.bool_ or p.compute.category == D.COMPLEX:
        raise unsupported("threshold", p.compute)
    if p.compute.category == D.INTEGRAL:
        checked_scalar(params["threshold"], p.compute)  # PyTorch's error for a threshold out of the type's range


def _threshold_backward(grad, x, *, threshold):
    limit = np.asarray(threshold).astype(x.dtype)[()]
    return select(x <= limit, np.zeros((), grad.dtype), grad)


threshold_backward = define_pointwise(
    "threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor",
    _threshold_backward,
    n_inputs=2,
    inplace=False,
    out_overload=None,
    check=_check,
    fast=False,
)
