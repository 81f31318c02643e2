"""Functional forms of the ops that exist only in place: ``copy``, ``fill.Scalar``, ``zero``, the
random fills (``uniform``, ``normal_functional``, ...), ``bernoulli.Tensor``, ``embedding_renorm``.

Functionalization replaces each in-place op by its functional form, so every in-place op needs
one. Each is the in-place op applied to a copy of ``self`` (a clone; ``copy`` keeps ``self``'s very
strides, as PyTorch's does): its meta function is the clone's and the in-place
op's checks, its CPU kernel the two kernels one after the other, and its decomposition the same
two ops through the dispatcher, for devices with no kernel of their own.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.core.aten.nn import embedding as _embedding
from ember.core.aten.random import random_fill as _random_fill  # noqa: F401  (defines the in-place fills)
from ember.core.aten.shape.copying import clone, clone_preserving_strides
from ember.core.dispatch import OpOverload, define, ops

aten = ops.aten


def _variant(inplace: OpOverload, schema: str, tags: tuple[str, ...] = (), strided: bool = False) -> OpOverload:
    op = define(schema, tags)
    if op.inplace is None:
        # A name that differs from the in-place one (normal_functional): link the forms by hand.
        op._forms = inplace._forms
        op._forms.setdefault("functional", op)
    if inplace.functional is not op:
        raise RuntimeError(f"{op} is not linked as the functional form of {inplace}")
    _attach(op, inplace, clone_preserving_strides if strided else _clone_kernels())
    return op


def _clone_kernels():
    def copy(self):
        return (clone.meta if self.device.type == "meta" else clone.kernel("cpu"))(self)

    return copy


def _attach(op: OpOverload, inplace: OpOverload, copy: Callable) -> None:
    def meta(self, *args, **kwargs):
        out = copy(self)
        meta_of_inplace = inplace.meta
        if meta_of_inplace is not None:
            meta_of_inplace(out, *args, **kwargs)
        return out

    op.register_meta(meta)
    cpu = inplace.kernel("cpu")
    if cpu is not None:
        op.register_kernel("cpu")(_chain(copy, cpu))

    @op.register_decomposition
    def decomposition(self, *args, **kwargs):
        out = clone(self)
        inplace(out, *args, **kwargs)
        return out


def _chain(clone_kernel: Callable, inplace_kernel: Callable) -> Callable:
    def kernel(self, *args, **kwargs):
        out = clone_kernel(self)
        inplace_kernel(out, *args, **kwargs)
        return out

    return kernel


_GEN = "Generator? generator=None"

copy = _variant(
    aten.copy_.default, "copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor", ("core",), strided=True
)
fill = _variant(aten.fill_.Scalar, "fill.Scalar(Tensor self, Scalar value) -> Tensor", ("core",))
zero = _variant(aten.zero_.default, "zero(Tensor self) -> Tensor")
uniform = _variant(
    aten.uniform_.default, f"uniform(Tensor self, float from=0, float to=1, *, {_GEN}) -> Tensor", ("random",)
)
normal_functional = _variant(
    aten.normal_.default,
    f"normal_functional(Tensor self, float mean=0, float std=1, *, {_GEN}) -> Tensor",
    ("random",),
)
exponential = _variant(
    aten.exponential_.default, f"exponential(Tensor self, float lambd=1, *, {_GEN}) -> Tensor", ("random",)
)
random = _variant(aten.random_.default, f"random(Tensor self, *, {_GEN}) -> Tensor", ("random",))
random_to = _variant(aten.random_.to, f"random.to(Tensor self, int to, *, {_GEN}) -> Tensor", ("random",))
random_from = _variant(
    getattr(aten.random_, "from"), f"random.from(Tensor self, int from, int? to, *, {_GEN}) -> Tensor", ("random",)
)
bernoulli_tensor = _variant(
    aten.bernoulli_.Tensor, f"bernoulli.Tensor(Tensor self, Tensor p, *, {_GEN}) -> Tensor", ("random",)
)
embedding_renorm = _variant(
    _embedding.embedding_renorm_op,
    "embedding_renorm(Tensor self, Tensor indices, float max_norm, float norm_type) -> Tensor",
)


@copy.register_decomposition
def _copy_decomposition(self, src, non_blocking: bool = False):
    # Functional all the way (no in-place op on a clone of self): vmap runs it where self is not
    # batched and src is, as it runs the op it stands for.
    value = aten._to_copy.default(src, dtype=self.dtype, device=self.device)
    return clone(aten.expand.default(value, list(self.shape)))
