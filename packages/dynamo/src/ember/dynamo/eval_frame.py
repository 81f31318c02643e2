"""``ember.compile`` and ``ember._dynamo.optimize``: turning the frame hook on around a call.

A compiled function is a thin wrapper: it sets the frame hook's callback (a ``FrameCallback``
holding the backend and options), calls the original function, and restores the previous callback.
The hook then sees the function's frame and every frame it enters, and runs their compiled versions
(see ``frame_cache``). A module compiles as an ``OptimizedModule`` around it, or in place with
``Module.compile()``, whose provider slot in ``ember.nn`` this module fills on import.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember.dynamo import config, decorators, frame_cache, stance
from ember.dynamo.backends import lookup_backend
from ember.dynamo.convert_frame import CompileOptions
from ember.nn import Module
from ember.nn.modules import _compile_provider

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


_frame_hook: Any = None


def _hook():
    global _frame_hook
    if _frame_hook is None:
        try:
            from ember.dynamo import _frame_hook as hook
        except ImportError as error:
            raise RuntimeError(
                "ember.compile needs the frame-evaluation hook (the C extension ember.dynamo._frame_hook), "
                f"which could not be imported: {error}"
            ) from error
        _frame_hook = hook
    return _frame_hook


class _BackendWithOptions:
    """A backend called with ``mode=``/``options=`` when they were given (as ``torch.compile`` does)."""

    def __init__(self, backend: Callable, kwargs: dict[str, Any]) -> None:
        self.backend = backend
        self.kwargs = kwargs
        self.__name__ = getattr(backend, "__name__", type(backend).__name__)

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        return self.backend(gm, example_inputs, **self.kwargs)


class OptimizeContext:
    """What ``optimize(backend, ...)`` returns: applied to a function or module, compiles it."""

    def __init__(self, callback: frame_cache.FrameCallback | bool | None) -> None:
        self.callback = callback  # False: run-only (cached entries only); None: capture off

    def __call__(self, fn: Any) -> Any:
        if isinstance(fn, Module):
            return OptimizedModule(fn, self)
        if not callable(fn):
            raise RuntimeError(f"ember.compile: expected a function or a Module, got {type(fn).__name__}")
        if isinstance(fn, type):
            raise RuntimeError(
                f"ember.compile cannot compile a class ({fn.__qualname__}); compile a function or an instance"
            )
        callback = self.callback
        target = fn
        from ember.dynamo.variables.flex_attention import entry_for

        target = entry_for(fn)  # flex_attention itself compiles as one call of it (one graph op)
        set_eval_frame = None

        @functools.wraps(fn)
        def compiled(*args: Any, **kwargs: Any) -> Any:
            nonlocal set_eval_frame
            if set_eval_frame is None:
                set_eval_frame = _hook().set_eval_frame
            previous = set_eval_frame(callback if stance.current == "default" else stance.callback_for(callback))
            try:
                return target(*args, **kwargs)
            finally:
                set_eval_frame(previous)

        compiled._torchdynamo_orig_callable = fn
        compiled._ember_compile_context = self
        return compiled

    def __enter__(self) -> None:
        self._previous = _hook().set_eval_frame(self.callback)

    def __exit__(self, *exc: object) -> None:
        _hook().set_eval_frame(self._previous)


class OptimizedModule(Module):
    """A module whose calls run compiled; parameters, buffers and attributes are the original's.

    ``_orig_mod`` is the module compiled. Unlike PyTorch's, whose state dict keys gain a
    ``_orig_mod.`` prefix, ``state_dict()`` and ``load_state_dict()`` use the original module's keys,
    so a checkpoint saved from a compiled model loads into an uncompiled one and back.
    """

    _torchdynamo_orig_callable: Any = None

    def __init__(self, mod: Module, context: OptimizeContext) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "dynamo_ctx", context)
        object.__setattr__(self, "_torchdynamo_orig_callable", mod)
        self.forward = context(mod.__call__)

    def __getattr__(self, name: str) -> Any:
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._modules["_orig_mod"], name)

    def state_dict(self, *args: Any, **kwargs: Any):
        return self._orig_mod.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False):
        return self._orig_mod.load_state_dict(state_dict, strict=strict, assign=assign)

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        return self._orig_mod.named_parameters(prefix=prefix, recurse=recurse, remove_duplicate=remove_duplicate)

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        return self._orig_mod.named_buffers(prefix=prefix, recurse=recurse, remove_duplicate=remove_duplicate)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(dir(self._orig_mod)))


def _resolve_backend(backend: str | Callable, mode: str | None, options: dict | None) -> Callable:
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if options is not None and not isinstance(options, dict):
        raise RuntimeError(f"options must be a dict, got {type(options).__name__}")
    compiler = lookup_backend(backend)
    kwargs = {}
    if mode not in (None, "default"):
        kwargs["mode"] = mode
    if options:
        kwargs["options"] = options
    if not kwargs:
        return compiler
    # One wrapper per (backend, mode, options): entries are per backend object, and blocks compiled
    # one by one with the same settings must share them.
    key = (compiler, mode, repr(sorted((options or {}).items())))
    wrapper = _with_options.get(key)
    if wrapper is None:
        wrapper = _with_options[key] = _BackendWithOptions(compiler, kwargs)
    return wrapper


_with_options: dict[tuple, _BackendWithOptions] = {}


def optimize(
    backend: str | Callable = "inductor",
    *,
    nopython: bool = False,
    dynamic: bool | None = None,
    disable: bool = False,
    guard_export_fn: Any = None,
    guard_fail_fn: Any = None,
) -> Callable[[Any], Any]:
    """A decorator that compiles functions and modules with ``backend`` (``torch._dynamo.optimize``)."""
    if disable or config.disable:
        return lambda fn: fn
    compiler = lookup_backend(backend)
    name = backend if isinstance(backend, str) else getattr(backend, "__name__", type(backend).__name__)
    options = CompileOptions(backend=compiler, fullgraph=nopython, dynamic=dynamic)
    return OptimizeContext(frame_cache.FrameCallback(options, name))


def compile(
    model: Callable | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | Callable = "inductor",
    mode: str | None = None,
    options: dict | None = None,
    disable: bool = False,
) -> Any:
    """Compile ``model`` (a function or a Module): its frames are captured into graphs that
    ``backend`` compiles, guarded and recompiled as their inputs change.

    Usable as ``ember.compile(fn)``, ``@ember.compile`` and ``@ember.compile(backend="eager")``.
    On a module it returns an ``OptimizedModule``; ``Module.compile()`` compiles in place.
    """
    if model is None:

        def decorate(fn: Callable) -> Any:
            return compile(
                fn,
                fullgraph=fullgraph,
                dynamic=dynamic,
                backend=backend,
                mode=mode,
                options=options,
                disable=disable,
            )

        return decorate
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    compiler = _resolve_backend(backend, mode, options)
    if disable or config.disable:
        return model
    name = backend if isinstance(backend, str) else getattr(backend, "__name__", type(backend).__name__)
    compile_options = CompileOptions(backend=compiler, fullgraph=fullgraph, dynamic=dynamic)
    return OptimizeContext(frame_cache.FrameCallback(compile_options, name))(model)


def run(fn: Callable | None = None) -> Any:
    """Run ``fn`` with the code compiled so far only: cached entries whose guards pass, never a new compile."""
    context = OptimizeContext(False)
    return context if fn is None else context(fn)


def reset() -> None:
    """Forget all compiled code, caches and automatic-dynamic state (``ember._dynamo.reset``)."""
    frame_cache.reset()
    from ember.dynamo import exc

    exc.graph_break_log.clear()


def compile_in_place(module: Module, *args: Any, **kwargs: Any) -> None:
    """``Module.compile(*args, **kwargs)``: the module's calls run ``ember.compile``d, the module unchanged."""
    module._compiled_call_impl = compile(module._call_impl, *args, **kwargs)


_compile_provider.register(compile_in_place)

is_compiling = decorators.is_compiling
