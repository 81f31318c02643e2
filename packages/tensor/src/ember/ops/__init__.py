"""``ember.ops.<namespace>.<op>.<overload>``: every registered op, e.g. ``ember.ops.aten.add.Tensor``."""

import ember.core  # noqa: F401  (registers the ops)
from ember.core.dispatch import ops as _ops


def __getattr__(name: str):
    return getattr(_ops, name)
