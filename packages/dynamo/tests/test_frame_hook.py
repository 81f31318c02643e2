"""The frame-evaluation hook: which frames the callback sees, f_locals, skip, cache entries, run-only."""

from __future__ import annotations

import contextlib
import sys

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


class Recorder:
    """A callback that records (code name, f_locals) of this module's frames and runs every frame as it is."""

    def __init__(self, answer=None):
        self.seen: list[tuple[str, dict]] = []
        self.frames: list = []
        self.answer = answer

    def __call__(self, frame, entries):
        if frame.f_code.co_filename != __file__:  # contextlib's __exit__, ...
            return None
        self.seen.append((frame.f_code.co_name, dict(frame.f_locals)))
        self.frames.append(frame)
        return self.answer(frame, entries) if self.answer else None

    def names(self) -> list[str]:
        return [name for name, _ in self.seen]


# ---- which frames the callback sees ----


def _leaf(x):
    return x + 1


def _middle(x):
    return _leaf(x) * 2


class _Thing:
    def __init__(self, v):
        self.v = v

    def method(self, d):
        return self.v + d

    @classmethod
    def build(cls, v):
        return cls(v)

    @staticmethod
    def static(a):
        return -a


def test_callback_sees_nested_calls_methods_lambdas():
    rec = Recorder()
    square = lambda z: z * z  # noqa: E731
    with callback(rec):
        out = _middle(3)
        t = _Thing.build(4)
        m = t.method(1) + _Thing.static(2) + square(3)
    assert (out, m) == (8, 12)
    assert rec.names() == ["_middle", "_leaf", "build", "__init__", "method", "static", "<lambda>"]


def test_callback_sees_calls_after_specialization():
    for _ in range(200):  # let the interpreter specialize (and, without a hook, inline) the call
        _middle(1)
    rec = Recorder()
    with callback(rec):
        for _ in range(3):
            _middle(1)
    assert rec.names() == ["_middle", "_leaf"] * 3


def test_comprehension_frames():
    def build(n):
        return [i * i for i in range(n)]

    rec = Recorder()
    with callback(rec):
        assert build(4) == [0, 1, 4, 9]
    expected = ["build", "<listcomp>"] if sys.version_info < (3, 12) else ["build"]  # inlined since 3.12 (PEP 709)
    assert rec.names() == expected
    if sys.version_info < (3, 12):
        assert rec.seen[1][1] == {".0": rec.seen[1][1][".0"]}


def test_frames_inside_the_callback_run_normally():
    inner = []

    def answer(frame, entries):
        inner.append(_leaf(1))  # not seen: the hook is off while the callback runs
        return None

    rec = Recorder(answer)
    with callback(rec):
        _middle(1)
    assert rec.names() == ["_middle", "_leaf"]
    assert inner == [2, 2]


def test_generators_and_coroutines_are_not_intercepted():
    def gen(n):
        yield from range(n)

    async def coro(x):
        return x + 1

    def uses(n):
        return sum(gen(n))

    rec = Recorder()
    with callback(rec):
        assert uses(4) == 6
        c = coro(1)
        with pytest.raises(StopIteration) as stop:
            c.send(None)
    assert stop.value.value == 2
    assert rec.names() == ["uses"]


def test_generator_code_entries_never_run():
    def gen():
        yield 1

    def other():
        yield 2

    hook.add_cache_entry(gen.__code__, hook.CacheEntry(lambda f_locals: True, other.__code__))
    with callback(False):
        assert list(gen()) == [1]


def test_module_level_code_is_not_intercepted():
    rec = Recorder()
    with callback(rec):
        exec(compile("y = 1 + 1\n", "<test>", "exec"), {})
        namespace: dict = {}
        exec("class K:\n    a = 1\n", namespace)
    assert rec.names() == []


# ---- f_locals ----


