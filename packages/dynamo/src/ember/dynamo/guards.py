"""What a captured graph assumed about its frame: guards, checked before each reuse.

A compiled frame carries a list of ``Guard``s (and, under dynamic shapes, the ShapeEnv's guard
expressions). ``compile_guards`` turns them into one Python function per cache entry, generated as
source and exec'd once: each source expression (``L['x']``, ``L['self'].fc.weight``) is read once
into a local, tensors are checked on the ``Tensor``'s slots (``_shape``, ``_stride``) rather than
through ``size()``, and constants are closure cells, so that the check of an 8-tensor function is a
few microseconds. A source that cannot be read (a missing key, attribute or index) fails the check.

When the check fails, ``failure_reasons`` re-checks guard by guard, slowly, and says what changed
in the user's terms ("x.size(0) changed from 4 to 6"): the recompile log and the cache-limit warning
print it.
"""

from __future__ import annotations

import enum
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ember.dynamo.source import AttrSource, DictItemSource, GetItemSource, LocalSource, Source, TypeSource


class GuardKind(enum.Enum):
    TYPE_MATCH = "type"  # type(value) is guard.value
    ID_MATCH = "id"  # id(value) == guard.value (modules, functions, classes held by identity)
    EQUALS_MATCH = "equals"  # value == guard.value, for Python constants (and type(value) is type(guard.value))
    NONE_MATCH = "none"  # value is None (guard.value True) or is not None (False)
    TENSOR_MATCH = "tensor"  # guard.value: TensorSpec
    LENGTH_MATCH = "length"  # len(value) == guard.value (lists, tuples, dicts)
    DICT_KEYS = "dict_keys"  # list(value.keys()) == guard.value (a tuple of keys, in order)
    DICT_KEY_IDS = "dict_key_ids"  # the ids of value's keys, in order, == guard.value (keys held by identity)
    HASATTR = "hasattr"  # hasattr(base, name) is guard.value; source: AttrSource
    GRAD_MODE = "grad_mode"  # ember.is_grad_enabled() is guard.value; source None
    AUTOCAST = "autocast"  # the autocast state equals guard.value; source None
    DEFAULT_DTYPE = "default_dtype"  # ember.get_default_dtype() is guard.value; source None


@dataclass(frozen=True)
class TensorSpec:
    """What a graph assumed of one input tensor. A size or stride of None is dynamic (symbolic:
    its relations are shape guards, not part of the spec)."""

    type: type
    dtype: Any
    device: Any
    sizes: tuple[int | None, ...]
    strides: tuple[int | None, ...]
    requires_grad: bool


@dataclass(frozen=True)
class Guard:
    source: Source | None  # None for the global state (grad mode, autocast, default dtype)
    kind: GuardKind
    value: Any = None


# -- the global state guards read -------------------------------------------------------------------


def autocast_state() -> tuple:
    """The autocast state a graph assumed (the value of an ``AUTOCAST`` guard)."""
    from ember.amp import autocast_mode

    state = autocast_mode._state
    return (tuple(sorted(state.enabled.items())), tuple(sorted(state.dtype.items(), key=lambda kv: kv[0])))


def _autocast_thread_state():
    from ember.amp import autocast_mode

    return autocast_mode._state


def global_state_guards() -> list[Guard]:
    """Guards on the global state every graph assumes: grad mode, autocast, the default dtype."""
    return [
        Guard(None, GuardKind.GRAD_MODE, _grad_state().enabled),
        Guard(None, GuardKind.AUTOCAST, autocast_state()),
        Guard(None, GuardKind.DEFAULT_DTYPE, _promotion()._default_float),
    ]


def _grad_state():
    from ember.autograd import grad_mode

    return grad_mode.state


def _promotion():
    from ember.core import promotion

    return promotion


# -- names in the user's terms -----------------------------------------------------------------------

_LOCAL = re.compile(r"L\[(['\"])([A-Za-z_][A-Za-z0-9_]*)\1\]")
_SIZE = re.compile(r"\.size\(\)\[(\d+)\]")
_STRIDE = re.compile(r"\.stride\(\)\[(\d+)\]")


