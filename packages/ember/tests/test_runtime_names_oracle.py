"""PyTorch's top-level runtime names against PyTorch: housekeeping, symbolic-number functions, error
types, streams and events, futures, op schemas and tags, control flow and ``TorchVersion``."""

from __future__ import annotations

import platform
import sys
import threading
import warnings

import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")


def _outcome(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", fn()
        except Exception as e:  # the type is what is compared
            return "raises", type(e)


def test_warn_always_defaults_and_toggles_like_pytorch():
    assert ember.is_warn_always_enabled() == torch.is_warn_always_enabled() is False
    try:
        ember.set_warn_always(True)
        torch.set_warn_always(True)
        assert ember.is_warn_always_enabled() == torch.is_warn_always_enabled() is True
    finally:
        ember.set_warn_always(False)
        torch.set_warn_always(False)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("is_autocast_cpu_enabled", ()),
        ("get_autocast_cpu_dtype", ()),
        ("get_autocast_gpu_dtype", ()),
    ],
)
def test_deprecated_autocast_getters_like_pytorch(name, args):
    with warnings.catch_warnings(record=True) as ours_w:
        warnings.simplefilter("always")
        ours = getattr(ember, name)(*args)
    with warnings.catch_warnings(record=True) as theirs_w:
        warnings.simplefilter("always")
        theirs = getattr(torch, name)(*args)
    assert str(ours).removeprefix("ember.") == str(theirs).removeprefix("torch.")
    assert [w.category for w in ours_w] == [w.category for w in theirs_w] == [DeprecationWarning]
    assert "is deprecated" in str(ours_w[0].message)


def test_deprecated_autocast_setters_like_pytorch():
    for lib in (ember, torch):
        before = (lib.get_autocast_dtype("cpu"), lib.get_autocast_dtype("cuda"), lib.is_autocast_enabled("cpu"))
        try:
            with pytest.warns(DeprecationWarning, match="deprecated"):
                lib.set_autocast_cpu_dtype(lib.float16)
            with pytest.warns(DeprecationWarning, match="deprecated"):
                lib.set_autocast_gpu_dtype(lib.bfloat16)
            with pytest.warns(DeprecationWarning, match="deprecated"):
                lib.set_autocast_cpu_enabled(True)
            assert lib.get_autocast_dtype("cpu") is lib.float16
            assert lib.get_autocast_dtype("cuda") is lib.bfloat16
            assert lib.is_autocast_enabled("cpu") is True
        finally:
            lib.set_autocast_dtype("cpu", before[0])
            lib.set_autocast_dtype("cuda", before[1])
            lib.set_autocast_enabled("cpu", before[2])


def test_build_flags_and_small_functions():
    for name in ("has_lapack", "has_openmp", "has_spectral"):
        assert isinstance(getattr(ember, name), bool)
    assert ember.has_lapack and ember.has_spectral  # NumPy's LAPACK and FFT
    assert ember.init_num_threads() is None and torch.init_num_threads() is None
    assert ember.prepare_multiprocessing_environment("x") is None
    import os

    assert ember.get_file_path("a", "b") == os.path.join(os.path.dirname(os.path.dirname(ember.__file__)), "a", "b")
    assert ember.thread_safe_generator() is None is torch.thread_safe_generator()


def test_classproperty_like_pytorch():
    for lib in (ember, torch):

        class Config:
            scale = 3

            @lib.classproperty
            def doubled(cls):
                return cls.scale * 2

        assert Config.doubled == 6 and Config().doubled == 6


def test_set_flush_denormal_flushes_like_pytorch():
    tiny = 1e-310  # a float64 denormal
    ours = ember.set_flush_denormal(True)
    try:
        flushed = (ember.tensor([tiny], dtype=ember.float64) * 1.0).item()
    finally:
        assert ember.set_flush_denormal(False) is ours
    assert isinstance(ours, bool)
    if ours:
        assert flushed == 0.0
    assert (ember.tensor([tiny], dtype=ember.float64) * 1.0).item() == tiny
    theirs = torch.set_flush_denormal(True)
    torch.set_flush_denormal(False)
    if sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64"):
        assert ours == theirs  # the same CPU, with SSE3: the same answer
    with pytest.raises(TypeError):
        ember.set_flush_denormal(1)


