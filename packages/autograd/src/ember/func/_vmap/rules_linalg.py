"""Linear algebra (``linalg_*`` ops): their leading dims are batch dims already.

Every ``linalg`` op treats the dims before its matrix (or vector) dims as a batch, so the vmap batch
at dim 0 is one more of them; ``dim`` arguments, where an op has them, are shifted as for
reductions. Registered for every such op without a rule of its own, so that new ones batch as they
are added.
"""

from __future__ import annotations

from ember.core.dispatch import all_ops
from ember.func._vmap.rules_shape import dims_rule, same
from ember.func._vmap.table import RULES, register

_DIM_NAMES = ("dim", "dims")


def _linalg_ops():
    return [
        op
        for op in all_ops()
        if op.namespace == "aten"
        and not op.schema.is_out
        and op not in RULES
        and (op.name.startswith("linalg_") or op.name.startswith("_linalg_"))
    ]


def register_all() -> None:
    """Called once every other rule file is loaded: it takes the linalg ops that none of them took."""
    for op in _linalg_ops():
        names = [a.name for a in op.schema.arguments if a.name in _DIM_NAMES]
        register(dims_rule(*names) if names else same, op)
