"""In-place ops on views: rebasing the base's history, as PyTorch does.

``v = base[1:3]; v.mul_(w)`` changes ``base`` too, so ``base``'s gradient must see the product.
After the op, ``base.grad_fn`` becomes a ``CopySlices`` node: the gradient of the new base is the
incoming one, with the view's region replaced by what the in-place op's formula makes of it (and
the op's other inputs get theirs from the same formula). The view's own ``grad_fn`` becomes an
``AsStridedBackward`` into the new base history.

Any other view of the same storage is stale once the storage has been written in place since its
``grad_fn`` was set, whether through another view or through the base itself: each view remembers
the storage version at that moment (``_view_version``), and ``edge`` regenerates its history from
the base's on its next use.

A view taken while its base did not require grad does not require grad; when the base gains a
history through an in-place op (on itself or through another view), ``follow_base`` gives each of
its views still alive (``Tensor._views``) an ``AsStridedBackward`` into that history, as PyTorch's
views follow their base. The views are found then, not checked each time an op runs.

Geometry is absolute within the storage, so a view's region within a gradient laid out like the
base is an ``as_strided`` of it, and reading a view's gradient back into its base is the gradient
of that ``as_strided`` (``ember.autograd.as_strided``), which also serves bases with gaps between
their elements and views that overlap. Views whose geometry is not memory (vmap's batched tensors)
replay their view ops instead (``view_replay.py``).
"""

from __future__ import annotations

from ember.autograd import view_replay
from ember.autograd.as_strided import as_strided_backward, overlaps_exactly
from ember.autograd.graph import Node, gradient_edge
from ember.core import dtypes as D
from ember.core.aten.factories.factories import empty_strided_function
from ember.core.aten.shape.complex_views import view_as_complex, view_as_real
from ember.core.tensor import Tensor

_FLOATING = D.FLOATING
_NO_GRAD_VIEW_WRITTEN = (
    "A view was created in no_grad mode and its base or another view of its base has been modified inplace with "
    "grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
    "code by moving both the view and the inplace either both inside the no_grad block (if you don't want the "
    "inplace to be tracked) or both outside (if you want the inplace to be tracked)."
)


def _geometry(t: Tensor) -> tuple:
    return (t._shape, t._stride, t._offset)


class CopySlices(Node):
    """The base's history after an in-place op on one of its views."""

    __slots__ = ("base_dtype", "base_geometry", "fn", "view_dtype", "view_geometry")

    def __init__(self, base: Tensor, view: Tensor, fn: Node) -> None:
        # Edges: the base's previous history, then the op's inputs other than the view itself.
        super().__init__((gradient_edge(base), *fn.next_functions[1:]))
        self.base_geometry = _geometry(base)
        self.view_geometry = _geometry(view)
        self.base_dtype, self.view_dtype = base.dtype, view.dtype
        self.fn = fn

    def name(self) -> str:
        return "CopySlices"

    def release(self) -> None:
        self.fn.release()

    def apply(self, grads: tuple) -> tuple:
        (grad,) = grads
        shape, stride, base_offset = self.base_geometry
        if overlaps_exactly(shape, stride):
            raise RuntimeError("an in-place op on a view of a base whose elements overlap cannot be differentiated")
        if type(grad) is not Tensor and view_replay.refuses_as_strided(grad):  # batched gradients
            return view_replay.copy_slices_by_index(grad, self.base_geometry, self.view_geometry, self.fn)
        base_complex, view_complex = _across_dtypes(self.base_dtype, self.view_dtype)
        if base_complex:
            grad = view_as_real(grad)
            shape, stride, base_offset = _as_reals(self.base_geometry)
        # Laid out like the base (gaps included), so that the view's region is an as_strided of it.
        result = empty_strided_function(shape, stride, dtype=grad.dtype, device=grad.device)
        result.copy_(grad)
        size, vstride, offset = _as_reals(self.view_geometry) if view_complex else self.view_geometry
        region = result.as_strided(size, vstride, offset - base_offset)
        fn_grads = self.fn.apply((view_as_complex(region.clone()) if view_complex else region.clone(),))
        if fn_grads[0] is None:
            region.zero_()
        else:
            region.copy_(view_as_real(fn_grads[0]) if view_complex else fn_grads[0])
        return (view_as_complex(result) if base_complex else result, *fn_grads[1:])