def test_f_locals_holds_arguments_by_name():
    def f(a, b=2, /, c=3, *args, d, e=5, **kwargs):
        return a

    rec = Recorder()
    with callback(rec):
        f(1, 20, 30, 40, 50, d=4, z=9)
        f(1, d=7)
    assert rec.seen[0][1] == {"a": 1, "b": 20, "c": 30, "args": (40, 50), "d": 4, "e": 5, "kwargs": {"z": 9}}
    assert rec.seen[1][1] == {"a": 1, "b": 2, "c": 3, "args": (), "d": 7, "e": 5, "kwargs": {}}


def test_f_locals_holds_free_variables_and_cell_arguments():
    def outer(x):
        y = [x]
        unbound_later = None  # noqa: F841

        def inner(q):
            def uses_q():
                return q

            return x + y[0] + q + uses_q()

        return inner

    fn = outer(10)
    rec = Recorder()
    with callback(rec):
        assert fn(1) == 22
    # q is an argument that is also a cell (captured by uses_q): the hook reads it before MAKE_CELL.
    assert rec.seen[0] == ("inner", {"q": 1, "x": 10, "y": [10]})
    frame = rec.frames[0]
    assert frame.closure is fn.__closure__ and frame.f_func is fn
    assert frame.f_globals is globals() and frame.f_builtins["len"] is len


def test_f_locals_skips_empty_cells():
    def outer():
        def inner():
            return later if later_bound else None

        later_bound = False
        first = inner()  # `later` is still an empty cell
        later = 1
        later_bound = True
        return first, inner()

    rec = Recorder()
    with callback(rec):
        assert outer() == (None, 1)
    assert rec.seen == [("outer", {}), ("inner", {"later_bound": False}), ("inner", {"later_bound": True, "later": 1})]


def test_f_locals_class_cell_of_super():
    class Base:
        def f(self, x):
            return x

    class Child(Base):
        def f(self, x):
            return super().f(x) + 1

    c = Child()
    rec = Recorder()
    with callback(rec):
        assert c.f(1) == 2
    assert rec.seen[0] == ("f", {"self": c, "x": 1, "__class__": Child})


# ---- skip ----


def test_skip_code_runs_as_is_but_callees_are_seen():
    rec = Recorder()
    hook.skip_code(_middle.__code__)
    assert hook.is_skipped(_middle.__code__)
    with callback(rec):
        assert _middle(1) == 4
    assert rec.names() == ["_leaf"]
    hook.reset_code(_middle.__code__)
    assert not hook.is_skipped(_middle.__code__)
    with callback(rec):
        _middle(1)
    assert rec.names() == ["_leaf", "_middle", "_leaf"]


def test_callback_can_skip_code():
    def answer(frame, entries):
        hook.skip_code(frame.f_code)
        return None

    rec = Recorder(answer)
    with callback(rec):
        for _ in range(3):
            _middle(1)
    assert rec.names() == ["_middle", "_leaf"]
    hook.reset_code_caches()
    assert not hook.is_skipped(_middle.__code__)


def test_skip_recursive_runs_the_frame_and_its_callees_as_they_are():
    rec = Recorder(lambda frame, entries: hook.SKIP_RECURSIVE if frame.f_code is _middle.__code__ else None)
    with callback(rec):
        assert _middle(2) == 6
        assert _leaf(1) == 2
    assert rec.names() == ["_middle", "_leaf"]


# ---- cache entries ----


def _add(a, b):
    return a + b


def _mul(a, b):
    return a * b


def _sub(a, b):
    return a - b


def test_cached_entry_runs_in_place_of_the_code():
    calls = []

    def check(f_locals):
        calls.append(dict(f_locals))
        return f_locals["a"] == 3

    hook.add_cache_entry(_add.__code__, hook.CacheEntry(check, _mul.__code__))
    rec = Recorder()
    with callback(rec):
        assert _add(3, 4) == 12  # the entry's code ran
        assert _add(2, 4) == 6  # the check failed: the callback ran, then the original code
    assert calls == [{"a": 3, "b": 4}, {"a": 2, "b": 4}]
    assert rec.names() == ["_add"]


