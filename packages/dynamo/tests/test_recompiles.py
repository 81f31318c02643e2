"""The frame callback's decisions: compile, reuse, recompile with automatic dynamic, give up at the
cache limit (with one warning), skip, suppress errors; and the logs of each, in user terms.

The frame hook and capture are test doubles here: ``HookDouble`` does in Python what the hook does
in C for one frame (try the code's cache entries, call the callback when none passes, run the chosen
code); ``CaptureDouble`` stands for ``compile_frame``, returning the frame's own code with the guards
capture would take (sizes, asking the frame state which dims are dynamic; ints by value; grad mode).
The callback, the guards and the frame state are the real ones.
"""

from __future__ import annotations

import inspect
import logging
import os
import warnings
from types import FunctionType, SimpleNamespace

import pytest

import ember
from ember.dynamo import config, convert_frame, frame_cache
from ember.dynamo.automatic_dynamic import mark_dynamic, mark_static, maybe_mark_dynamic
from ember.dynamo.backends import lookup_backend
from ember.dynamo.convert_frame import CompiledFrame, CompileOptions
from ember.dynamo.exc import Unsupported
from ember.dynamo.guards import Guard, GuardKind, TensorSpec
from ember.dynamo.source import LocalSource

# -- the doubles -----------------------------------------------------------------------------------


class CacheEntry:
    def __init__(self, check_fn, code) -> None:
        self.check_fn = check_fn
        self.code = code


class HookDouble:
    CacheEntry = CacheEntry

    def __init__(self) -> None:
        self.entries: dict = {}
        self.skipped: set = set()
        self.callback = None

    def skip_code(self, code) -> None:
        self.skipped.add(code)

    def reset_code_caches(self) -> None:
        self.entries.clear()

    def cache_entries(self, code) -> list:
        return self.entries.setdefault(code, [])

    def set_eval_frame(self, callback):
        previous, self.callback = self.callback, callback
        return previous

    def get_eval_frame_callback(self):
        return self.callback

    def call(self, fn, *args, **kwargs):
        """Run ``fn``'s frame as the hook would: a passing entry, or the callback's, or the original code."""
        code = fn.__code__
        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        f_locals = dict(bound.arguments)
        entries = self.cache_entries(code)
        chosen = None
        if code not in self.skipped:
            chosen = next((e for e in entries if e.check_fn(f_locals)), None)
            if chosen is None and callable(self.callback):
                frame = SimpleNamespace(f_code=code, f_globals=fn.__globals__, f_locals=f_locals, closure=None)
                chosen = self.callback(frame, list(entries))
                if chosen is not None:
                    entries.append(chosen)
        run_code = chosen.code if chosen is not None else code
        return FunctionType(run_code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)(*args, **kwargs)


def tensor_spec(t, dynamic) -> TensorSpec:
    sizes = tuple(None if i in dynamic else s for i, s in enumerate(t.shape))
    strides = tuple(None if i in dynamic else s for i, s in enumerate(t.stride()))
    return TensorSpec(type(t), t.dtype, t.device, sizes, strides, t.requires_grad)


class CaptureDouble:
    """Stands for ``convert_frame.compile_frame``; ``raises`` makes it fail, ``nothing`` return None."""

    def __init__(self) -> None:
        self.calls: list[dict] = []  # per compile: source name -> dynamic dims (or dynamic int flag)
        self.raises: BaseException | None = None
        self.nothing = False

    def __call__(self, code, f_globals, f_locals, closure, options, frame_state):
        if self.raises is not None:
            raise self.raises
        if self.nothing:
            return None
        seen: dict = {}
        guards = [Guard(None, GuardKind.GRAD_MODE, ember.is_grad_enabled())]
        for name, value in f_locals.items():
            source = LocalSource(name)
            if isinstance(value, ember.Tensor):
                dims = frame_state.dynamic_dims(source.name(), value)
                seen[name] = dims
                guards.append(Guard(source, GuardKind.TENSOR_MATCH, tensor_spec(value, dims)))
            elif type(value) is int:
                dynamic = frame_state.dynamic_scalar(source.name(), value)
                seen[name] = dynamic
                guards.append(
                    Guard(
                        source, GuardKind.TYPE_MATCH if dynamic else GuardKind.EQUALS_MATCH, int if dynamic else value
                    )
                )
        self.calls.append(seen)
        return CompiledFrame(code=code, guards=guards)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def hook(monkeypatch):
    double = HookDouble()
    monkeypatch.setattr(frame_cache, "_hook_module", lambda: double)
    frame_cache.reset()
    yield double
    frame_cache.reset()


@pytest.fixture
def capture(monkeypatch):
    double = CaptureDouble()
    monkeypatch.setattr(convert_frame, "compile_frame", double)
    return double


