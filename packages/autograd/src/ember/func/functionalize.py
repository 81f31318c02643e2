"""``ember.func.functionalize``: the entry point; the work is done by the fx package's
functionalization (``ember._subclasses.functional_tensor``), which registers itself with
``ember.autograd._providers`` when ``ember.fx`` is imported (``import ember`` registers a provider that
imports it on first use)."""

from __future__ import annotations

from collections.abc import Callable

from ember.autograd._providers import functionalize_implementation


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """``func`` with its in-place ops (and, with ``remove="mutations_and_views"``, its views) replaced by
    functional ops; mutations of its inputs are applied to them at the end (``torch.func.functionalize``).

    Example::

        def f(x):
            y = x.view(-1)
            y.add_(1)
            return x

        make_fx(functionalize(f))(ember.zeros(2, 2))  # view, add, view, ..., copy_ onto x
    """
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}."
            " Valid options are:\n"
            "     remove='mutations': all inplace and out= operators will be removed from the program, and replaced"
            " with their out-of-place equivalents.\n"
            "     remove='mutations_and_views': In addition to the above, all aliasing operators {view} will be"
            " replaced with their non-aliasing counterparts, {view}_copy.\n"
        )
    implementation = functionalize_implementation()
    if implementation is None:
        raise RuntimeError(
            "ember.func.functionalize needs functionalization from the ember-fx package: "
            "install it and import ember.fx (import ember does)"
        )
    return implementation(func, remove=remove)
