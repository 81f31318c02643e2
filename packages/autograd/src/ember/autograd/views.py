"""In-place ops on views: rebasing the base's history, as PyTorch does.

``v = base[1:3]; v.mul_(w)`` changes ``base`` too, so ``base``'s gradient must see the product.
After the op, ``base.grad_fn`` becomes a ``CopySlices`` node: the gradient of the new base is the
incoming one, with the view's region replaced by what the in-place op's formula makes of it (and
the op's other inputs get theirs from the same formula). The view's own ``grad_fn`` becomes an
``AsStridedBackward`` into the new base history. Other views of the same base made earlier are now
stale; ``edge`` regenerates theirs on their next use (the base counts its rebases).

Geometry is absolute within the storage, so a view's region within a gradient laid out like the
base is an ``as_strided`` of it.
"""

from __future__ import annotations

from ember.autograd.graph import Node, gradient_edge
from ember.core.tensor import Tensor


def _geometry(t: Tensor, base: Tensor) -> tuple:
    return (t._shape, t._stride, t._offset - base._offset)


def _base_like(grad: Tensor, shape: tuple, stride: tuple) -> Tensor:
    from ember.core.api import functions

    out = functions["empty_strided"](shape, stride, dtype=grad.dtype, device=grad.device)
    out.copy_(grad)
    return out


class CopySlices(Node):
    """The base's history after an in-place op on one of its views."""

    __slots__ = ("base_meta", "fn", "view_geometry")

    def __init__(self, base: Tensor, view: Tensor, fn: Node) -> None:
        # Edges: the base's previous history, then the op's inputs other than the view itself.
        super().__init__((gradient_edge(base), *fn.next_functions[1:]))
        self.base_meta = (base._shape, base._stride if _dense(base) else None, base.dtype)
        self.view_geometry = _geometry(view, base)
        self.fn = fn

    def name(self) -> str:
        return "CopySlices"

    def release(self) -> None:
        self.fn.release()

    def apply(self, grads: tuple) -> tuple:
        from ember.core.layout import contiguous_strides

        (grad,) = grads
        shape, stride, _ = self.base_meta
        result = _base_like(grad, shape, stride or contiguous_strides(shape))
        size, vstride, offset = self.view_geometry
        if stride is None:
            raise RuntimeError("an in-place op on a view of a base that is not dense cannot be differentiated")
        region = result.as_strided(size, vstride, offset)
        fn_grads = self.fn.apply((region.clone(),))
        if fn_grads[0] is None:
            region.zero_()
        else:
            region.copy_(fn_grads[0])
        return (result, *fn_grads[1:])


def _dense(t: Tensor) -> bool:
    from ember.core.layout import is_non_overlapping_and_dense

    return is_non_overlapping_and_dense(t._shape, t._stride)


class AsStridedBackward(Node):
    """A view's history read out of its base's: the gradient lands in the view's region of zeros."""

    __slots__ = ("base_meta", "view_geometry")

    def __init__(self, base: Tensor, view: Tensor) -> None:
        super().__init__((gradient_edge(base),))
        self.base_meta = (base._shape, base._stride, base.dtype)
        self.view_geometry = _geometry(view, base)

    def name(self) -> str:
        return "AsStridedBackward0"

    def apply(self, grads: tuple) -> tuple:
        from ember.core.api import functions

        (grad,) = grads
        shape, stride, _ = self.base_meta
        out = functions["zeros"](shape, dtype=grad.dtype, device=grad.device).as_strided(shape, stride, 0)
        size, vstride, offset = self.view_geometry
        region = out.as_strided(size, vstride, offset)
        region.copy_(grad)
        return (out,)


def rebase(view: Tensor, fn: Node) -> None:
    """Give ``view``'s base the history of the in-place op ``fn`` just applied to ``view``."""
    base = view._base
    node = CopySlices(base, view, fn)
    base.grad_fn = node
    base._output_nr = 0
    base.requires_grad = True
    generation = base.__dict__.get("_rebases", 0) + 1
    base._rebases = generation
    view.grad_fn = AsStridedBackward(base, view)
    view._output_nr = 0
    view.requires_grad = True
    view._seen_rebases = generation


def edge(t: Tensor) -> tuple:
    """``gradient_edge`` of ``t``, after regenerating a view's history made stale by a rebase."""
    base = t._base
    if base is not None:
        generation = base.__dict__.get("_rebases", 0)
        if generation != t.__dict__.get("_seen_rebases", 0):
            t.grad_fn = AsStridedBackward(base, t)
            t._output_nr = 0
            t.requires_grad = True
            t._seen_rebases = generation
    return gradient_edge(t)
