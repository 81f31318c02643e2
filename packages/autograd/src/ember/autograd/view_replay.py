"""In-place ops on views whose geometry is not memory: replaying the view ops instead.

``views.py`` locates a view inside its base by storage geometry (sizes, strides, offset), which
holds for ordinary tensors. A tensor subclass that stands for more than its own memory, such as
vmap's ``BatchedTensor`` (whose storage holds every lane), has a logical geometry that says nothing
about where one lane's elements are, and refuses ``as_strided``. Such a view carries instead a
``_view_fn``: a function that applies the same view ops, in order, to any tensor shaped like its
base (PyTorch's view replay). With it:

- the base's history after an in-place op on the view is ``ReplayedCopySlices``: the incoming
  gradient with the view's region (found by replaying the view ops on it) replaced by what the
  op's formula gives;
- a view whose history went stale gets a new one by replaying its view ops on its base with grad
  mode on, which records their ordinary backward nodes.

Putting a gradient of the view's shape back into the base's shape is the backward of the view ops
(``embed``), so the computation stays out of place and works whatever the gradients are wrapped in.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.autograd.grad_mode import enable_grad, is_grad_enabled
from ember.autograd.graph import Node, gradient_edge
from ember.core.dispatch import ops
from ember.core.tensor import Tensor

_aten = ops.aten


def view_fn_of(t: Tensor) -> Callable | None:
    """The view-replay function of ``t`` when it has one (see the module docstring)."""
    return t.__dict__.get("_view_fn")


def _base_meta(base: Tensor) -> tuple:
    return (tuple(base._shape), base.dtype, base.device)


# ``ember.autograd.grad``, installed by vmap's views module, which alone makes replayed views: taking
# it from there keeps this module, which the graph imports, from importing the engine.
_autograd_grad: Callable | None = None


def install_grad(fn: Callable) -> None:
    global _autograd_grad
    _autograd_grad = fn


def embed(grad: Tensor, base_meta: tuple, view_fn: Callable) -> Tensor:
    """``grad``, the gradient of a view, as a gradient of its base: the backward of the view ops."""
    autograd_grad = _autograd_grad
    if autograd_grad is None:
        raise RuntimeError("a replayed view's backward needs ember.func's vmap, which makes such views")
    shape, dtype, device = base_meta
    create_graph = is_grad_enabled()
    with enable_grad():
        leaf = _aten.zeros.default(shape, dtype=dtype, device=device)
        leaf.requires_grad = True
        out = view_fn(leaf)
    (result,) = autograd_grad(out, leaf, grad, create_graph=create_graph)
    return result


def _mask(base_meta: tuple, view_fn: Callable) -> Tensor:
    """A boolean tensor shaped like the base, true where the view reads it."""
    shape, _, device = base_meta
    from ember.core import dtypes as D

    mask = _aten.zeros.default(shape, dtype=D.bool_, device=device)
    view_fn(mask).fill_(True)
    return mask


class ReplayedCopySlices(Node):
    """The base's history after an in-place op on a view that replays its view ops."""

    __slots__ = ("base_meta", "fn", "view_fn")

    def __init__(self, base: Tensor, view_fn: Callable, fn: Node) -> None:
        # Edges: the base's previous history, then the op's inputs other than the view itself.
        super().__init__((gradient_edge(base), *fn.next_functions[1:]))
        self.base_meta = _base_meta(base)
        self.view_fn = view_fn
        self.fn = fn

    def name(self) -> str:
        return "CopySlices"

    def release(self) -> None:
        self.fn.release()

    def apply(self, grads: tuple) -> tuple:
        (grad,) = grads
        region = self.view_fn(grad.contiguous())
        fn_grads = self.fn.apply((region.clone(),))
        mask = _mask(self.base_meta, self.view_fn)
        inside = fn_grads[0]
        if inside is None:
            inside = region.new_zeros(region.shape)
        # ``where`` rather than arithmetic: exact, and the old values (even inf or nan) do not leak in.
        result = _aten.where.self(mask, embed(inside, self.base_meta, self.view_fn), grad)
        return (result, *fn_grads[1:])


