"""Structured inputs of a symbolic trace: ``concrete_args`` with :data:`~ember.fx.PH` inside containers.

``symbolic_trace(f, concrete_args={"x": {"a": PH, "b": PH}})`` gives ``f`` one placeholder per
``PH`` and a graph whose generated ``forward(self, x)`` flattens ``x`` by the recorded spec into
those placeholders (and rebuilds a structured return value), as PyTorch's ``_PyTreeCodeGen`` does.

The trees are ``ember.utils._pytree``'s; ``tree_flatten_spec`` reads a caller's tree by a recorded
spec, a dict by the spec's keys (``torch.fx._pytree``'s function).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ember.fx._codegen import CodeGen
from ember.fx.node import Argument
from ember.utils._pytree import TreeSpec, _NamedTuple, tree_flatten, tree_map, tree_unflatten

__all__ = ["TreeSpec", "tree_flatten", "tree_flatten_spec", "tree_map", "tree_unflatten"]


def tree_flatten_spec(tree: Any, spec: TreeSpec) -> list[Any]:
    """The leaves of ``tree`` taken in the order of ``spec``: a dict's by the spec's keys, whatever
    order the caller's dict has them in."""
    if spec.is_leaf():
        return [tree]
    if isinstance(spec.context, list) and isinstance(tree, dict):
        kids = [tree[k] for k in spec.context]
    else:
        kids = spec.flatten_up_to(tree) if spec.type not in (tuple, list, _NamedTuple) else list(tree)
        if spec.type not in (tuple, list, _NamedTuple):
            return kids
        if len(kids) != spec.num_children:
            raise RuntimeError(f"expected an input of {spec.num_children} elements, got {len(kids)}")
    out: list[Any] = []
    for kid, kid_spec in zip(kids, spec.children_specs, strict=True):
        out.extend(tree_flatten_spec(kid, kid_spec))
    return out


def flatten_inputs(module: Any, inputs: list[Any]) -> list[Any]:
    """What a generated ``forward`` calls first: its inputs flattened by its graph's input spec.

    The spec is read from ``module.graph``, so that the generated code names only importable
    functions and a GraphModule pickles and copies with its graph."""
    return tree_flatten_spec(inputs, module.graph._codegen.pytree_info.in_spec)


def unflatten_output(module: Any, leaves: list[Any]) -> Any:
    """What a generated ``forward`` returns: its flat outputs rebuilt by its graph's output spec."""
    return tree_unflatten(list(leaves), module.graph._codegen.pytree_info.out_spec)


class _PyTreeInfo(NamedTuple):
    orig_args: list[str]
    in_spec: TreeSpec
    out_spec: TreeSpec | None


# How generated code names this module: through the `ember` global every graph's code has.
_HERE = __name__


class _PyTreeCodeGen(CodeGen):
    """Generated code that takes the original structured arguments and flattens them by ``in_spec``."""

    def __init__(self, pytree_info: _PyTreeInfo) -> None:
        super().__init__()
        self.pytree_info = pytree_info

    def process_inputs(self, *inputs: Any) -> Any:
        return tree_flatten(list(inputs))[0]

    def process_outputs(self, out: Any) -> Any:
        if self.pytree_info.out_spec is None:
            return out
        if not isinstance(out, (list, tuple)):
            out = [out]
        return tree_unflatten(list(out), self.pytree_info.out_spec)

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str) -> str:
        fn_args = list(self.pytree_info.orig_args)
        has_self = bool(fn_args) and fn_args[0] == "self"
        if has_self:
            fn_args = fn_args[1:]
        definition = super().gen_fn_def(list(fn_args), maybe_return_annotation)
        if free_vars and free_vars[0] == "self":
            free_vars = free_vars[1:]
        if free_vars:
            # The spec covers `self` too when the traced function was a module's forward.
            flat_in = f"[self, {', '.join(fn_args)}]" if has_self else f"[{', '.join(fn_args)}]"
            skip = "_, " if has_self else ""
            definition += f"\n    {skip}{', '.join(free_vars)}, = {_HERE}.flatten_inputs(self, {flat_in})"
        return definition

    def generate_output(self, output_args: Argument, repr_fn: Callable[[object], str] = repr) -> str:
        if self.pytree_info.out_spec is None:
            return super().generate_output(output_args, repr_fn)
        return f"return {_HERE}.unflatten_output(self, {repr_fn(output_args)})"


def flatten_root_args(
    tracer: Any, root_fn: Callable[..., Any], args: list[Any], orig_args: list[str]
) -> tuple[Callable[..., Any], list[Any]]:
    """With any structured argument, a function of the flat leaves that records the output's spec
    and sets the graph's codegen to flatten callers' inputs; otherwise ``(root_fn, args)``."""
    flat_args, in_spec = tree_flatten(tuple(args))
    if all(child.is_leaf() for child in in_spec.children_specs):
        return root_fn, args
    tracer.graph._codegen = _PyTreeCodeGen(_PyTreeInfo(orig_args, in_spec, None))

    # Unannotated: the graph takes its return annotation from the function it traces.
    def flatten_fn(*flat):
        tree_out = root_fn(*tree_unflatten(list(flat), in_spec))
        out_args, out_spec = tree_flatten(tree_out)
        codegen = tracer.graph._codegen
        codegen.pytree_info = codegen.pytree_info._replace(out_spec=out_spec)
        return out_args

    return flatten_fn, flat_args