def user_name(source: Source | str) -> str:
    """``L['x'].size()[0]`` as a user reads it: ``x.size(0)``; globals keep ``G['name']``."""
    text = source if isinstance(source, str) else source.name()
    text = _LOCAL.sub(lambda m: m.group(2), text)
    text = _SIZE.sub(lambda m: f".size({m.group(1)})", text)
    return _STRIDE.sub(lambda m: f".stride({m.group(1)})", text)


def _slot_form(expr: str) -> str:
    # Shape guards read sizes through the Tensor's slots (checked to be a Tensor by its TENSOR_MATCH).
    expr = _SIZE.sub(lambda m: f"._shape[{m.group(1)}]", expr)
    expr = _STRIDE.sub(lambda m: f"._stride[{m.group(1)}]", expr)
    return expr.replace(".storage_offset()", "._offset")


def _short(value: Any) -> str:
    name = getattr(value, "name", None)
    if type(value).__name__ == "dtype" and isinstance(name, str):
        return name
    if isinstance(value, type):
        return value.__qualname__
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- compiling guards to one function ------------------------------------------------------------------


@dataclass
class _Codegen:
    """Builds the body of the check: statements, closure constants and the locals of read sources."""

    constants: dict[str, Any] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    read: dict[str, str] = field(default_factory=dict)  # source name -> local holding its value
    module_types: dict[str, type] = field(default_factory=dict)  # source name -> its guarded Module type
    dicts: dict[str, str] = field(default_factory=dict)  # local -> local holding its __dict__

    def const(self, value: Any) -> str:
        name = f"c{len(self.constants)}"
        self.constants[name] = value
        return name

    def expr(self, source: Source) -> str:
        """The expression for ``source``, reusing the local of any base already read."""
        key = source.name()
        if key in self.read:
            return self.read[key]
        if isinstance(source, AttrSource):
            fast = self._module_attribute(source)
            if fast is not None:
                return fast
            base = self.expr(source.base)
            member = source.member
            return f"{base}.{member}" if member.isidentifier() else f"getattr({base}, {member!r})"
        if isinstance(source, GetItemSource):
            index = source.index
            text = repr(index) if type(index) in (int, str) else self.const(index)
            return f"{self.expr(source.base)}[{text}]"
        if isinstance(source, TypeSource):
            return f"type({self.expr(source.base)})"
        if isinstance(source, DictItemSource):
            return f"{self.expr(source.base)}[{self.expr(source.key)}]"
        return key.replace("__import__('sys')", self.const(sys))  # L, G and other sources: their name

    def _module_attribute(self, source: AttrSource) -> str | None:
        # A submodule, parameter or buffer of a module whose type a guard fixes: read from the stores
        # Module.__getattr__ reads, in its order, without the AttributeError object.__getattribute__
        # raises first. (Were the type another, that type guard fails the check anyway.)
        cls = self.module_types.get(source.base.name())
        name = source.member
        if cls is None or any(name in klass.__dict__ for klass in cls.__mro__):
            return None
        base = self.local(source.base)
        d = self.dicts.get(base)
        if d is None:
            d = self.dicts[base] = f"d{len(self.dicts)}"
            self.lines.append(f"{d} = {base}.__dict__")
        n = repr(name)
        stores = " else ".join(f"{d}[{s!r}][{n}] if {n} in {d}[{s!r}]" for s in ("_parameters", "_buffers"))
        return f"({d}[{n}] if {n} in {d} else {stores} else {d}['_modules'][{n}])"

    def local(self, source: Source) -> str:
        key = source.name()
        if key not in self.read:
            text = self.expr(source)  # first: it may read the source's bases into locals of their own
            var = f"v{len(self.read)}"
            self.lines.append(f"{var} = {text}")
            self.read[key] = var
        return self.read[key]

    def check(self, condition: str) -> None:
        self.lines.append(f"if not ({condition}): return False")