@pytest.mark.parametrize("name", ["sym_constrain_range", "sym_constrain_range_for_size"])
@pytest.mark.parametrize(
    ("value", "bounds"),
    [(-5, {}), (5, {"max": 3}), (-1, {"max": 3}), (1, {"min": 2}), (0, {}), (1, {}), (3, {"min": 5, "max": 2})],
)
def test_constrain_range_on_ints_like_pytorch(name, value, bounds):
    ours = _outcome(lambda: getattr(ember, name)(value, **bounds))
    theirs = _outcome(lambda: getattr(torch, name)(value, **bounds))
    assert ours == theirs
    if ours[0] == "raises":
        with pytest.raises(RuntimeError) as ours_error:
            getattr(ember, name)(value, **bounds)
        with pytest.raises(RuntimeError) as theirs_error:
            getattr(torch, name)(value, **bounds)
        assert str(ours_error.value) == str(theirs_error.value)


def test_sym_functions_on_numbers_like_pytorch():
    for args in ((4,), (2.25,), (0,)):
        assert ember.sym_sqrt(*args) == torch.sym_sqrt(*args)
    for args in (([1, 2, 3],), (1.5, 2), ([],), ((4, 5),)):
        assert ember.sym_sum(*args) == torch.sym_sum(*args)
    assert ember.sym_fresh_size(7) == torch.sym_fresh_size(7) == 7


def test_error_types_like_pytorch():
    for name in ("AcceleratorError", "OutOfMemoryError", "FatalError"):
        ours, theirs = getattr(ember, name), getattr(torch, name)
        assert [c.__name__ for c in ours.__mro__[1:]] == [c.__name__ for c in theirs.__mro__[1:]]
    assert ember.cuda.OutOfMemoryError is ember.OutOfMemoryError
    assert torch.cuda.OutOfMemoryError is torch.OutOfMemoryError


def _host_stream_calls(lib):
    s, e = lib.Stream(), lib.Event()
    return {
        "repr": _outcome(lambda: repr(s).replace(lib.__name__, "lib")),
        "device": _outcome(lambda: str(s.device)),
        "index": _outcome(lambda: s.device_index),
        "id": _outcome(lambda: s.stream_id),
        "query": _outcome(s.query),
        "synchronize": _outcome(s.synchronize),
        "capturing": _outcome(s.is_capturing),
        "equal": _outcome(lambda: s == lib.Stream("cpu") and s != 1),
        "record_event": _outcome(lambda: s.record_event(e)),
        "wait_event": _outcome(lambda: s.wait_event(e)),
        "wait_stream": _outcome(lambda: s.wait_stream(lib.Stream())),
        "native_handle": _outcome(lambda: s.native_handle),
        "context": _outcome(lambda: s.__enter__() is not None and s.__exit__(None, None, None)),
        "event_repr": _outcome(lambda: repr(lib.Event(enable_timing=True)).replace(lib.__name__, "lib")),
        "event_query": _outcome(e.query),
        "event_sync": _outcome(e.synchronize),
        "event_wait": _outcome(e.wait),
        "event_record": _outcome(e.record),
        "elapsed_untimed": _outcome(lambda: e.elapsed_time(lib.Event())),
        "elapsed_timed": _outcome(lambda: lib.Event(enable_timing=True).elapsed_time(lib.Event(enable_timing=True))),
        "meta": _outcome(lambda: repr(lib.Stream("meta")).replace(lib.__name__, "lib")),
        "index_without_accelerator": _outcome(lambda: lib.Stream(0)),
    }


def test_host_streams_and_events_like_pytorch():
    assert _host_stream_calls(ember) == _host_stream_calls(torch)


def test_futures_like_pytorch():
    for lib in (ember, torch):
        f = lib.futures.Future()
        assert not f.done()
        child = f.then(lambda fut: fut.value() * 2)
        seen = []
        f.add_done_callback(lambda fut, seen=seen: seen.append(fut.value()))
        f.set_result(5)  # here, so that the callbacks have run when it returns
        assert f.wait() == 5 and child.wait() == 10 and seen == [5]
        late = lib.futures.Future()
        threading.Timer(0.01, lambda late=late: late.set_result(7)).start()
        assert late.wait() == 7
        with pytest.raises(RuntimeError, match="completed Future as complete again"):
            f.set_result(6)
        failing = lib.futures.Future()
        after = failing.then(lambda fut: 1 / 0)
        failing.set_result(1)
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            after.wait()
        bad = lib.futures.Future()
        bad.set_exception(ValueError("boom"))
        with pytest.raises(ValueError, match="boom"):
            bad.wait()
        a, b = lib.futures.Future(), lib.futures.Future()
        both = lib.futures.collect_all([a, b])
        a.set_result(1)
        assert not both.done()
        b.set_result(2)
        assert [x.value() for x in both.wait()] == [1, 2]
        assert lib.futures.wait_all([a, b]) == [1, 2]
        with pytest.raises(AssertionError, match="not an Exception"):
            lib.futures.Future().set_exception(3)
        with pytest.raises(ValueError, match="indices"):
            lib.futures.Future(devices=["cpu"])
    assert ember.Future is ember.futures.Future


SCHEMAS = [
    "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    'foo(int[2] x, Tensor? y=None, float z=1.5, str m="mean") -> (Tensor a, Tensor b)',
    "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
]


@pytest.mark.parametrize("text", SCHEMAS)
def test_parse_schema_like_pytorch(text):
    ours, theirs = ember.parse_schema(text), torch.parse_schema(text)
    assert isinstance(ours, ember.FunctionSchema)
    assert (ours.name, ours.overload_name, str(ours), ours.is_mutable) == (
        theirs.name,
        theirs.overload_name,
        str(theirs),
        theirs.is_mutable,
    )
    assert len(ours.arguments) == len(theirs.arguments)
    assert len(ours.returns) == len(theirs.returns)
    pairs = zip(list(ours.arguments) + list(ours.returns), list(theirs.arguments) + list(theirs.returns), strict=True)
    for a, b in pairs:
        assert isinstance(a, ember.Argument)
        assert (a.name, a.default_value, a.kwarg_only, a.is_out, a.N, a.is_write) == (
            b.name,
            b.default_value,
            b.kwarg_only,
            b.is_out,
            b.N,
            b.is_write,
        )
        assert (a.alias_info is None) == (b.alias_info is None)
        if a.alias_info is not None:
            assert a.alias_info.before_set == b.alias_info.before_set
            assert a.alias_info.after_set == b.alias_info.after_set


def test_parse_schema_refuses_what_pytorch_refuses():
    with pytest.raises(RuntimeError):
        torch.parse_schema("garbage")
    with pytest.raises(RuntimeError):
        ember.parse_schema("garbage")


def test_tags_hold_pytorchs_and_answer_for_the_op_table():
    assert set(torch.Tag.__members__) <= set(ember.Tag.__members__)
    assert ember.Tag.pointwise in ember.ops.aten.add.Tensor.tags
    assert torch.Tag.pointwise in torch.ops.aten.add.Tensor.tags
    assert ember.Tag.reduction not in ember.ops.aten.add.Tensor.tags


CONDITIONS = [True, False, 1, 0.0, "tensor_true", "tensor_float", "tensor_two", "text"]


def _pred(lib, kind):
    return {
        "tensor_true": lambda: lib.tensor(True),
        "tensor_float": lambda: lib.tensor(1.0),
        "tensor_two": lambda: lib.tensor([True, False]),
        "text": lambda: "a",
    }.get(kind, lambda: kind)()


@pytest.mark.parametrize("kind", CONDITIONS)
def test_cond_like_pytorch(kind):
    def run(lib):
        x = lib.arange(4.0)
        return lib.cond(_pred(lib, kind), lambda a: a + 1, lambda a: a - 1, (x,))

    ours, theirs = _outcome(lambda: run(ember)), _outcome(lambda: run(torch))
    assert ours[0] == theirs[0]
    if ours[0] == "ok":
        assert ours[1].tolist() == theirs[1].tolist()
    else:
        assert ours[1] is theirs[1]


def test_cond_with_structured_operands_and_outputs_like_pytorch():
    for lib in (ember, torch):
        x = lib.arange(3.0)
        out = lib.cond(False, lambda d: {"y": d["a"] + 1}, lambda d: {"y": d["a"] * 3}, ({"a": x},))
        assert out["y"].tolist() == [0.0, 3.0, 6.0]
        assert lib.cond(True, lambda lib=lib: lib.ones(2), lambda lib=lib: lib.zeros(2)).tolist() == [1.0, 1.0]


# PyTorch's eager while_loop compiles the loop with torch.compile, whose frame hook then stays
# installed in the process and stops ember.compile: while_loop is tested without the oracle
# (tests/test_runtime_names.py).


VERSIONS = ["2.13.0+cpu", "2.13", "2.13.1", "2.13.0rc1", "2.13.0.post1", "2.13.0.dev20240101", "1!0.1", "1.0+abc.5"]
OTHERS = [*VERSIONS, (2, 13), (2, 13, 0), (2, 14), (2,), "1.0+5", "1.0b2.post3.dev4", "1.0-1", "1.0alpha"]


def test_torch_version_compares_like_pytorch():
    from torch.torch_version import TorchVersion as Theirs

    from ember.torch_version import TorchVersion as Ours

    for text in VERSIONS:
        for other in OTHERS:
            for op in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
                assert getattr(Ours(text), op)(other) == getattr(Theirs(text), op)(other), (text, other, op)
    assert isinstance(ember.__version__, Ours) and isinstance(ember.__version__, str)
    assert ember.__version__ >= "0.0.1" and ember.__version__ > (0,)
