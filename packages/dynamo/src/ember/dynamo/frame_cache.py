"""The frame hook's callback: which frames to compile, their cache entries, and recompiles.

With a callback set, the frame-evaluation hook tries each frame's cache entries (their guard
checks, in order) and calls ``FrameCallback`` only when none passes. The callback then decides:

- *skip*: code of Ember's own packages (but ``ember.nn`` and ``ember.optim``, whose modules and
  optimizers users compile), of the standard library, of pytest, torch and other libraries, and of
  functions ``disable``d without recursion, always runs as it is (the hook skips it at C speed);
- *give up*: past ``config.cache_size_limit`` entries the frame runs eagerly, with one warning per
  function naming it, its file and line, and the guards that failed;
- *compile*: otherwise ``convert_frame.compile_frame`` captures the frame, its guards are compiled
  to one check function, and the new entry runs now. A compile that follows failed guards is logged
  under ``recompiles`` with what changed, in the user's terms.
"""

from __future__ import annotations

import dis
import functools
import importlib.util
import os
import sys
import sysconfig
import time
import warnings
import weakref
from types import CodeType
from typing import Any

from ember.dynamo import config, convert_frame, decorators, exc, stance
from ember.dynamo._logging import (
    bytecode_log,
    graph_breaks_log,
    graph_code_log,
    graph_log,
    guards_log,
    log,
    recompiles_log,
)
from ember.dynamo.automatic_dynamic import frame_state_for
from ember.dynamo.exc import Unsupported
from ember.dynamo.guards import CompiledGuards, compile_guards, global_state_guards
from ember.logs import trace_event

# -- skip rules --------------------------------------------------------------------------------------

# Libraries whose frames are never compiled (found without importing them).
_SKIPPED_LIBRARIES = (
    "_pytest",
    "pytest",
    "pluggy",
    "torch",
    "numpy",
    "sympy",
    "bytecode",
    "hypothesis",
    "ml_dtypes",
    "structlog",
    "typer",
    "rich",
    "typing_extensions",
)
# Parts of Ember whose code is user-level: modules' forwards, functional ops, optimizers.
_COMPILED_EMBER_PARTS = ("nn", "optim")

_skipped_codes: weakref.WeakSet[CodeType] = weakref.WeakSet()  # found not worth compiling; reset() forgets
_disabled_codes: weakref.WeakSet[CodeType] = weakref.WeakSet()  # disable()d by the user; kept
_skip_dirs: tuple[str, ...] | None = None
_keep_dirs: tuple[str, ...] = ()


def _directories() -> tuple[tuple[str, ...], tuple[str, ...]]:
    skip: list[str] = []
    keep: list[str] = []
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            skip.append(path)
    for name in _SKIPPED_LIBRARIES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            skip.extend(spec.submodule_search_locations)
        elif spec is not None and spec.origin:
            skip.append(spec.origin)
    # The ember namespace's folders, one per installed package (the parent of this module: loaded).
    for root in list(sys.modules["ember"].__path__):
        for part in _COMPILED_EMBER_PARTS:
            if os.path.isdir(os.path.join(root, part)):
                keep.append(os.path.join(root, part))
        skip.append(root)
    norm = lambda paths: tuple(os.path.join(os.path.realpath(p), "") for p in paths)  # noqa: E731
    return norm(skip), norm(keep)


def _is_skipped_file(filename: str) -> bool:
    global _skip_dirs, _keep_dirs
    if filename.startswith("<"):
        return filename.startswith(("<frozen", "<ember"))
    if _skip_dirs is None:
        _skip_dirs, _keep_dirs = _directories()
    path = os.path.realpath(filename)
    if path.startswith(_keep_dirs):
        return False
    return path.startswith(_skip_dirs)


def skip_files_or_code(code: CodeType, disabled: bool = False) -> None:
    """Never compile ``code`` (until ``reset()``, unless ``disabled`` by the user): it runs as it is."""
    (_disabled_codes if disabled else _skipped_codes).add(code)
    hook = _hook_module()
    if hook is not None:
        hook.skip_code(code)


def is_skipped(code: CodeType) -> bool:
    return (
        code in _skipped_codes
        or code in _disabled_codes
        or _is_skipped_file(code.co_filename)
        or code in _attribute_protocol()
    )


@functools.cache
def _attribute_protocol() -> frozenset[CodeType]:
    """``nn.Module``'s attribute dunders: eager code (an optimizer step after a graph break, the autograd
    engine) calls them from C, and a frame that starts there is not worth compiling (it reads
    ``self.__dict__``, which capture does not follow). Called from captured code they are not frames of
    their own: capture reads modules' parameters, buffers and submodules itself."""
    from ember.nn import Module

    return frozenset(getattr(Module, name).__code__ for name in ("__getattr__", "__setattr__", "__delattr__"))