def _tensor_conditions(var: str, spec: TensorSpec, g: _Codegen) -> list[str]:
    out = [f"type({var}) is {g.const(spec.type)}"]
    if all(s is not None for s in spec.sizes):
        out.append(f"{var}._shape == {tuple(spec.sizes)!r}")
    else:
        out.append(f"len({var}._shape) == {len(spec.sizes)}")
        out += [f"{var}._shape[{i}] == {s}" for i, s in enumerate(spec.sizes) if s is not None]
    if all(s is not None for s in spec.strides):
        out.append(f"{var}._stride == {tuple(spec.strides)!r}")
    else:
        out += [f"{var}._stride[{i}] == {s}" for i, s in enumerate(spec.strides) if s is not None]
    out.append(f"{var}.dtype is {g.const(spec.dtype)}")
    device = g.const(spec.device)
    out.append(f"({var}.device is {device} or {var}.device == {device})")
    out.append(f"{var}.requires_grad is {bool(spec.requires_grad)}")
    return out


def _condition(guard: Guard, g: _Codegen) -> str:
    kind, value = guard.kind, guard.value
    if kind is GuardKind.GRAD_MODE:
        return f"grad_state.enabled is {bool(value)}"
    if kind is GuardKind.DEFAULT_DTYPE:
        return f"promotion._default_float is {g.const(value)}"
    if kind is GuardKind.AUTOCAST:  # the thread's autocast switches and dtypes, compared as dicts
        enabled, dtypes = g.const(dict(value[0])), g.const(dict(value[1]))
        return f"amp.enabled == {enabled} and amp.dtype == {dtypes}"
    if guard.source is None:
        raise ValueError(f"a {kind.name} guard needs a source")
    if kind is GuardKind.HASATTR:
        if not isinstance(guard.source, AttrSource):
            raise ValueError("a HASATTR guard's source must be an AttrSource")
        return f"hasattr({g.expr(guard.source.base)}, {guard.source.member!r}) is {bool(value)}"
    var = g.local(guard.source)
    if kind is GuardKind.TENSOR_MATCH:
        return " and ".join(_tensor_conditions(var, value, g))
    if kind is GuardKind.TYPE_MATCH:
        return f"type({var}) is {g.const(value)}"
    if kind is GuardKind.ID_MATCH:
        return f"id({var}) == {int(value)}"
    if kind is GuardKind.EQUALS_MATCH:
        const = g.const(value)
        return f"type({var}) is {g.const(type(value))} and {var} == {const}"
    if kind is GuardKind.NONE_MATCH:
        return f"{var} is None" if value else f"{var} is not None"
    if kind is GuardKind.LENGTH_MATCH:
        return f"len({var}) == {int(value)}"
    if kind is GuardKind.DICT_KEYS:
        return f"len({var}) == {len(value)} and tuple({var}.keys()) == {g.const(tuple(value))}"
    if kind is GuardKind.DICT_KEY_IDS:
        return f"len({var}) == {len(value)} and tuple(map(id, {var}.keys())) == {g.const(tuple(value))}"
    raise ValueError(f"unknown guard kind {kind!r}")


def _module_types(guards: Sequence[Guard]) -> dict[str, type]:
    """Sources whose type a guard fixes to a Module subclass that looks attributes up as Module does."""
    from ember.nn import Module

    out = {}
    for guard in guards:
        cls = guard.value
        if (
            guard.kind is GuardKind.TYPE_MATCH
            and guard.source is not None
            and isinstance(cls, type)
            and issubclass(cls, Module)
            and cls.__getattr__ is Module.__getattr__
            and cls.__getattribute__ is object.__getattribute__
        ):
            out[guard.source.name()] = cls
    return out


def _dedupe(guards: Sequence[Guard]) -> list[Guard]:
    seen: set = set()
    out = []
    for guard in guards:
        try:
            key = (guard.source, guard.kind, guard.value)
            hash(key)
        except TypeError:
            key = (guard.source, guard.kind, id(guard.value))
        if key not in seen:
            seen.add(key)
            out.append(guard)
    return out


