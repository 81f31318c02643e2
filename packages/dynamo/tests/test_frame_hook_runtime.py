"""The frame-evaluation hook at run time: exceptions, recursion, threads, tracers, leaks, overhead."""

from __future__ import annotations

import contextlib
import gc
import math
import subprocess
import sys
import textwrap
import threading
import time
import traceback
import tracemalloc

import pytest

hook = pytest.importorskip("ember.dynamo._frame_hook", reason="the C frame-evaluation hook is not built")


@pytest.fixture(autouse=True)
def _clean():
    hook.reset_code_caches()
    yield
    hook.set_eval_frame(None)
    hook.reset_code_caches()


@contextlib.contextmanager
def callback(fn):
    previous = hook.set_eval_frame(fn)
    try:
        yield
    finally:
        hook.set_eval_frame(previous)


def _pass(frame, entries):
    return None


def only(code, fn):
    """A callback that answers fn's answer for frames of code and None for every other frame."""

    def cb(frame, entries):
        return fn(frame, entries) if frame.f_code is code else None

    return cb


def _always(f_locals):
    return True


def _replace(fn, code, check=_always):
    entry = hook.CacheEntry(check, code)
    hook.add_cache_entry(fn.__code__, entry)
    return entry


def _orig(x, y):
    return x + y


def _raises(x, y):
    z = x + y
    raise ValueError(f"bad {z}")


def _double(x, y):
    return 2 * (x + y)


def _plain(x, y):
    return x - y


# ---- exceptions ----


def test_exception_from_replacement_propagates_with_traceback():
    _replace(_orig, _raises.__code__)
    with callback(False), pytest.raises(ValueError, match="bad 3") as info:
        _orig(1, 2)
    names = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert names[-1] == "_raises"
    assert "_orig" not in names  # the original frame never ran
    assert info.value.__traceback__.tb_next.tb_frame.f_locals["z"] == 3


def test_exceptions_from_check_fn_and_callback_propagate():
    def bad_check(f_locals):
        raise KeyError("check")

    _replace(_orig, _double.__code__, bad_check)
    with callback(False), pytest.raises(KeyError, match="check"):
        _orig(1, 2)
    hook.reset_code_caches()

    def bad_callback(frame, entries):
        raise RuntimeError("callback")

    with callback(only(_orig.__code__, bad_callback)), pytest.raises(RuntimeError, match="callback"):
        _orig(1, 2)


def test_arguments_are_released_after_every_outcome():
    arg = object()
    base = sys.getrefcount(arg)
    _replace(_orig, _raises.__code__, lambda f_locals: f_locals["x"] == 1)
    _replace(_orig, _double.__code__, lambda f_locals: f_locals["x"] == 2)

    def answer(frame, entries):
        if frame.f_locals["x"] == 3:
            raise RuntimeError("callback")
        return None

    with callback(only(_orig.__code__, answer)):
        for x in (1, 2, 3, 4):
            with contextlib.suppress(Exception):
                _orig(x, arg)
    assert sys.getrefcount(arg) == base


def test_replacement_catches_its_own_exceptions():
    def orig(x):
        return x

    def repl(x):
        try:
            return 1 // x
        except ZeroDivisionError:
            return "caught"
        finally:
            pass

    _replace(orig, repl.__code__)
    with callback(False):
        assert (orig(0), orig(1)) == ("caught", 1)


# ---- recursion ----


def _fact(n):
    return 1 if n <= 1 else n * _fact(n - 1)


def _fact_repl(n):
    return 1 if n <= 1 else n * _fact(n - 1) + 0


def _forever(n):
    return _forever(n + 1)


def test_recursion_through_the_hook_and_replacements():
    seen = []

    def answer(frame, entries):
        seen.append(frame.f_locals["n"])
        return None

    _replace(_fact, _fact_repl.__code__, lambda f_locals: f_locals["n"] % 2 == 0)
    with callback(only(_fact.__code__, answer)):
        assert _fact(150) == math.factorial(150)
    assert seen == list(range(149, 0, -2))


def test_infinite_recursion_raises_recursion_error_and_the_hook_still_works():
    with callback(_pass), pytest.raises(RecursionError):
        _forever(0)
    _replace(_orig, _double.__code__)
    with callback(False):
        assert _orig(1, 2) == 6


def test_deep_recursion_with_the_hook_on():
    def down(n):
        return 0 if n == 0 else 1 + down(n - 1)

    with callback(_pass):
        assert down(500) == 500


