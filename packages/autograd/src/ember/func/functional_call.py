"""``functional_call`` and ``stack_module_state``: running a module with parameters passed in.

``functional_call`` swaps the named attributes (dotted paths such as ``"layer.weight"``) of the module
for the given tensors for the duration of one call, then puts the originals back, exceptions or not.
Names the module does not have raise unless they are absent from it and ``strict`` is off. With
``tie_weights``, a tensor given for one of several names that share one parameter serves them all.
Both functions need only the module's ``named_parameters()``/``named_buffers()``, so they work on any
object shaped like a PyTorch module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.core.aten.shape.joining import _stack_function as stack_function


def _resolve(module, name: str):
    *path, leaf = name.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part)
    return owner, leaf


def _named_tensors(module) -> dict:
    named = {}
    for getter in ("named_parameters", "named_buffers"):
        fn = getattr(module, getter, None)
        if fn is not None:
            try:
                items = fn(remove_duplicate=False)
            except TypeError:
                items = fn()
            named.update(dict(items))
    return named


def functional_call(
    module,
    parameter_and_buffer_dicts,
    args: Any = None,
    kwargs: dict | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
):
    """``module(*args, **kwargs)`` with its parameters and buffers replaced by the given tensors."""
    if isinstance(parameter_and_buffer_dicts, dict):
        values = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        values = {}
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ValueError(f"Expected all elements of parameter_and_buffer_dicts to be dictionaries, got {d!r}")
            overlap = set(values) & set(d)
            if overlap:
                raise ValueError(
                    f"{sorted(overlap)} appeared in multiple dictionaries; behavior of functional call is ambiguous"
                )
            values.update(d)
    else:
        raise ValueError(
            f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
            f"{type(parameter_and_buffer_dicts)}"
        )
    existing = _named_tensors(module)
    if strict:
        missing = sorted(set(existing) - set(values))
        unexpected = sorted(set(values) - set(existing))
        if missing or unexpected:
            raise RuntimeError(
                f"Error(s) in reparametrizing for {type(module).__name__}: missing keys {missing}, unexpected keys "
                f"{unexpected}"
            )
    if tie_weights:
        by_identity: dict[int, list[str]] = {}
        for name, t in existing.items():
            by_identity.setdefault(id(t), []).append(name)
        for names in by_identity.values():
            given = [n for n in names if n in values]
            if given:
                first = values[given[0]]
                for n in given[1:]:
                    if values[n] is not first:
                        raise ValueError(f"functional_call got multiple values for keys {given}, which are tied")
                for n in names:
                    values.setdefault(n, first)
    swapped = []
    try:
        for name, value in values.items():
            owner, leaf = _resolve(module, name)
            swapped.append(_swap(owner, leaf, value))
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for table, leaf, old in reversed(swapped):
            if old is _ABSENT:
                table.pop(leaf, None)
            else:
                table[leaf] = old


_ABSENT = object()


def _swap(owner, leaf: str, value) -> tuple[dict, str, Any]:
    """Put ``value`` where ``owner.leaf`` lives; return what undoes it."""
    # A module keeps parameters and buffers in its own registries: swap them there, past __setattr__'s checks.
    for registry in ("_parameters", "_buffers"):
        table = owner.__dict__.get(registry)
        if isinstance(table, dict) and leaf in table:
            old = table[leaf]
            table[leaf] = value
            return table, leaf, old
    table = owner.__dict__
    old = table.get(leaf, _ABSENT)
    table[leaf] = value
    return table, leaf, old


def stack_module_state(models) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parameters and buffers of same-shaped models stacked along a new first dimension."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    first_type = type(models[0])
    if not all(type(m) is first_type for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stack(getter: str, detach: bool) -> dict:
        tables = [dict(getattr(m, getter)()) for m in models]
        out = {}
        for name in tables[0]:
            tensors = [t[name] for t in tables]
            stacked = stack_function([x.detach() for x in tensors])
            if detach and tensors[0].requires_grad:
                stacked.requires_grad_(True)
            out[name] = stacked
        return out

    return stack("named_parameters", True), stack("named_buffers", False)