class CompiledGuards:
    """The guards of one cache entry, compiled: ``check(L)`` is the generated function.

    ``check`` is a plain function (what the frame hook calls); it carries this object as its
    ``guard_set`` attribute, for the recompile log.
    """

    def __init__(
        self,
        guards: Sequence[Guard],
        f_globals: dict[str, Any],
        shape_guards: Sequence[str] = (),
        backend: Any = None,
        current_callback: Callable[[], Any] | None = None,
    ) -> None:
        self.guards = _dedupe(guards)
        self.shape_guards = list(shape_guards)
        self.f_globals = f_globals
        # The entry serves only calls compiled for the same backend: ``current_callback()`` (the frame
        # hook's) is then a callback whose ``compiler`` is ``backend``, or False (run-only mode).
        self.backend = backend
        # What the entry says the frame's own arguments are (by identity or type): the cache limit
        # counts only the entries made for such arguments (a module's forward, per kind of module).
        self.identity = [
            (g.source.local_name, g.kind, g.value)
            for g in self.guards
            if g.kind in (GuardKind.ID_MATCH, GuardKind.TYPE_MATCH) and isinstance(g.source, LocalSource)
        ]
        g = _Codegen(module_types=_module_types(self.guards))
        if backend is not None and current_callback is not None:
            g.lines.append(f"cb = {g.const(current_callback)}()")
            g.check(f"cb is False or cb.compiler is {g.const(backend)}")
        for guard in self.guards:
            g.check(_condition(guard, g))
        names = sorted(g.read, key=len, reverse=True)
        for expr in self.shape_guards:
            text = _slot_form(expr)
            for name in names:  # the sources already read: their locals, not a second lookup
                text = re.sub(re.escape(name) + r"(?![\w\[])", g.read[name], text)
            g.check(text)
        self.source = _function_source(g)
        scope: dict[str, Any] = {}
        exec(compile(self.source, "<ember guards>", "exec"), scope)
        check = scope["make"](f_globals, _grad_state(), _promotion(), _autocast_thread_state(), *g.constants.values())
        check.guard_set = self
        self.check: Callable[[dict[str, Any]], bool] = check

    def __call__(self, f_locals: dict[str, Any]) -> bool:
        return self.check(f_locals)

    def made_for(self, f_locals: dict[str, Any]) -> bool:
        """Whether the frame's arguments are the objects (or of the types) this entry was made for."""
        missing = object()
        for name, kind, value in self.identity:
            now = f_locals.get(name, missing)
            if (id(now) != value) if kind is GuardKind.ID_MATCH else (type(now) is not value):
                return False
        return True

    # -- in the user's terms -----------------------------------------------------------------------

    def failure_reasons(self, f_locals: dict[str, Any], callback: Any = None) -> list[str]:
        """What no longer holds, one line each ("x.size(0) changed from 4 to 6"); ``callback``: the
        frame callback now asking, for the backend guard."""
        scope = {"L": f_locals, "G": self.f_globals}
        reasons: list[str] = []
        now = getattr(callback, "compiler", None)
        if self.backend is not None and now is not None and now is not self.backend:
            reasons.append(f"the backend changed from {_backend_name(self.backend)} to {_backend_name(now)}")
        for guard in self.guards:
            reasons += _guard_failures(guard, scope)
        for expr in self.shape_guards:
            try:
                ok = bool(eval(expr, {"math": __import__("math")}, scope))
            except Exception:
                ok = False
            if not ok:
                reasons.append(f"{user_name(expr)} no longer holds")
        return reasons

    def describe(self) -> str:
        """The guards one per line, as the ``guards`` log prints them."""
        lines = [f"BACKEND_MATCH: {_backend_name(self.backend)}"] if self.backend is not None else []
        lines += [_describe(guard) for guard in self.guards]
        lines += [f"SHAPE: {expr}" for expr in self.shape_guards]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"CompiledGuards({len(self.guards)} guards, {len(self.shape_guards)} shape guards)"


def _backend_name(backend: Any) -> str:
    name = getattr(backend, "__name__", None)
    return repr(name) if name else f"a {type(backend).__name__} at {id(backend):#x}"