def _hook_module():
    try:
        from ember.dynamo import _frame_hook
    except ImportError:
        return None
    return _frame_hook


# -- cache entries -----------------------------------------------------------------------------------


def _function_name(code: CodeType, f_locals: dict[str, Any] | None = None) -> str:
    """``'f' (file:line)``; for a method inherited from a base (Module._call_impl), the caller's class too."""
    of = ""
    owner = f_locals.get("self") if f_locals is not None and code.co_varnames[:1] == ("self",) else None
    if owner is not None and type(owner).__qualname__ != code.co_qualname.rpartition(".")[0]:
        of = f" of {type(owner).__qualname__}"
    return f"'{code.co_qualname}'{of} ({code.co_filename}:{code.co_firstlineno})"


def _frame_locals(frame: Any) -> dict[str, Any]:
    f_locals = frame.f_locals
    return f_locals if isinstance(f_locals, dict) else dict(f_locals)


def _guard_set(entry: Any) -> CompiledGuards | None:
    check = getattr(entry, "check_fn", None)
    return getattr(check, "guard_set", None)


def _made_for(entry: Any, f_locals: dict[str, Any], compiler: Any) -> bool:
    guards = _guard_set(entry)
    return guards is None or (guards.backend in (None, compiler) and guards.made_for(f_locals))


def failure_reasons(entries: list, f_locals: dict[str, Any], callback: Any = None) -> list[str]:
    """Why each cache entry's guards fail for ``f_locals``: one line per entry, its reasons joined."""
    out = []
    for i, entry in enumerate(entries):
        guards = _guard_set(entry)
        reasons = guards.failure_reasons(f_locals, callback) if guards is not None else []
        out.append(f"entry {i}: " + ("; ".join(reasons) if reasons else "guard check failed"))
    return out


_warned_limit: weakref.WeakSet[CodeType] = weakref.WeakSet()
compile_counts: dict[str, int] = {}  # frames compiled, for explain() and tests
# Called as listener(code, compiled_frame, compiled_guards) after each compile (explain() listens).
compile_listeners: list = []