def _count(n):
    return 0 if n == 0 else 1 + _count(n - 1)


def _count_repl(n):
    big = [n] * 3  # a larger frame than the original's
    return 0 if big[0] == 0 else 1 + _count(n - 1)


def _pad(k, fn):
    return fn() if k == 0 else _pad(k - 1, fn)


def test_replaced_frames_across_data_stack_chunks():
    # Every level replaces its frame, at every offset into the interpreter's data stack chunks, so
    # that some discarded frames open a chunk (which the hook then frees on 3.12).
    _replace(_count, _count_repl.__code__)
    with callback(False):
        for k in range(0, 40, 3):
            assert _pad(k, lambda: _count(300)) == 300


# ---- code running at awkward moments ----


_del_calls: list[int] = []


class _CallsOnDel:
    """Calls a Python function when freed: the hook discards frames holding the last reference."""

    def __del__(self):
        _del_calls.append(_count(3))


def test_finalizers_run_while_a_replaced_frame_is_discarded():
    def orig(x, **kw):
        return "orig"

    def repl(x, **kw):
        return x + len(kw)

    def check(f_locals):
        # The **kw dict belongs to the frame alone: the object dies when the hook discards the frame.
        f_locals["kw"]["late"] = _CallsOnDel()
        return f_locals["x"] >= 0

    _del_calls.clear()
    _replace(orig, repl.__code__, check)
    with callback(_pass):
        for i in range(50):
            assert orig(i, a=1) == i + 2
        assert orig(-1, b=2) == "orig"  # no entry passes and the callback answers None: the frame runs
    assert _del_calls == [3] * 51


def test_reset_inside_check_fn_and_inside_the_replacement():
    def check(f_locals):
        hook.reset_code_caches()
        return True

    def orig(x):
        return x

    def repl(x):
        hook.reset_code_caches()
        return x * 10

    entry = _replace(orig, repl.__code__, check)
    with callback(False):
        assert orig(2) == 20
        assert hook.cache_entries(orig.__code__) == []
        hook.add_cache_entry(orig.__code__, entry)
        hook.add_cache_entry(orig.__code__, hook.CacheEntry(_always, repl.__code__))
        assert orig(3) == 30
        assert orig(3) == 3  # the reset dropped both entries
    del entry


# ---- threads ----


def test_callback_is_per_thread():
    seen_main, seen_other = [], []

    def record(into):
        def cb(frame, entries):
            if frame.f_code.co_filename == __file__:
                into.append(frame.f_code.co_name)
            return None

        return cb

    results = {}

    def other():
        results["before"] = hook.get_eval_frame_callback()
        _orig(1, 2)
        with callback(record(seen_other)):
            _plain(1, 2)

    def hold():
        with callback(_pass):
            started.set()
            release.wait()

    started, release = threading.Event(), threading.Event()
    with callback(record(seen_main)):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        _orig(1, 2)
        holder = threading.Thread(target=hold)
        holder.start()
        started.wait()
    assert hook.hook_installed()  # the other thread's callback keeps it installed
    release.set()
    holder.join()
    assert not hook.hook_installed()
    assert results["before"] is None
    assert seen_main == ["_orig"]
    assert seen_other == ["_plain"]


def test_threads_share_entries():
    _replace(_orig, _double.__code__, lambda f_locals: isinstance(f_locals["x"], int))
    errors, totals = [], []

    def work():
        try:
            with callback(False):
                totals.append(sum(_orig(i, 1) for i in range(2000)))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert totals == [2 * sum(i + 1 for i in range(2000))] * 4


# ---- tracers ----


def test_settrace_sees_frames_with_the_hook_on():
    _replace(_orig, _double.__code__)
    events = []

    def tracer(frame, event, arg):
        if event in ("call", "return"):
            events.append((event, frame.f_code.co_name))
        return tracer

    with callback(False):
        sys.settrace(tracer)
        try:
            assert _orig(1, 2) == 6
        finally:
            sys.settrace(None)
    assert ("call", "_double") in events and ("return", "_double") in events


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is new in 3.12")
def test_sys_monitoring_sees_frames_with_the_hook_on():
    mon = sys.monitoring
    tool = mon.PROFILER_ID
    starts = []
    mon.use_tool_id(tool, "frame-hook-test")
    try:
        mon.register_callback(tool, mon.events.PY_START, lambda code, offset: starts.append(code.co_name))
        mon.set_events(tool, mon.events.PY_START)
        _replace(_orig, _double.__code__)
        with callback(False):
            assert _orig(1, 2) == 6
    finally:
        mon.set_events(tool, 0)
        mon.register_callback(tool, mon.events.PY_START, None)
        mon.free_tool_id(tool)
    assert "_double" in starts