def compile_guards(
    guards: Sequence[Guard],
    f_globals: dict[str, Any],
    shape_env: Any = None,
    shape_inputs: Sequence[tuple[Any, Any]] = (),
    backend: Any = None,
    current_callback: Callable[[], Any] | None = None,
) -> CompiledGuards:
    """One check function for ``guards`` plus the shape environment's guards on ``shape_inputs``."""
    shape_guards: list[str] = []
    if shape_env is not None and shape_inputs:
        values = [value for value, _ in shape_inputs]
        sources = [source.name() if isinstance(source, Source) else str(source) for _, source in shape_inputs]
        shape_guards = shape_env.produce_guards(values, sources)
    return CompiledGuards(guards, f_globals, shape_guards, backend, current_callback)


def _function_source(g: _Codegen) -> str:
    params = ", ".join(["G", "grad_state", "promotion", "amp", *g.constants])
    body = "\n".join(f"            {line}" for line in g.lines) or "            pass"
    return (
        f"def make({params}):\n"
        "    def check(L):\n"
        "        try:\n"
        f"{body}\n"
        "        except Exception:\n"
        "            return False\n"
        "        return True\n"
        "    return check\n"
    )


def _read(source: Source, scope: dict[str, Any]) -> tuple[bool, Any]:
    try:
        return True, eval(source.name(), {}, scope)
    except Exception:
        return False, None


def _guard_failures(guard: Guard, scope: dict[str, Any]) -> list[str]:
    kind, value = guard.kind, guard.value
    if kind is GuardKind.GRAD_MODE:
        now = _grad_state().enabled
        return [] if now is bool(value) else [f"grad mode changed (was {'on' if value else 'off'})"]
    if kind is GuardKind.DEFAULT_DTYPE:
        now = _promotion()._default_float
        return [] if now is value else [f"default dtype changed from {_short(value)} to {_short(now)}"]
    if kind is GuardKind.AUTOCAST:
        now = autocast_state()
        if now == value:
            return []
        (was_on, was_dtype), (is_on, is_dtype) = (map(dict, value), map(dict, now))
        out = [
            f"autocast on {d} changed from {'on' if was_on[d] else 'off'} to {'on' if is_on.get(d) else 'off'}"
            for d in was_on
            if bool(was_on[d]) != bool(is_on.get(d))
        ]
        out += [
            f"autocast dtype on {d} changed from {_short(was_dtype[d])} to {_short(is_dtype.get(d))}"
            for d in was_dtype
            if was_dtype[d] is not is_dtype.get(d)
        ]
        return out or ["autocast state changed"]
    if kind is GuardKind.HASATTR:
        ok, base = _read(guard.source.base, scope)
        if ok and hasattr(base, guard.source.member) is bool(value):
            return []
        verb = "lost" if value else "gained"
        return [f"{user_name(guard.source.base)} {verb} the attribute {guard.source.member!r}"]
    name = user_name(guard.source)
    ok, now = _read(guard.source, scope)
    if not ok:
        return [f"{name} is missing"]
    if kind is GuardKind.TENSOR_MATCH:
        return _tensor_failures(name, value, now)
    if kind is GuardKind.TYPE_MATCH:
        return [] if type(now) is value else [f"type({name}) changed from {_short(value)} to {_short(type(now))}"]
    if kind is GuardKind.ID_MATCH:
        return [] if id(now) == value else [f"{name} is a different object (id changed)"]
    if kind is GuardKind.EQUALS_MATCH:
        if type(now) is type(value) and now == value:
            return []
        return [f"{name} changed from {_short(value)} to {_short(now)}"]
    if kind is GuardKind.NONE_MATCH:
        if (now is None) is bool(value):
            return []
        return [f"{name} is {'no longer' if value else 'now'} None"]
    if kind is GuardKind.LENGTH_MATCH:
        try:
            n = len(now)
        except TypeError:
            return [f"{name} has no length (it is a {type(now).__name__})"]
        return [] if n == value else [f"len({name}) changed from {value} to {n}"]
    if kind is GuardKind.DICT_KEYS:
        try:
            keys = tuple(now.keys())
        except Exception:
            return [f"{name} is no longer a dict"]
        if keys == tuple(value):
            return []
        if all(type(k) in (int, str, float, bool) for k in keys):
            return [f"{name}.keys() changed from {list(value)} to {list(keys)}"]
        return [f"{name}.keys() changed from {list(value)} to {len(keys)} keys, not all constants"]
    if kind is GuardKind.DICT_KEY_IDS:
        try:
            ids = tuple(map(id, now.keys()))
        except Exception:
            return [f"{name} is no longer a dict"]
        if ids == tuple(value):
            return []
        return [f"{name} has other keys than the {len(value)} objects it was keyed by ({len(ids)} keys now)"]
    return [f"{name}: unknown guard {kind.name}"]


