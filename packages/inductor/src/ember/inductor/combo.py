"""Combo kernels: several fused groups, one call.

The scheduler puts independent loops over the same range into one loop nest; loops over different
ranges stay separate groups. Consecutive groups (no extern call between them) are compiled into one
combo kernel that runs each group's loop nest in turn, in schedule order, so dependencies between
them hold. One call from the wrapper instead of one per group: for an optimizer step over 100
parameters of a few shapes, a handful of calls instead of hundreds.

Each group keeps its own C function (``<name>_<k>``, made by ``codegen_cpp.group_kernel``); the
combo function gathers each one's pointers from its own arguments and passes each its slice of the
layout checks, so the per-group code generator is used as it is.
"""

from __future__ import annotations

from ember.inductor.codegen_cpp import KernelSpec
from ember.inductor.ir import Buffer


def combo_kernel(parts: list[KernelSpec], name: str, buffers: dict[str, Buffer]) -> KernelSpec:
    """One kernel ``name`` that runs ``parts`` in order."""
    outputs = list(dict.fromkeys(n for p in parts for n in p.outputs))
    inputs = list(dict.fromkeys(n for p in parts for n in p.args if n not in outputs))
    args = inputs + outputs
    slot = {n: i for i, n in enumerate(args)}
    lines = [f'extern "C" int {name}(void** args, const int64_t* meta) {{', "  int rc = 0;"]
    checked: list[str] = []
    meta_pos = 0
    for k, part in enumerate(parts):
        ptrs = ", ".join(f"args[{slot[n]}]" for n in part.args)
        lines.append(f"  void* p{k}[] = {{{ptrs}}};")
        call = f"{part.name}(p{k}, meta + {meta_pos})" if meta_pos else f"{part.name}(p{k}, meta)"
        # a part's layout check k+1 is the combo's check len(checked)+k+1
        lines.append(f"  if ((rc = {call}) != 0) return rc + {len(checked)};")
        checked += part.checked
        meta_pos += sum(2 * len(buffers[n].size) for n in part.checked)
    lines += ["  return 0;", "}"]
    source = "\n\n".join([p.source for p in parts] + ["\n".join(lines)])
    return KernelSpec(name, source, args, checked, outputs)


__all__ = ["combo_kernel"]