def test_callback_answer_is_cached_and_run():
    made = []

    def answer(frame, entries):
        assert entries == hook.cache_entries(frame.f_code)
        entry = hook.CacheEntry(lambda f_locals: f_locals["b"] == 4, _mul.__code__, guards=["b == 4"])
        made.append(entry)
        return entry

    rec = Recorder(answer)
    with callback(rec):
        assert _add(3, 4) == 12
        assert _add(5, 4) == 20  # cached: no callback
        assert _add(5, 5) == 25  # recompiled: the new entry comes first
    assert rec.names() == ["_add", "_add"]
    assert hook.cache_entries(_add.__code__) == made[::-1]
    assert made[0].guards == ["b == 4"]


def test_entries_are_tried_newest_first_and_the_first_passing_runs():
    order = []

    def check(name, result):
        def fn(f_locals):
            order.append(name)
            return result

        return fn

    hook.add_cache_entry(_add.__code__, hook.CacheEntry(check("old", True), _sub.__code__))
    hook.add_cache_entry(_add.__code__, hook.CacheEntry(check("mid", True), _mul.__code__))
    hook.add_cache_entry(_add.__code__, hook.CacheEntry(check("new", False), _add.__code__))
    with callback(False):
        assert _add(5, 3) == 15
    assert order == ["new", "mid"]


def test_returning_an_added_entry_does_not_duplicate_it():
    def answer(frame, entries):
        if frame.f_code is not _add.__code__:
            return None
        entry = hook.CacheEntry(lambda f_locals: True, _mul.__code__)
        hook.add_cache_entry(frame.f_code, entry)
        return entry

    with callback(answer):
        assert _add(2, 5) == 10
    assert len(hook.cache_entries(_add.__code__)) == 1


def test_entry_with_the_original_code_runs_the_frame():
    hook.add_cache_entry(_add.__code__, hook.CacheEntry(lambda f_locals: True, _add.__code__))
    with callback(False):
        assert _add(2, 5) == 7
    assert not hook.is_skipped(_add.__code__)


def test_run_only_mode_never_calls_back():
    hook.add_cache_entry(_add.__code__, hook.CacheEntry(lambda f_locals: f_locals["a"] > 0, _mul.__code__))
    with callback(False):
        assert hook.get_eval_frame_callback() is False
        assert (_add(2, 5), _add(-2, 5)) == (10, 3)
        assert _middle(1) == 4


def test_replacement_gets_keyword_only_varargs_and_kwargs():
    def orig(a, b=2, /, c=3, *args, d, e=5, **kwargs):
        return "orig"

    def repl(a, b=2, /, c=3, *args, d, e=5, **kwargs):
        total = 0  # a local the original does not have
        for v in (a, b, c, *args, d, e, *kwargs.values()):
            total += v
        return (a, b, c, args, d, e, kwargs, total)

    checked = []
    hook.add_cache_entry(orig.__code__, hook.CacheEntry(lambda f_locals: not checked.append(f_locals), repl.__code__))
    with callback(False):
        assert orig(1, 20, 30, 40, 50, d=4, z=9, a=100) == (1, 20, 30, (40, 50), 4, 5, {"z": 9, "a": 100}, 259)
        assert orig(1, d=7) == (1, 2, 3, (), 7, 5, {}, 18)
        many = orig(*range(30), d=1, **{f"k{i}": i for i in range(20)})
    assert many[3] == tuple(range(3, 30)) and len(many[6]) == 20
    assert checked[0] == {"a": 1, "b": 20, "c": 30, "args": (40, 50), "d": 4, "e": 5, "kwargs": {"z": 9, "a": 100}}
    assert checked[1] == {"a": 1, "b": 2, "c": 3, "args": (), "d": 7, "e": 5, "kwargs": {}}


def test_replacement_uses_the_frames_globals_and_closure():
    def make(k):
        def orig(x):
            return x + k

        return orig

    def make_repl(k):
        def repl(x):
            cell_local = [x]

            def uses():  # a new cell the original does not have
                return cell_local[0]

            return (uses() * k, _leaf(0))

        return repl

    f3, f5 = make(3), make(5)
    code = make_repl(0).__code__
    hook.add_cache_entry(f3.__code__, hook.CacheEntry(lambda f_locals: True, code))
    rec = Recorder()
    with callback(rec):
        assert f3(2) == (6, 1)
        assert f5(2) == (10, 1)  # same code, another closure
        assert f3(4) == (12, 1)
    # frames entered by the replacement see the hook again
    assert rec.names() == ["uses", "_leaf"] * 3