def _tensor_failures(name: str, spec: TensorSpec, now: Any) -> list[str]:
    if type(now) is not spec.type:
        return [f"type({name}) changed from {_short(spec.type)} to {_short(type(now))}"]
    sizes, strides = tuple(now._shape), tuple(now._stride)
    if len(sizes) != len(spec.sizes):
        return [f"{name}.dim() changed from {len(spec.sizes)} to {len(sizes)}"]
    out = []
    for i, (was, is_) in enumerate(zip(spec.sizes, sizes, strict=True)):
        if was is not None and was != is_:
            out.append(f"{name}.size({i}) changed from {was} to {is_}")
    if not out:
        for i, (was, is_) in enumerate(zip(spec.strides, strides, strict=True)):
            if was is not None and was != is_:
                out.append(f"{name}.stride({i}) changed from {was} to {is_}")
    if now.dtype is not spec.dtype:
        out.append(f"{name}.dtype changed from {_short(spec.dtype)} to {_short(now.dtype)}")
    if now.device != spec.device:
        out.append(f"{name}.device changed from {spec.device} to {now.device}")
    if bool(now.requires_grad) is not bool(spec.requires_grad):
        out.append(f"{name}.requires_grad changed from {spec.requires_grad} to {now.requires_grad}")
    return out


def _describe(guard: Guard) -> str:
    kind, value = guard.kind, guard.value
    if guard.source is None:
        if kind is GuardKind.GRAD_MODE:
            return f"GRAD_MODE: grad mode is {'on' if value else 'off'}"
        if kind is GuardKind.AUTOCAST:
            enabled, dtypes = dict(value[0]), dict(value[1])
            return "AUTOCAST: " + ", ".join(
                f"{d} {'on' if enabled[d] else 'off'} ({_short(dtypes.get(d))})" for d in enabled
            )
        return f"{kind.name}: {_short(value)}"
    name = guard.source.name()
    if kind is GuardKind.TENSOR_MATCH:
        sizes = [("?" if s is None else s) for s in value.sizes]
        strides = [("?" if s is None else s) for s in value.strides]
        return (
            f"TENSOR_MATCH: {name}: {value.type.__name__} {_short(value.dtype)} on {value.device}, "
            f"size={sizes}, stride={strides}, requires_grad={value.requires_grad}"
        )
    if kind is GuardKind.TYPE_MATCH:
        return f"TYPE_MATCH: type({name}) is {_short(value)}"
    if kind is GuardKind.ID_MATCH:
        return f"ID_MATCH: id({name}) == {value}"
    if kind is GuardKind.EQUALS_MATCH:
        return f"EQUALS_MATCH: {name} == {value!r}"
    if kind is GuardKind.NONE_MATCH:
        return f"NONE_MATCH: {name} is {'' if value else 'not '}None"
    if kind is GuardKind.LENGTH_MATCH:
        return f"LENGTH_MATCH: len({name}) == {value}"
    if kind is GuardKind.DICT_KEYS:
        return f"DICT_KEYS: list({name}.keys()) == {list(value)!r}"
    if kind is GuardKind.DICT_KEY_IDS:
        return f"DICT_KEY_IDS: {name} is keyed by the same {len(value)} objects, in order"
    if kind is GuardKind.HASATTR:
        return f"HASATTR: hasattr({guard.source.base.name()}, {guard.source.member!r}) is {bool(value)}"
    return f"{kind.name}: {name} {value!r}"
