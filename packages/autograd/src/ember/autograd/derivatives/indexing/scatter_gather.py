"""Derivatives of gather and the scatters (``ember.core.aten.indexing.scatter_gather``).

``gather`` reads by index, so its gradient scatter-adds back. A scatter that overwrites gives the
overwritten positions no gradient in ``self``, and each ``src`` element the gradient of the position
it was written to. ``scatter_reduce`` follows PyTorch's rules per reduction: ``sum`` and ``mean``
are linear; ``prod`` divides the product by each factor, with zeros handled apart; ``amax`` and
``amin`` share the gradient evenly among all the elements equal to the result (those of ``self``
too, where ``include_self``). Without ``include_self``, positions that got a write give ``self``
nothing. The legacy ``scatter(..., reduce=)`` has no derivative in PyTorch; here neither.

The overwriting and adding scatters are linear in ``self`` and ``src`` together, so their forward
rules scatter the tangents. Transposing the backward formula instead would fail where ``src`` is
larger than ``index``: its gradient has ``index``'s shape (PyTorch's reverse mode refuses that case
too, its forward mode does not).
"""

from __future__ import annotations

from ember.autograd.grad_mode import state
from ember.autograd.registry import derivative
from ember.core.aten.factories.factories import ones_like, zeros_function, zeros_like
from ember.core.aten.pointwise.ternary import where_function
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten.gather.default, save=("index",))
def _gather(grad, self, dim, index, **_):
    zeros = zeros_function(tuple(self.shape), dtype=grad.dtype, device=grad.device)
    return zeros.scatter_add(dim, index, grad), None


@derivative(aten.scatter.src, save=("index",), jvp="linear")
def _scatter_src(grad, self, dim, index, src, needs, **_):
    grad_self = grad.scatter(dim, index, 0) if needs[0] else None
    grad_src = grad.gather(dim, index) if needs[2] else None
    return grad_self, None, grad_src


def _scatter_value_jvp(tangents, dim, index, **_):
    t = tangents[0]  # the index has none
    return None if t is None else t.scatter(dim, index, 0)  # the written number is a constant


@derivative(aten.scatter.value, save=("index",), jvp=_scatter_value_jvp)
def _scatter_value(grad, self, dim, index, **_):
    return grad.scatter(dim, index, 0), None


@derivative(aten.scatter.reduce, aten.scatter.value_reduce)
def _scatter_legacy_reduce(grad, **_):
    raise RuntimeError("derivative for aten::scatter is not implemented")


@derivative(aten.scatter_add.default, save=("index",), jvp="linear")
def _scatter_add(grad, self, dim, index, src, needs, **_):
    return grad, None, (grad.gather(dim, index) if needs[2] else None)


@derivative(aten.scatter_reduce.two, save=("self", "index", "src", "result"))
def _scatter_reduce(grad, self, dim, index, src, reduce, include_self, result, needs, **_):
    if reduce == "sum":
        grad_self, grad_src = grad, grad.gather(dim, index)
    elif reduce == "mean":
        count = ones_like(grad) if include_self else zeros_like(grad)
        count = count.scatter_add(dim, index, ones_like(src))
        grad_self = grad / count.masked_fill(count == 0, 1)
        grad_src = grad_self.gather(dim, index)
    elif reduce == "prod":
        grad_self, grad_src = _prod_backward(grad, self, dim, index, src, include_self, result)
    elif reduce in ("amax", "amin"):
        picked = result.gather(dim, index)
        self_hits = (self == result).to(grad.dtype)
        src_hits = (src == picked).to(grad.dtype)
        if not include_self:
            self_hits = self_hits.scatter(dim, index, 0)
        share = grad / self_hits.scatter_add(dim, index, src_hits)
        grad_self = self_hits * share
        grad_src = src_hits * share.gather(dim, index)
    else:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if not include_self:
        grad_self = grad_self.scatter(dim, index, 0)
    return (grad_self if needs[0] else None), None, (grad_src if needs[2] else None)


def _prod_backward(grad, self, dim, index, src, include_self, result):
    """The product over a position's factors, divided by one factor, without dividing by zero.

    ``self``'s factor: the product of the others is recomputed with ``self``'s zeros read as ones.
    A ``src`` factor that is the only zero at its position: the product of the others, recomputed with
    it read as one; any other factor: result / factor (zero where another factor is zero).
    """
    self_ones = self.masked_fill(self == 0, 1)
    grad_self = grad * self_ones.scatter_reduce(dim, index, src, "prod", include_self=include_self) / self_ones
    src_zero = src == 0
    zeros_at = zeros_like(grad).scatter_add(dim, index, src_zero.to(grad.dtype)).gather(dim, index)
    lone_zero = src_zero & (zeros_at == 1)
    others = self.scatter_reduce(dim, index, src.masked_fill(lone_zero, 1), "prod", include_self=include_self)
    grad_src = where_function(
        lone_zero, (grad * others).gather(dim, index), (grad * result).gather(dim, index) / src.masked_fill(src_zero, 1)
    )
    if state.enabled and bool((zeros_at > 1).any()):
        raise RuntimeError(
            "scatter_reduce(): Double backward is unsupported for src when >1 zeros in src are scattered to the same "
            "position."
        )
    return grad_self, grad_src
