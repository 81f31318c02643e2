"""What the autograd package knows of an op, for ``ember.library.describe``: its derivative, its
forward-mode rule and its batching rule."""

from __future__ import annotations

from ember.autograd import _forward_rules, registry
from ember.core.dispatch import OpOverload
from ember.library.describe import where


def describe(op: OpOverload) -> list[tuple[str, str]]:
    entry = registry.lookup(op)
    if entry is not None:
        owner = "" if entry.op is op else f" (of {entry.op})"
        derivative = where(entry.formula) + owner
        forward = _forward_rule(op, entry)
    elif registry.is_nondifferentiable(op):
        derivative, forward = "none: its outputs carry no gradient", "none"
    elif op.derivative_kind == "decomposition":
        derivative, forward = "through its decomposition's parts", "through its decomposition's parts"
    elif op.autograd is not None:
        derivative, forward = where(op.autograd[0]) + " (register_autograd)", "(none)"
    elif op.decomposition is not None:
        derivative, forward = "through its decomposition's parts", "through its decomposition's parts"
    else:
        derivative, forward = "(none)", _forward_rule(op, None)
    return [("derivative", derivative), ("forward rule", forward), ("batching rule", _batching_rule(op))]


def _forward_rule(op: OpOverload, entry) -> str:
    rule = _forward_rules.RULES.get(op) or _forward_rules.INPLACE_RULES.get(op)
    if rule is not None:
        return where(rule)
    if entry is not None and entry.jvp is not None:
        return f"jvp={entry.jvp!r}" if isinstance(entry.jvp, str) else where(entry.jvp)
    return "transposed from the derivative" if entry is not None else "(none)"


def _batching_rule(op: OpOverload) -> str:
    from ember.func._vmap.table import RULES

    rule = RULES.get(op)
    if rule is not None:
        return where(rule)
    return "through its decomposition" if op.decomposition is not None else "(none)"