@pytest.fixture
def logs():
    records = Records()
    loggers = [logging.getLogger("ember.dynamo")] + [
        logging.getLogger(f"ember.dynamo.__{a}") for a in ("recompiles", "guards", "dynamic")
    ]
    saved = [(lg, lg.level) for lg in loggers]
    for lg in loggers:
        lg.addHandler(records)
        lg.setLevel(logging.DEBUG)
    yield records
    for lg, level in saved:
        lg.removeHandler(records)
        lg.setLevel(level)


def callback(**options):
    return frame_cache.FrameCallback(CompileOptions(backend=lookup_backend("eager"), **options), "eager")


def add(x, y):
    return x + y


def scale(x, n):
    return x * n


def test_compiles_once_then_reuses_the_entry(hook, capture):
    hook.set_eval_frame(callback())
    x, y = ember.randn(4, 3), ember.randn(4, 3)
    assert ember.equal(hook.call(add, x, y), x + y)
    hook.call(add, ember.randn(4, 3), ember.randn(4, 3))
    assert len(capture.calls) == 1
    assert capture.calls[0] == {"x": set(), "y": set()}  # the first compile is static


def test_a_size_change_recompiles_with_that_dim_dynamic_and_logs_why(hook, capture, logs):
    hook.set_eval_frame(callback())
    hook.call(add, ember.randn(4, 3), ember.randn(4, 3))
    hook.call(add, ember.randn(6, 3), ember.randn(6, 3))
    assert capture.calls[1] == {"x": {0}, "y": {0}}
    text = "\n".join(logs.messages)
    assert "Recompiling function 'add'" in text
    assert "x.size(0) changed from 4 to 6" in text
    assert "L['x']" not in text.split("Recompiling")[1].split("\n")[2]  # the reason is in user terms
    assert "x.size(0) changed from 4 to 6, so that dimension is dynamic" in text
    hook.call(add, ember.randn(9, 3), ember.randn(9, 3))  # fits the dynamic entry: no third compile
    assert len(capture.calls) == 2
    hook.call(add, ember.randn(9, 5), ember.randn(9, 5))
    assert capture.calls[2] == {"x": {0, 1}, "y": {0, 1}}


class _Base:
    def run(self, x):
        return x + 1


class _First(_Base):
    pass


class _Second(_Base):
    pass


def test_an_inherited_method_remembers_sizes_per_class_of_self(hook, capture):
    # as ember.compile(module) compiles Module._wrapped_call_impl for every kind of module: another
    # class's sizes do not make this one's dynamic, its own do
    hook.set_eval_frame(callback())
    hook.call(_Base.run, _First(), ember.randn(4, 3))
    hook.call(_Base.run, _Second(), ember.randn(6, 3))
    assert capture.calls[1]["x"] == set()
    hook.call(_Base.run, _First(), ember.randn(5, 3))
    assert capture.calls[2]["x"] == {0}


def test_dtype_change_is_reported_and_keeps_sizes_static(hook, capture, logs):
    hook.set_eval_frame(callback())
    hook.call(add, ember.randn(4), ember.randn(4))
    hook.call(add, ember.randn(4, dtype=ember.float64), ember.randn(4))
    assert capture.calls[1] == {"x": set(), "y": set()}
    assert any("x.dtype changed from float32 to float64" in m for m in logs.messages)


def test_grad_mode_change_recompiles(hook, capture, logs):
    hook.set_eval_frame(callback())
    hook.call(add, ember.randn(4), ember.randn(4))
    with ember.no_grad():
        hook.call(add, ember.randn(4), ember.randn(4))
    assert len(capture.calls) == 2
    assert any("grad mode changed" in m for m in logs.messages)


def test_int_arguments_become_dynamic_after_a_change(hook, capture):
    hook.set_eval_frame(callback())
    x = ember.randn(3)
    hook.call(scale, x, 2)
    hook.call(scale, x, 3)
    hook.call(scale, x, 4)
    assert [c["n"] for c in capture.calls] == [False, True]


def test_cache_limit_runs_eagerly_with_one_warning(hook, capture, monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 2)
    hook.set_eval_frame(callback())
    dtypes = [ember.float32, ember.float64, ember.float16, ember.bfloat16]
    hook.call(add, ember.ones(2, dtype=dtypes[0]), ember.ones(2))
    hook.call(add, ember.ones(2, dtype=dtypes[1]), ember.ones(2))
    with pytest.warns(UserWarning) as caught:
        out = hook.call(add, ember.ones(2, dtype=dtypes[2]), ember.ones(2))
    assert out.tolist() == [2.0, 2.0]  # ran eagerly
    assert len(capture.calls) == 2
    (warning,) = caught
    text = str(warning.message)
    assert "cache_size_limit (2)" in text
    assert f"'add' ({__file__}:{add.__code__.co_firstlineno})" in text
    assert "x.dtype changed from float32 to float16" in text
    assert "x.dtype changed from float64 to float16" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning per function, not one per call
        hook.call(add, ember.ones(2, dtype=dtypes[3]), ember.ones(2))


