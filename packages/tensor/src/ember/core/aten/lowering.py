"""Decompositions into core ops, registered next to their ops.

``@lowered(op)`` registers ``fn`` as ``op``'s decomposition and takes ``op`` out of the core set: a
pass lowering a graph (``ember._decomp.core_aten_decompositions``) replaces the op by ``fn``'s ops,
while eager calls keep the op's kernel. A decomposition is a pure function of other ops: it reads no
tensor data and uses sizes only as (possibly symbolic) integers.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.core.dispatch import OpOverload


def lowered(
    *targets: OpOverload, check: Callable[[tuple, dict], object] | None = None
) -> Callable[[Callable], Callable]:
    """Register the decorated function as the decomposition of each of ``targets``.

    ``check(args, kwargs)``, when given, runs first: the op's own argument checks (a pointwise op's
    ``PointwiseOps.check``), so that the decomposition refuses the dtypes the kernel refuses.
    """

    def register(fn: Callable) -> Callable:
        decomposition = fn
        if check is not None:

            def decomposition(*args, **kwargs):
                check(args, kwargs)
                return fn(*args, **kwargs)

            decomposition.__name__ = fn.__name__
            decomposition.__doc__ = fn.__doc__
        for op in targets:
            op.tags = op.tags - {"core"}
            op.register_decomposition(decomposition)
        return fn

    return register