def regenerate(view: Tensor, base: Tensor, view_fn: Callable) -> None:
    """Give ``view`` the history of its view ops replayed on ``base``'s current history."""
    with enable_grad():
        replayed = view_fn(base)
    view.grad_fn = replayed.grad_fn
    view._output_nr = replayed._output_nr
    view.requires_grad = True
    view._view_version = view._storage.version


# -- views of ordinary tensors whose gradients come wrapped --------------------------------------
# A view of an ordinary tensor has a memory geometry, but its gradients may be tensor subclasses
# (batched cotangents of ``jacrev`` or of a ``vjp`` called under ``vmap``) that refuse ``as_strided``.
# For those, the view's elements are located in the base by index (gather and scatter), out of place.


def refuses_as_strided(t: Tensor) -> bool:
    """Whether ``t`` is, or wraps (``elem``, as functionalization's tensors do), a tensor subclass that
    declares ``_refuses_as_strided`` (vmap's ``BatchedTensor``). Other subclasses (fake tensors, for
    one) keep the ``as_strided`` path, and the graphs traced through it."""
    for _ in range(16):  # a bound on the nesting, against a cycle of wrappers
        if type(t) is Tensor or not isinstance(t, Tensor):
            return False
        if getattr(type(t), "_refuses_as_strided", False):
            return True
        t = getattr(t, "elem", None)
    return False


def _positions(shape: tuple, stride: tuple, offset: int):
    import numpy as np

    pos = np.full((), offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, stride, strict=True)):
        axis = [1] * len(shape)
        axis[d] = n
        pos = pos + (np.arange(n, dtype=np.int64) * s).reshape(axis)
    return np.broadcast_to(pos, shape).reshape(-1)


def view_index(base_geometry: tuple, view_geometry: tuple, device) -> Tensor:
    """For each element of the view (row-major), the row-major index in the base of the element at the
    same storage position. The base's elements must not share positions."""
    import numpy as np

    from ember.core import dtypes as D
    from ember.core.tensor import from_array

    base = _positions(*base_geometry)
    view = _positions(*view_geometry)
    order = np.argsort(base, kind="stable")
    ordered = base[order]
    if len(np.unique(ordered)) != len(ordered):
        raise RuntimeError(
            "the gradient of an in-place op on a view cannot be taken with these gradients (tensor subclasses that "
            "refuse as_strided) when the base's elements overlap in memory"
        )
    found = np.searchsorted(ordered, view)
    found = np.minimum(found, len(ordered) - 1)
    if len(view) and not np.array_equal(ordered[found], view):
        raise RuntimeError("a view reads memory outside its base; its gradient cannot be located in the base")
    index = from_array(np.ascontiguousarray(order[found]), D.int64)
    return index if index.device == device and index.dtype is D.int64 else index.to(device=device, dtype=D.int64)


def copy_slices_by_index(grad: Tensor, base_geometry: tuple, view_geometry: tuple, fn: Node) -> tuple:
    """``CopySlices.apply`` out of place: the base's gradient with the view's elements replaced."""
    index = view_index(base_geometry, view_geometry, grad.device)
    flat = grad.reshape(-1)
    region = flat.index_select(0, index).reshape(view_geometry[0])
    fn_grads = fn.apply((region,))
    inside = fn_grads[0]
    if inside is None:
        inside = region.new_zeros(region.shape)
    result = flat.index_put((index,), inside.reshape(-1)).reshape(base_geometry[0])
    return (result, *fn_grads[1:])


def view_backward_by_index(grad: Tensor, base_geometry: tuple, view_geometry: tuple) -> Tensor:
    """``AsStridedBackward.apply`` out of place: the view's gradient summed into a gradient of its base."""
    index = view_index(base_geometry, view_geometry, grad.device)
    base_shape = tuple(base_geometry[0])
    numel = 1
    for n in base_shape:
        numel *= n
    zeros = grad.new_zeros((numel,))
    return zeros.index_add(0, index, grad.reshape(-1)).reshape(base_shape)
