"""The view ops' non-aliasing forms (``view_copy``, ``transpose_copy``, ...) and the scatters that
invert views (``slice_scatter``, ``select_scatter``, ``diagonal_scatter``, ``as_strided_scatter``).

Functionalization with ``remove="mutations_and_views"`` replaces each view by its ``*_copy`` form,
and writes a mutated view back into its base with the scatter that inverts the view. A ``*_copy``
op is its view op followed by a contiguous copy (PyTorch's outputs are contiguous); a scatter is a
copy of ``self`` (keeping its strides) whose region the view selects is overwritten by ``src``. Both
are made here from the view ops' own kernels (a scatter keeps ``self``'s strides, as PyTorch's do), so they hold for every view the core defines.
"""

from __future__ import annotations

from ember.core.api import method, public
from ember.core.aten.shape import complex_views as _complex_views  # noqa: F401  (view_as_real, view_as_complex)
from ember.core.aten.shape import views as _views  # noqa: F401  (defines the view ops)
from ember.core.aten.shape.copying import clone, clone_preserving_strides, copy_
from ember.core.dispatch import OpOverload, define, ops
from ember.core.tensor import Tensor

aten = ops.aten

# The view op, and the schema of its copy (PyTorch's names and signatures).
COPIES: dict[str, str] = {
    "view.default": "view_copy(Tensor self, SymInt[] size) -> Tensor",
    "view.dtype": "view_copy.dtype(Tensor self, ScalarType dtype) -> Tensor",
    "as_strided.default": (
        "as_strided_copy(Tensor self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor"
    ),
    "alias.default": "alias_copy(Tensor self) -> Tensor",
    "detach.default": "detach_copy(Tensor self) -> Tensor",
    "permute.default": "permute_copy(Tensor self, int[] dims) -> Tensor",
    "transpose.int": "transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor",
    "t.default": "t_copy(Tensor self) -> Tensor",
    "expand.default": "expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor",
    "squeeze.default": "squeeze_copy(Tensor self) -> Tensor",
    "squeeze.dims": "squeeze_copy.dims(Tensor self, int[] dim) -> Tensor",
    "squeeze.dim": "squeeze_copy.dim(Tensor self, int dim) -> Tensor",
    "unsqueeze.default": "unsqueeze_copy(Tensor self, int dim) -> Tensor",
    "select.int": "select_copy.int(Tensor self, int dim, SymInt index) -> Tensor",
    "slice.Tensor": (
        "slice_copy.Tensor(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor"
    ),
    "unfold.default": "unfold_copy(Tensor self, int dimension, int size, int step) -> Tensor",
    "diagonal.default": "diagonal_copy(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor",
    "unbind.int": "unbind_copy.int(Tensor self, int dim=0) -> Tensor[]",
    "split.Tensor": "split_copy.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]",
    "split_with_sizes.default": "split_with_sizes_copy(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]",
    "view_as_real.default": "view_as_real_copy(Tensor self) -> Tensor",
    "view_as_complex.default": "view_as_complex_copy(Tensor self) -> Tensor",
}


def _view(name: str) -> OpOverload:
    packet, overload = name.split(".")
    return getattr(getattr(aten, packet), overload)


def _contiguous(value, kernel):
    if isinstance(value, list | tuple):
        return [kernel(v, memory_format="contiguous_format") for v in value]
    return kernel(value, memory_format="contiguous_format")


def _define_copy(view: OpOverload, schema: str) -> OpOverload:
    # Not core, as PyTorch's are not: each decomposes into its view and a clone.
    op = define(schema)
    geometry = view.meta  # a view's one kernel serves every device: it only computes metadata
    # view_copy holds for every layout (its result is a copy): the view is taken of a contiguous copy.
    first = _contiguous if view is aten.view.default else (lambda t, kernel: t)

    @op.register_meta
    def meta(self, *args, **kwargs):
        return _contiguous(geometry(first(self, clone.meta), *args, **kwargs), clone.meta)

    @op.register_kernel("cpu")
    def kernel(self, *args, **kwargs):
        cpu = clone.kernel("cpu")
        return _contiguous(geometry(first(self, cpu), *args, **kwargs), cpu)

    @op.register_decomposition
    def decomposition(self, *args, **kwargs):
        return _contiguous(view(first(self, clone), *args, **kwargs), clone)

    view_copy_of[op] = view
    return op


# The copy op -> its view op, and the view op -> its copy op.
view_copy_of: dict[OpOverload, OpOverload] = {}
copy_of_view: dict[OpOverload, OpOverload] = {_view(name): _define_copy(_view(name), s) for name, s in COPIES.items()}


# -- the scatters -----------------------------------------------------------------------------------


def _define_scatter(schema: str, view: OpOverload, what: str) -> OpOverload:
    op = define(schema, ("core",))
    geometry = view.meta

    def check(self: Tensor, src: Tensor, region: Tensor) -> None:
        if tuple(region.shape) != tuple(src.shape):
            raise RuntimeError(
                f"{op.name}: expected src to have a size equal to the {what} of self. "
                f"src size = {list(src.shape)}, {what} size = {list(region.shape)}"
            )

    @op.register_meta
    def meta(self, src, *args, **kwargs):
        out = clone_preserving_strides(self)
        check(self, src, geometry(out, *args, **kwargs))
        return out

    @op.register_kernel("cpu")
    def kernel(self, src, *args, **kwargs):
        out = clone_preserving_strides(self)
        region = geometry(out, *args, **kwargs)
        check(self, src, region)
        copy_.kernel("cpu")(region, src)
        return out

    @op.register_decomposition
    def decomposition(self, src, *args, **kwargs):
        # self's very strides, as the kernel's (as_strided's geometry is read in them); dense if self overlaps.
        if any(s == 0 and n > 1 for n, s in zip(self.shape, self.stride(), strict=True)):
            out = clone(self)
        else:
            out = aten.empty_strided.default(
                list(self.shape), list(self.stride()), dtype=self.dtype, device=self.device
            )
            out.copy_(self)
        region = view(out, *args, **kwargs)
        check(self, src, region)
        region.copy_(src)
        return out

    return op


slice_scatter = _define_scatter(
    "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor",
    aten.slice.Tensor,
    "slice",
)
select_scatter = _define_scatter(
    "select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor", aten.select.int, "selected slice"
)
diagonal_scatter = _define_scatter(
    "diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor",
    aten.diagonal.default,
    "diagonal",
)
as_strided_scatter = _define_scatter(
    "as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor",
    aten.as_strided.default,
    "strided view",
)


def _public(op: OpOverload, name: str):
    def function(input, *args, **kwargs):
        return op(input, *args, **kwargs)

    function.__name__ = function.__qualname__ = name
    return function


# ``ember.transpose_copy(x, 0, 1)``, ``ember.slice_scatter(x, src, ...)``, ``x.slice_scatter(src, ...)``.
for _op in (*copy_of_view.values(), slice_scatter, select_scatter, diagonal_scatter, as_strided_scatter):
    if _op.overload in ("default", "Tensor", "int"):
        public(_op.name)(_public(_op, _op.name))
        if _op.name.endswith("_scatter"):
            method(_op.name)(_public(_op, _op.name))