def test_stdlib_and_ember_code_is_skipped(hook, capture):
    hook.set_eval_frame(callback())
    hook.call(os.path.join, "a", "b")
    assert os.path.join.__code__ in hook.skipped
    assert capture.calls == []


def test_frames_without_tensor_ops_are_skipped_for_good(hook, capture):
    hook.set_eval_frame(callback())
    capture.nothing = True
    hook.call(add, 1, 2)
    assert add.__code__ in hook.skipped


def test_errors_raise_unless_suppressed(hook, capture, monkeypatch, logs):
    hook.set_eval_frame(callback())
    capture.raises = ValueError("capture failed")
    with pytest.raises(ValueError, match="capture failed"):
        hook.call(add, ember.ones(2), ember.ones(2))
    monkeypatch.setattr(config, "suppress_errors", True)
    assert hook.call(add, ember.ones(2), ember.ones(2)).tolist() == [2.0, 2.0]
    assert add.__code__ in hook.skipped  # not retried on every call
    assert any("config.suppress_errors" in m and "capture failed" in m for m in logs.messages)


def test_unsupported_raises_with_fullgraph_and_runs_eagerly_without(hook, capture):
    capture.raises = Unsupported("print() breaks the graph", "remove the print")
    hook.set_eval_frame(callback(fullgraph=True))
    with pytest.raises(Unsupported, match="print"):
        hook.call(add, ember.ones(2), ember.ones(2))
    hook.set_eval_frame(callback())
    assert hook.call(add, ember.ones(2), ember.ones(2)).tolist() == [2.0, 2.0]
    assert add.__code__ in hook.skipped


def test_run_only_mode_uses_entries_but_never_compiles(hook, capture):
    hook.set_eval_frame(callback())
    hook.call(add, ember.ones(2), ember.ones(2))
    hook.set_eval_frame(False)
    hook.call(add, ember.ones(2), ember.ones(2))
    hook.call(add, ember.ones(5), ember.ones(5))
    assert len(capture.calls) == 1


def test_info_line_per_compiled_frame_and_guards_artifact(hook, capture, logs):
    hook.set_eval_frame(callback())
    hook.call(add, ember.ones(2), ember.ones(2))
    info = [m for m in logs.messages if m.startswith("compiled 'add'")]
    assert len(info) == 1 and " ms: 0 graph(s), 5 guards, backend eager" in info[0]
    assert any("GUARDS of 'add'" in m and "TENSOR_MATCH: L['x']" in m for m in logs.messages)


def test_dynamic_true_and_false(hook, capture):
    hook.set_eval_frame(callback(dynamic=True))
    hook.call(add, ember.ones(4, 2), ember.ones(4, 2))
    assert capture.calls[0] == {"x": {0, 1}, "y": {0, 1}}
    frame_cache.reset()
    hook.set_eval_frame(callback(dynamic=False))
    hook.call(add, ember.ones(4, 2), ember.ones(4, 2))
    hook.call(add, ember.ones(5, 2), ember.ones(5, 2))
    assert capture.calls[1:] == [{"x": set(), "y": set()}] * 2


def test_mark_dynamic_and_mark_static(hook, capture):
    hook.set_eval_frame(callback())
    x, y = ember.ones(4, 2), ember.ones(4, 2)
    mark_dynamic(x, 0)
    maybe_mark_dynamic(y, -1)
    hook.call(add, x, y)
    assert capture.calls[0] == {"x": {0}, "y": {1}}
    frame_cache.reset()
    a, b = ember.ones(4, 2), ember.ones(4, 2)
    mark_static(a, 0)
    hook.call(add, a, b)
    c, d = ember.ones(5, 2), ember.ones(5, 2)
    mark_static(c, 0)
    hook.call(add, c, d)
    assert capture.calls[2] == {"x": set(), "y": {0}}
    with pytest.raises(IndexError):
        mark_dynamic(ember.ones(2), 3)
    with pytest.raises(ValueError, match="marked static"):
        mark_dynamic(c, 0)


def test_automatic_dynamic_can_be_turned_off(hook, capture, monkeypatch):
    monkeypatch.setattr(config, "automatic_dynamic_shapes", False)
    hook.set_eval_frame(callback())
    hook.call(add, ember.ones(4), ember.ones(4))
    hook.call(add, ember.ones(6), ember.ones(6))
    assert capture.calls[1] == {"x": set(), "y": set()}


def test_parameters_stay_static(hook, capture):
    hook.set_eval_frame(callback(dynamic=True))
    w = ember.nn.Parameter(ember.ones(3))
    hook.call(add, w, ember.ones(3))
    assert capture.calls[0] == {"x": set(), "y": {0}}