class FrameCallback:
    """Called by the frame hook (hook off) for a frame none of whose cache entries fit."""

    def __init__(self, options: convert_frame.CompileOptions, backend_name: str = "") -> None:
        self.options = options
        self.compiler = options.backend  # entries made here serve only callbacks with this backend
        self.backend_name = backend_name or getattr(options.backend, "__name__", repr(options.backend))

    def __call__(self, frame: Any, cache_entries: list) -> Any:
        code = frame.f_code
        if is_skipped(code):
            skip_files_or_code(code)
            return None
        f_locals = _frame_locals(frame)
        relevant = [e for e in cache_entries if _made_for(e, f_locals, self.compiler)]
        if len(relevant) >= config.cache_size_limit or len(cache_entries) >= config.accumulated_cache_size_limit:
            self._limit_reached(code, relevant or cache_entries, f_locals)
            return None
        if cache_entries and stance.current == "fail_on_recompile":
            reasons = "\n".join(f"    - {r}" for r in failure_reasons(cache_entries, f_locals, self))
            raise RuntimeError(
                f"Detected recompile when torch.compile stance is 'fail_on_recompile': function "
                f"{_function_name(code, f_locals)}, whose guards failed:\n{reasons}"
            )
        if cache_entries and recompiles_log.isEnabledFor(20):
            reasons = "\n".join(f"    - {r}" for r in failure_reasons(cache_entries, f_locals, self))
            recompiles_log.info(
                "Recompiling function %s\n    triggered by the following guard failure(s):\n%s",
                _function_name(code, f_locals),
                reasons,
            )
        return self._compile(frame, code, f_locals)

    def _limit_reached(self, code: CodeType, entries: list, f_locals: dict[str, Any]) -> None:
        if code in _warned_limit:
            return
        _warned_limit.add(code)
        reasons = "\n".join(f"    - {r}" for r in failure_reasons(entries, f_locals, self))
        message = (
            f"ember.compile hit config.cache_size_limit ({config.cache_size_limit}) for function "
            f"{_function_name(code, f_locals)}: it now runs eagerly (not compiled) for inputs that fit none of its "
            f"{len(entries)} compiled versions. The guards that failed on the last call:\n{reasons}\n"
            "To compile more versions, raise ember._dynamo.config.cache_size_limit; to compile one version for "
            "changing sizes, use dynamic=True or ember._dynamo.mark_dynamic."
        )
        log.warning("%s", message)
        # Attributed to the function's own line: the callback runs from the hook, under no user frame.
        warnings.warn_explicit(message, UserWarning, code.co_filename, code.co_firstlineno)

    def _compile(self, frame: Any, code: CodeType, f_locals: dict[str, Any]) -> Any:
        # a method's sizes are remembered per class of its ``self`` (``frame_state_for``)
        method = code.co_argcount > 0 and code.co_varnames[0] == "self" and "self" in f_locals
        owner = type(f_locals["self"]) if method else None
        state = frame_state_for(code, owner)
        state.dynamic = self.options.dynamic
        started = time.perf_counter()
        first_break = len(exc.graph_break_log)
        try:
            with decorators.compiling():
                result = convert_frame.compile_frame(
                    code, frame.f_globals, f_locals, getattr(frame, "closure", None), self.options, state
                )
        except Unsupported:
            _log_breaks(first_break)
            if self.options.fullgraph:
                raise
            # Capture would fail the same way on every call: the frame runs as it is until reset().
            log.debug("%s could not be captured; it runs eagerly from now on", _function_name(code), exc_info=True)
            skip_files_or_code(code)
            return None
        except Exception as error:
            if not config.suppress_errors:
                raise
            log.warning(
                "ember.compile failed on %s and runs it eagerly from now on (config.suppress_errors is set): %s: %s",
                _function_name(code),
                type(error).__name__,
                error,
            )
            skip_files_or_code(code)  # not retried on every call; reset() tries again
            return None
        _log_breaks(first_break)
        if result is None:
            skip_files_or_code(code)  # no tensor op in it: never worth compiling
            return None
        taken = {g.kind for g in result.guards if g.source is None}
        state_guards = [g for g in global_state_guards() if g.kind not in taken]
        hook = _hook_module()
        guards = compile_guards(
            state_guards + list(result.guards),
            frame.f_globals,
            result.shape_env,
            result.shape_inputs,
            backend=self.compiler,
            current_callback=getattr(hook, "get_eval_frame_callback", None),
        )
        elapsed = time.perf_counter() - started
        self._report(code, _function_name(code, f_locals), result, guards, elapsed)
        return make_cache_entry(code, guards, result.code)

    def _report(self, code: CodeType, name: str, result: Any, guards: CompiledGuards, elapsed: float) -> None:
        compile_counts[name] = compile_counts.get(name, 0) + 1
        for listener in list(compile_listeners):
            listener(code, result, guards)
        log.info(
            "compiled %s in %.1f ms: %d graph(s), %d guards, backend %s",
            name,
            elapsed * 1e3,
            len(result.graphs),
            len(guards.guards) + len(guards.shape_guards),
            self.backend_name,
        )
        if guards_log.isEnabledFor(20):
            guards_log.info("GUARDS of %s:\n%s", name, guards.describe())
        if bytecode_log.isEnabledFor(20):
            bytecode_log.info("ORIGINAL BYTECODE of %s:\n%s", name, dis.Bytecode(code).dis())
            bytecode_log.info("MODIFIED BYTECODE of %s:\n%s", name, dis.Bytecode(result.code).dis())
        for i, gm in enumerate(result.graphs):
            if graph_code_log.isEnabledFor(20):
                code_text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
                graph_code_log.info("GRAPH %d of %s:\n%s", i, name, code_text)
            if graph_log.isEnabledFor(20):
                graph_log.info("GRAPH %d of %s:\n%s", i, name, _tabular(gm))
        # The trace gets the graphs and guards through their artifacts (traced whether printed or not).
        trace_event(
            "dynamo_compile",
            function=name,
            seconds=elapsed,
            graphs=len(result.graphs),
            guards=len(guards.guards) + len(guards.shape_guards),
        )


def _log_breaks(first: int) -> None:
    if graph_breaks_log.isEnabledFor(20):
        for brk in exc.graph_break_log[first:]:
            graph_breaks_log.info("%s", brk.format())


def _tabular(gm: Any) -> str:
    rows = [f"{'opcode':<14}{'name':<20}{'target':<36}args"]
    for node in gm.graph.nodes:
        target = getattr(node.target, "__name__", str(node.target))
        rows.append(f"{node.op:<14}{node.name:<20}{target:<36}{node.args}")
    return "\n".join(rows)


def make_cache_entry(code: CodeType, guards: CompiledGuards, new_code: CodeType) -> Any:
    """The hook's ``CacheEntry`` for ``new_code`` guarded by ``guards``, attached to ``code``."""
    hook = _hook_module()
    if hook is None:
        raise RuntimeError("ember.compile needs the frame-evaluation hook (ember.dynamo._frame_hook), which is missing")
    entry = hook.CacheEntry(guards.check, new_code)
    add = getattr(hook, "add_cache_entry", None)
    if add is not None:
        add(code, entry)
    return entry


def reset() -> None:
    """Forget every compiled entry, frame state and warning (``ember._dynamo.reset()``)."""
    from ember.dynamo import automatic_dynamic

    hook = _hook_module()
    if hook is not None:
        hook.reset_code_caches()
        for code in _disabled_codes:
            hook.skip_code(code)
    _skipped_codes.clear()
    automatic_dynamic.reset()
    _warned_limit.clear()
    compile_counts.clear()
