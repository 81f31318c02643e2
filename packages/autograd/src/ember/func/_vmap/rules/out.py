"""``out=`` overloads: refused inside vmap with a clear error.

An ``out=`` tensor is one buffer the caller chose; writing every lane into it would need it batched
exactly like the result, which callers inside a mapped function rarely arrange. Use the functional
form and assign the result instead.
"""

from __future__ import annotations

from ember.core.dispatch import all_ops
from ember.func._vmap.table import register


def _out(call):
    raise RuntimeError(
        f"vmap: {call.op.namespace}::{call.op.schema.qualified} writes into out=, which is not supported inside vmap; "
        "call the op without out= and use its result"
    )


register(_out, *[op for op in all_ops() if op.namespace == "aten" and op.schema.is_out])