# ---- leaks ----


def test_no_leaks_over_many_calls():
    arg = object()
    entry = _replace(_orig, _double.__code__, lambda f_locals: f_locals["x"] >= 0)
    counted = [arg, entry, _orig.__code__, _double.__code__, _orig]

    def run(n):
        with callback(_pass):
            for i in range(n):
                _orig(i, 1)  # the entry's code
                _orig(-1, 1)  # check fails, the callback runs, then the original code
                _fact(3)  # plain frames
                with contextlib.suppress(TypeError):
                    _orig(-1, arg)

    run(100)
    gc.collect()
    base = [sys.getrefcount(o) for o in counted]
    tracemalloc.start()
    run(100)
    gc.collect()
    first, _ = tracemalloc.get_traced_memory()
    run(10_000)
    gc.collect()
    second, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [sys.getrefcount(o) for o in counted] == base
    assert second - first < 64 * 1024


# ---- the extension missing ----


def test_missing_extension_raises_a_clear_import_error():
    code = textwrap.dedent(
        """
        import sys
        sys.modules["ember.dynamo._eval_frame"] = None
        try:
            import ember.dynamo._frame_hook
        except ImportError as exc:
            print(exc)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert "ember.dynamo._eval_frame" in out and "C compiler" in out


# ---- overhead (printed, not asserted) ----


def _nothing(a, b):
    return a


def test_overhead_of_a_skipped_frame(capsys):
    n = 200_000

    def loop():
        f = _nothing
        t0 = time.perf_counter()
        for _ in range(n):
            f(1, 2)
        return (time.perf_counter() - t0) / n * 1e9

    off = min(loop() for _ in range(3))
    hook.skip_code(_nothing.__code__)
    with callback(_pass):
        skipped = min(loop() for _ in range(3))
    hook.reset_code_caches()
    _replace(_nothing, _nothing.__code__)
    with callback(False):
        cached = min(loop() for _ in range(3))
    with capsys.disabled():
        print(
            f"\nframe hook, ns per call of a 2-argument function ({sys.version.split()[0]}): hook off {off:.0f}, "
            f"skipped code {skipped:.0f}, cached entry with a trivial check {cached:.0f}"
        )
    assert off > 0 and skipped > 0 and cached > 0


# ---- every frame replaced ----


def _workload():
    import dataclasses
    import functools
    import json
    import textwrap

    @dataclasses.dataclass
    class Point:
        x: int
        y: int = 2

        def norm(self, *, p=2):
            return (abs(self.x) ** p + abs(self.y) ** p) ** (1 / p)

    class Base:
        def describe(self, **extra):
            return {"kind": type(self).__name__, **extra}

    class Child(Base):
        def describe(self, **extra):
            return super().describe(child=True, **extra)

    def make_adder(k):
        return lambda v: v + k

    points = sorted((Point(i, -i) for i in range(5)), key=lambda pt: -pt.norm())
    adders = [make_adder(k) for k in range(3)]
    text = json.dumps({"points": [dataclasses.asdict(pt) for pt in points], "child": Child().describe(n=1)})
    wrapped = textwrap.fill(text, width=40)
    partial = functools.partial(lambda a, b, *rest, c=0: (a, b, rest, c), 1, c=3)
    try:
        json.loads("{bad")
    except json.JSONDecodeError as exc:
        error = (exc.lineno, exc.colno)
    return json.loads(text), wrapped, [f(10) for f in adders], partial(2, 3, 4), error


def test_every_frame_replaced_by_a_copy_of_its_code_gives_the_same_results():
    expected = _workload()
    replaced = []

    def answer(frame, entries):
        replaced.append(frame.f_code.co_name)
        return hook.CacheEntry(_always, frame.f_code.replace())

    with callback(answer):
        got = _workload()
        again = _workload()  # cached entries run now
    assert got == expected and again == expected
    assert len(replaced) > 20 and {"_workload", "norm", "describe", "<lambda>"} <= set(replaced)