def test_replacement_must_match_the_signature():
    def one(a):
        return a

    hook.add_cache_entry(_add.__code__, hook.CacheEntry(lambda f_locals: True, one.__code__))
    with callback(False), pytest.raises(TypeError, match="does not take the arguments"):
        _add(1, 2)


def test_bad_arguments_and_answers():
    with pytest.raises(TypeError, match="None, False or a callable"):
        hook.set_eval_frame(3)
    with pytest.raises(TypeError, match="check_fn must be callable"):
        hook.CacheEntry(1, _add.__code__)
    with pytest.raises(TypeError, match="code must be a code object"):
        hook.CacheEntry(len, _add)
    answer_42 = lambda frame, entries: 42 if frame.f_code is _add.__code__ else None  # noqa: E731
    with pytest.raises(TypeError, match="must return a CacheEntry"), callback(answer_42):
        _add(1, 2)


def test_cache_entry_subclass_and_attributes():
    class Entry(hook.CacheEntry):
        pass

    e = Entry(len, _mul.__code__, compile_id=7)
    assert (e.check_fn, e.code, e.compile_id) == (len, _mul.__code__, 7)
    assert "_mul" in repr(e)
    with pytest.raises(AttributeError):
        e.code = _add.__code__


def test_turning_the_hook_off_restores_normal_evaluation():
    hook.add_cache_entry(_add.__code__, hook.CacheEntry(lambda f_locals: True, _mul.__code__))
    rec = Recorder()
    assert not hook.hook_installed()
    assert hook.set_eval_frame(rec) is None
    assert hook.get_eval_frame_callback() is rec and hook.hook_installed()
    assert _add(2, 5) == 10
    assert hook.set_eval_frame(False) is rec and hook.hook_installed()
    assert hook.set_eval_frame(None) is False
    assert hook.get_eval_frame_callback() is None and not hook.hook_installed()
    assert _add(2, 5) == 7
    assert _middle(1) == 4
    assert rec.names() == []


def test_replacement_built_with_the_bytecode_library():
    bytecode = pytest.importorskip("bytecode")

    def orig(x, *, scale=2):
        return x * scale + 1

    code = bytecode.Bytecode.from_code(orig.__code__)
    for instr in code:
        if isinstance(instr, bytecode.Instr) and instr.name == "LOAD_CONST" and instr.arg == 1:
            instr.arg = 100
    transformed = code.to_code()
    hook.add_cache_entry(orig.__code__, hook.CacheEntry(lambda f_locals: f_locals["scale"] == 2, transformed))
    with callback(False):
        assert (orig(3), orig(3, scale=3)) == (106, 10)


def test_a_compiled_function_called_inside_the_callback_sees_its_own_callback():
    inner_seen = []

    def inner_callback(frame, entries):
        inner_seen.append(frame.f_code.co_name)
        return None

    def answer(frame, entries):
        assert hook.get_eval_frame_callback() is None  # the hook is off while the callback runs
        previous = hook.set_eval_frame(inner_callback)
        try:
            _leaf(1)
        finally:
            hook.set_eval_frame(previous)
        return None

    rec = Recorder(answer)
    with callback(rec):
        assert _middle(1) == 4
        assert hook.get_eval_frame_callback() is rec
    assert rec.names() == ["_middle", "_leaf"]
    assert inner_seen == ["_leaf", "_leaf"]


def test_the_callers_frame_is_the_callbacks_parent():
    callers = []

    def answer(frame, entries):
        callers.append(sys._getframe(2).f_code.co_name)  # 1 is Recorder.__call__
        return None

    rec = Recorder(answer)
    with callback(rec):
        _middle(1)
    assert callers == ["test_the_callers_frame_is_the_callbacks_parent", "_middle"]
