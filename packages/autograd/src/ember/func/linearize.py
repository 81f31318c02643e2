"""``linearize(func, *primals)``: ``func``'s output at ``primals`` and a function giving its JVP there.

PyTorch traces the forward-mode computation once into a graph and folds its constants; here the
returned function runs ``func`` under forward-mode AD at each call (``jvp``), which gives the same
values without a tracer below this package. The tangent checks are PyTorch's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.func._tree import flatten
from ember.func.transforms import jvp

__all__ = ["linearize"]


def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is the JVP of ``func`` at ``primals``."""
    output = func(*primals)
    flat_primals, primals_spec = flatten(primals)

    def jvp_fn(*tangents: Any) -> Any:
        flat_tangents, tangents_spec = flatten(tangents)
        if tangents_spec != primals_spec:
            raise RuntimeError(
                f"Expected the tangents {tangents_spec} to have the same argspec as the primals {primals_spec}"
            )
        for index, (primal, tangent) in enumerate(zip(flat_primals, flat_tangents, strict=True)):
            for what in ("shape", "device", "dtype"):
                theirs, ours = getattr(tangent, what), getattr(primal, what)
                if theirs != ours:
                    raise RuntimeError(
                        f"tangent:{index} with {what} {theirs} in flattened pytree doesn't match the "
                        f"{what} {ours} of the corresponding primal."
                    )
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn
