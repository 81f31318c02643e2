"""Graph breaks, resume functions, side effects and dynamic shapes, through ``compile_frame``."""

from __future__ import annotations

import collections.abc

import pytest

import ember
from ember.dynamo.bytecode_testing import Recorder, compile_and_run
from ember.dynamo.exc import graph_break_log
from ember.dynamo.resume_execution import is_resume_code

COUNTER = 0


def same(a, b) -> bool:
    if isinstance(a, ember.Tensor):
        return isinstance(b, ember.Tensor) and a.shape == b.shape and bool(ember.allclose(a, b, atol=1e-6))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def test_break_at_print_resumes_with_stack_and_locals(capsys):
    def f(x, items):
        acc = [x * 2]
        y = x + 1
        print("middle", len(acc))
        acc.append(y * 3)
        return ember.cat(acc), items

    x = ember.randn(3)
    expected = f(x, [1])
    rec = Recorder()
    got, cf = compile_and_run(f, x, [1], backend=rec)
    assert same(got, expected)
    assert rec.frame_count == 1  # the resume function is compiled when it runs under the hook
    out = capsys.readouterr().out
    assert out.count("middle 1") == 2
    consts = [c for c in cf.code.co_consts if callable(c) and hasattr(c, "__code__")]
    assert any(is_resume_code(c.__code__) for c in consts)
    record = graph_break_log[-1]
    assert "print" in record.reason
    assert record.frames[-1].line.startswith('print("middle"')


def test_break_keeps_call_in_progress_on_the_stack():
    def g(x):
        print("g")
        return x + 1

    def f(x):
        return ember.add(x * 2, g(x))

    x = ember.randn(2)
    got, cf = compile_and_run(f, x)
    assert same(got, f(x)) and cf is not None


def test_data_dependent_branch_resumes_both_ways():
    def f(x):
        y = x * 2
        if y.sum() > 0:
            return y + 1
        return y - 1

    for sign in (1.0, -1.0):
        x = ember.ones(3) * sign
        got, cf = compile_and_run(f, x)
        assert same(got, f(x))
        assert cf is not None


def test_break_inside_loop_runs_frame_eagerly():
    def f(x):
        for i in range(2):
            x = x + i
            print(i)
        return x

    x = ember.randn(2)
    got, cf = compile_and_run(f, x)
    assert cf is None and same(got, f(x))


def test_side_effects_on_globals_and_cells():
    count = [0]

    def f(x):
        global COUNTER
        COUNTER += 1
        count[0] += 2
        return x * COUNTER

    x = ember.randn(2)
    before = COUNTER
    got, _cf = compile_and_run(f, x)
    assert before + 1 == COUNTER and count[0] == 2
    assert same(got, x * COUNTER)


def test_nonlocal_store_replayed():
    def make():
        n = 0

        def f(x):
            nonlocal n
            n += 1
            return x + n

        return f, lambda: n

    f, read = make()
    got, _cf = compile_and_run(f, ember.zeros(2))
    assert read() == 1 and same(got, ember.ones(2))


def test_inplace_mutates_the_input():
    def f(x):
        x.mul_(3)
        return x

    x = ember.ones(2)
    got, _cf = compile_and_run(f, x)
    assert got is x and same(x, ember.full((2,), 3.0))


def test_try_except_finally_and_with_no_exception():
    def f(x):
        try:
            y = x + 1
        except ValueError:
            y = x - 1
        finally:
            z = 2
        with ember.enable_grad():
            w = y * z
        return w

    got, cf = compile_and_run(f, ember.ones(2))
    assert cf is not None and same(got, f(ember.ones(2)))


class Store(collections.abc.MutableMapping):
    def __init__(self):
        self.data = {}

    def __getitem__(self, k):
        return self.data[k]

    def __setitem__(self, k, v):
        self.data[k] = v

    def __delitem__(self, k):
        del self.data[k]

    def __iter__(self):
        return iter(self.data)

    def __len__(self):
        return len(self.data)


def test_mutable_mapping_subclass():
    def f(x, s):
        s["a"] = x * 2
        return s["a"] + len(s)

    s1, s2 = Store(), Store()
    expected = f(ember.ones(2), s1)
    got, cf = compile_and_run(f, ember.ones(2), s2)
    assert cf is not None and same(got, expected) and same(s2.data, s1.data)


def test_dynamic_shapes():
    def f(x):
        return (x * 2).sum(0) + x.shape[0]

    x = ember.randn(5, 3)
    rec = Recorder()
    got, cf = compile_and_run(f, x, backend=rec, dynamic=True)
    assert same(got, f(x))
    assert cf.shape_env is not None and cf.shape_inputs
    placeholders = [n for n in rec.graphs[0].graph.nodes if n.op == "placeholder"]
    assert len(placeholders) >= 2  # the tensor and its symbolic sizes
    guards = cf.shape_env.produce_guards([v for v, _ in cf.shape_inputs], [s.name() for _, s in cf.shape_inputs])
    assert isinstance(guards, list)


def test_allow_in_graph():
    from ember.dynamo.trace_rules import allow_in_graph

    def opaque(x):
        return x * 5

    allow_in_graph(opaque)

    def f(x):
        return opaque(x) + 1

    rec = Recorder()
    got, _cf = compile_and_run(f, ember.ones(2), backend=rec)
    assert same(got, f(ember.ones(2)))
    assert any(n.target is opaque for n in rec.graphs[0].graph.nodes)


