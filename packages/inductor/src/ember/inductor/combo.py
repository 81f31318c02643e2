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

import math

from ember.inductor import config
from ember.inductor.codegen_cpp import KernelSpec
from ember.inductor.cpp_ops import storage_ctype
from ember.inductor.ir import Buffer


def local_buffers(run: list, later_reads: set[str], buffers: dict[str, Buffer]) -> set[str]:
    """The small buffers that the groups of ``run`` write and nothing after the run reads (a bias
    correction, a row's statistics): the combo kernel keeps them on its stack, and the wrapper allocates
    nothing for them."""
    out: set[str] = set()
    total = 0
    for group in run:
        for node in group.nodes:
            buf = node.buffer
            if buf.name != node.writes or buf.name in later_reads:
                continue
            numel = math.prod(buf.size)
            if type(numel) is not int:  # a symbolic size: the wrapper allocates it
                continue
            nbytes = numel * buf.dtype.itemsize
            if nbytes <= config.cpp.max_local_bytes and total + nbytes <= 4 * config.cpp.max_local_bytes:
                out.add(buf.name)
                total += nbytes
    return out


def combo_kernel(
    parts: list[KernelSpec], name: str, buffers: dict[str, Buffer], local: set[str] = frozenset()
) -> KernelSpec:
    """One kernel ``name`` that runs ``parts`` in order; ``local`` buffers live on its stack."""
    outputs = list(dict.fromkeys(n for p in parts for n in p.outputs if n not in local))
    inputs = list(dict.fromkeys(n for p in parts for n in p.args if n not in outputs and n not in local))
    args = inputs + outputs
    slot = {n: f"args[{i}]" for i, n in enumerate(args)}
    lines = [f'extern "C" int {name}(void** args, const int64_t* meta) {{', "  int rc = 0;"]
    for n in sorted(local):
        buf = buffers[n]
        lines.append(f"  alignas(64) {storage_ctype(buf.dtype)} local_{n}[{max(math.prod(buf.size), 1)}];")
        slot[n] = f"local_{n}"
    # meta: the size symbols' values (the same for every part), then each part's layout checks in turn
    symbols = parts[0].symbols
    nsym = len(symbols)
    checked: list[str] = []
    meta_pos = nsym
    for k, part in enumerate(parts):
        ptrs = ", ".join(f"(void*){slot[n]}" if n in local else slot[n] for n in part.args)
        lines.append(f"  void* p{k}[] = {{{ptrs}}};")
        n_meta = sum(2 * len(buffers[n].size) for n in part.checked)
        if nsym and n_meta:  # the part reads the symbols, then its own checks: a copy laid out so
            lines.append(f"  int64_t m{k}[{nsym + n_meta}];")
            lines.append(f"  std::memcpy(m{k}, meta, {8 * nsym});")
            lines.append(f"  std::memcpy(m{k} + {nsym}, meta + {meta_pos}, {8 * n_meta});")
            call = f"{part.name}(p{k}, m{k})"
        elif nsym or not meta_pos:
            call = f"{part.name}(p{k}, meta)"
        else:
            call = f"{part.name}(p{k}, meta + {meta_pos})"
        # a part's layout check j+1 is the combo's check len(checked)+j+1
        # a negative code is an index error (indirect.py), passed on as it is
        lines.append(f"  if ((rc = {call}) != 0) return rc < 0 ? rc : rc + {len(checked)};")
        checked += part.checked
        meta_pos += n_meta
    lines += ["  return 0;", "}"]
    source = "\n\n".join([p.source for p in parts] + ["\n".join(lines)])
    return KernelSpec(name, source, args, checked, outputs, symbols)


__all__ = ["combo_kernel", "local_buffers"]