def _across_dtypes(base_dtype, view_dtype) -> tuple[bool, bool]:
    """For a view with another dtype than its base (a complex tensor's reals, or reals read as complex
    numbers): which side is complex. Both geometries are then taken in units of the reals."""
    if base_dtype is view_dtype:
        return False, False
    return base_dtype.category == D.COMPLEX, view_dtype.category == D.COMPLEX


def _as_reals(geometry: tuple) -> tuple:
    """A complex geometry as the geometry of its reals: a trailing dim of 2, strides and offset doubled."""
    shape, stride, offset = geometry
    return ((*shape, 2), (*(s * 2 for s in stride), 1), offset * 2)


class AsStridedBackward(Node):
    """A view's history read out of its base's: the gradient goes back through storage positions."""

    __slots__ = ("base_dtype", "base_geometry", "view_dtype", "view_geometry")

    def __init__(self, base: Tensor, view: Tensor) -> None:
        super().__init__((gradient_edge(base),))
        self.base_geometry = _geometry(base)
        self.view_geometry = _geometry(view)
        self.base_dtype, self.view_dtype = base.dtype, view.dtype

    def name(self) -> str:
        return "AsStridedBackward0"

    def apply(self, grads: tuple) -> tuple:
        if type(grads[0]) is not Tensor and view_replay.refuses_as_strided(grads[0]):  # batched gradients
            return (view_replay.view_backward_by_index(grads[0], self.base_geometry, self.view_geometry),)
        base_complex, view_complex = _across_dtypes(self.base_dtype, self.view_dtype)
        if not (base_complex or view_complex):
            return (as_strided_backward(grads[0], self.base_geometry, self.view_geometry),)
        grad = view_as_real(grads[0]) if view_complex else grads[0]
        base_geometry = _as_reals(self.base_geometry) if base_complex else self.base_geometry
        view_geometry = _as_reals(self.view_geometry) if view_complex else self.view_geometry
        result = as_strided_backward(grad, base_geometry, view_geometry)
        # A fresh copy starts at offset 0 with even strides, as a complex view needs.
        return (view_as_complex(result.clone()) if base_complex else result,)


def rebase(view: Tensor, fn: Node) -> None:
    """Give ``view``'s base the history of the in-place op ``fn`` just applied to ``view``."""
    base = view._base
    view_fn = view_replay.view_fn_of(view)
    node = CopySlices(base, view, fn) if view_fn is None else view_replay.ReplayedCopySlices(base, view_fn, fn)
    gains_history = not base.requires_grad
    base.grad_fn = node
    base._output_nr = 0
    base.requires_grad = True
    _regenerate(view, base)
    if gains_history:
        follow_base(base)


def follow_base(base: Tensor) -> None:
    """``base`` has just gained a history through an in-place op: its views that did not require grad
    read theirs out of it (see the module docstring)."""
    refs = base._views
    if refs is None:
        return
    for view in refs.alive():
        # detach() makes its output through make_view, then drops _base: not a view for autograd.
        if view._base is base and not view.requires_grad and view.dtype.category >= _FLOATING:
            _regenerate(view, base)


def _regenerate(view: Tensor, base: Tensor) -> None:
    view_fn = view_replay.view_fn_of(view)
    if view_fn is not None:
        view_replay.regenerate(view, base, view_fn)
        return
    view.grad_fn = AsStridedBackward(base, view)
    view._output_nr = 0
    view.requires_grad = True
    view._view_version = view._storage.version


def edge(t: Tensor) -> tuple:
    """``gradient_edge`` of ``t``, after regenerating a view's history made stale by an in-place write.
    A view taken under no_grad (``recording._mark_no_grad_views``) has none: gradients stop there;
    once its storage has been written in place since, it cannot be used at all, as in PyTorch."""
    base = t._base
    if base is not None:
        state = t.__dict__
        if "_no_grad_view" in state and t.grad_fn is None:  # autograd.Function outputs get a grad_fn
            if state.get("_view_version") != t._storage.version:
                raise RuntimeError(_NO_GRAD_VIEW_WRITTEN)
            return (None, 0)
        if state.get("_view_version") != t._storage.version and base.requires_grad:
            _regenerate(t, base)
    return gradient_edge(t)
