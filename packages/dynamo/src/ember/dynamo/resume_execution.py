"""Resume functions: the rest of a frame after a graph break, as a new code object.

The resume function is the original code with a short prologue: it pushes the stack the break left
(its arguments ``___stack0...``, and NULLs where the stack had them), binds the frame's live locals
(also arguments, under their own names), and jumps to the instruction after the break. It keeps the
original's free variables, so it runs with the original closure, and it is compiled on its own when
it runs under the frame hook.
"""

from __future__ import annotations

import inspect
import types

from bytecode import Bytecode, Instr, Label

_cache: dict[tuple, types.CodeType] = {}


def resume_code(
    code: types.CodeType, target_position: int, stack_nulls: tuple[bool, ...], live_locals: tuple[str, ...], lineno: int
) -> types.CodeType:
    """The code of the resume function that continues ``code`` at the instruction at ``target_position``
    (an index into ``Bytecode.from_code(code)``)."""
    key = (code, target_position, stack_nulls, live_locals)
    cached = _cache.get(key)
    if cached is not None:
        return cached
    bc = Bytecode.from_code(code)
    items = list(bc)
    target = Label()
    items.insert(target_position, target)
    resume_at = next(i for i, it in enumerate(items) if isinstance(it, Instr) and it.name == "RESUME")
    stack_args = [f"___stack{i}" for i, null in enumerate(stack_nulls) if not null]
    prologue = []
    k = 0
    for null in stack_nulls:
        if null:
            prologue.append(Instr("PUSH_NULL"))
        else:
            prologue.append(Instr("LOAD_FAST", stack_args[k]))
            k += 1
    prologue.append(Instr("JUMP_FORWARD", target))
    items[resume_at + 1 : resume_at + 1] = prologue
    new = Bytecode(items)
    new._copy_attr_from(bc)
    new.argnames = [*stack_args, *live_locals]
    new.argcount = len(new.argnames)
    new.posonlyargcount = 0
    new.kwonlyargcount = 0
    new.flags = bc.flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    new.name = f"__resume_in_{code.co_name}_at_{lineno}"
    new.qualname = new.name
    out = new.to_code()
    if len(_cache) > 1024:
        _cache.clear()
    _cache[key] = out
    return out


def is_resume_code(code: types.CodeType) -> bool:
    return code.co_name.startswith("__resume_in_")