@pytest.mark.parametrize("construct", ["raise", "yield_in_frame"])
def test_untraceable_frames_fall_back(construct):
    def raising(x):
        y = x + 1
        raise ValueError(f"boom {y.shape}")

    def generator(x):
        yield x + 1

    fn = raising if construct == "raise" else generator
    got = None
    f_locals_x = ember.ones(1)
    if construct == "raise":
        with pytest.raises(ValueError):
            compile_and_run(fn, f_locals_x)
    else:
        got, cf = compile_and_run(fn, f_locals_x)
        assert cf is None
    del got


def test_same_tensor_twice_gets_a_placeholder_and_guard_per_source():
    def f(a, b):
        return a + b * 2

    x = ember.ones(2)
    rec = Recorder()
    got, cf = compile_and_run(f, x, x, backend=rec)
    assert same(got, f(x, x))
    placeholders = [n for n in rec.graphs[0].graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == 2
    names = {g.source.name() for g in cf.guards if g.source is not None}
    assert {"L['a']", "L['b']"} <= names


class Scaled:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return 3

    def __exit__(self, *exc):
        self.log.append("exit")
        return False


def test_user_context_manager():
    def f(x, log):
        with Scaled(log) as k:
            y = x * k
        return y + 1

    log_eager, log_compiled = [], []
    expected = f(ember.ones(2), log_eager)
    got, cf = compile_and_run(f, ember.ones(2), log_compiled)
    assert cf is not None and same(got, expected) and log_compiled == log_eager == ["enter", "exit"]


def test_exceptions_raised_and_caught_inside_the_graph():
    def check(t, n):
        if n < 0:
            raise ValueError("negative")
        return t * n

    def f(x, d):
        out = []
        for i in range(3):
            try:
                try:
                    if i == 1:
                        raise IndexError(i)
                    out.append(x * i)
                finally:
                    out.append(i)
            except IndexError:
                out.append(-1)
        try:
            y = d["missing"]
        except KeyError:
            y = check(x, 2)
        try:
            check(x, -1)
        except ValueError as e:
            msg = str(e)
        return out, y, msg

    rec = Recorder()
    got, cf = compile_and_run(f, ember.ones(2), {"a": 1}, backend=rec)
    assert cf is not None and rec.frame_count == 1
    assert same(got, f(ember.ones(2), {"a": 1}))


def test_generators_run_lazily_with_their_consumer():
    def numbers(log, x):
        for i in range(3):
            log.append(f"yield {i}")
            yield x * i

    def f(x, log):
        total = x
        for v in numbers(log, x):
            log.append("got")
            total = total + v
        return total

    log_eager, log_compiled = [], []
    expected = f(ember.ones(2), log_eager)
    got, cf = compile_and_run(f, ember.ones(2), log_compiled)
    assert cf is not None and same(got, expected) and log_compiled == log_eager


def test_break_inside_no_grad_block_keeps_the_mode():
    def f(x, w):
        with ember.no_grad():
            y = x @ w
            print("no grad")
            z = y * 2
        return z, z.requires_grad, (x @ w).requires_grad

    x, w = ember.randn(2, 3), ember.randn(3, 2, requires_grad=True)
    expected = f(x, w)
    got, cf = compile_and_run(f, x, w)
    assert cf is not None and same(got, expected) and ember.is_grad_enabled()


def test_break_at_data_dependent_subscript():
    def f(x):
        y = x * 3
        picked = y[y > 0]
        return picked.sum() + y.mean()

    x = ember.tensor([1.0, -2.0, 3.0])
    got, cf = compile_and_run(f, x)
    assert cf is not None and same(got, f(x))


def test_itertools_and_deque():
    import collections
    import itertools

    def f(xs):
        window = collections.deque(maxlen=2)
        for x in xs:
            window.append(x)
        pairs = [a * b for a, b in itertools.product(xs[:2], repeat=2)]
        return list(itertools.accumulate(xs)), sum(window), pairs, list(itertools.chain(xs, [xs[0]]))

    xs = [ember.randn(2) for _ in range(3)]
    got, cf = compile_and_run(f, xs)
    assert cf is not None and same(got, f(xs))


def test_closures_made_inside_escape():
    def f(x):
        k = 2

        def scale(t):
            return t * k

        def fact(n):
            return 1 if n <= 1 else n * fact(n - 1)

        k = 3
        return scale(x) * fact(3), scale, fact

    x = ember.ones(2)
    got, cf = compile_and_run(f, x)
    expected = f(x)
    assert cf is not None and same(got[0], expected[0])
    assert same(got[1](x), expected[1](x)) and got[2](4) == 24


def test_closure_is_live_across_a_break():
    def f(x):
        k = 2
        add = lambda t: t + k  # noqa: E731
        print("between")
        return add(x)

    x = ember.ones(2)
    got, cf = compile_and_run(f, x)
    assert cf is not None and same(got, f(x))


def test_logging_breaks_the_graph(caplog):
    import logging

    log = logging.getLogger("capture-test")

    def f(x):
        y = x + 1
        log.warning("value %d", 3)
        return y * 2

    with caplog.at_level(logging.WARNING, logger="capture-test"):
        got, cf = compile_and_run(f, ember.ones(2))
    assert cf is not None and same(got, f(ember.ones(2)))
    assert "logging.Logger.warning" in graph_break_log[-1].reason
    assert [r.getMessage() for r in caplog.records].count("value 3") == 2
