"""The compiled common case of small eager ops (ember.core._fastpath) against the Python it stands for.

Each check runs a call twice, once with the C functions and once with them switched off, and wants the
same tensor (sizes, strides, offset, storage, base, values) or the same error. A subprocess checks that
Ember runs with the extension switched off (``EMBER_FASTPATH=0``), as it does where it was not built.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

import ember
from ember.core import dispatch, fastpath
from ember.core.aten.indexing import indexing
from ember.core.aten.shape import views
from ember.core.tensor import Tensor

tensor_module = sys.modules["ember.core.tensor"]  # (ember.core.tensor is also the function ember.tensor)
native = fastpath.native
needs_native = pytest.mark.skipif(native is None, reason="ember.core._fastpath is not built")


@pytest.fixture
def python_only(monkeypatch):
    """A context that switches every C function off (the path Ember takes without the extension)."""

    def switch_off():
        monkeypatch.setattr(views, "_c", None)
        monkeypatch.setattr(indexing, "_c_getitem", None)
        monkeypatch.setattr(dispatch, "_native_call", None)

    return switch_off


def _tensors():
    base = ember.arange(24, dtype=ember.float32).reshape(2, 3, 4)
    return {
        "contiguous": base,
        "transposed": base.transpose(0, 2),
        "offset slice": base[1:, 1:, ::2],
        "0-d": ember.tensor(3.0),
        "empty": ember.zeros(0, 3),
        "size-1 dims": ember.ones(1, 4, 1),
        "int64": ember.arange(6).reshape(2, 3),
        "meta": ember.empty(2, 3, 4, device="meta"),
    }


def _describe(result, source):
    """What two runs must agree on: the error, or the view's metadata, storage, base and values."""
    if isinstance(result, BaseException):
        return type(result), str(result)
    assert type(result) is Tensor
    values = None if result._array is None else (result._array.copy(), result._array.strides)
    return (
        result._shape,
        result._stride,
        result._offset,
        result.dtype,
        result.device,
        result._storage is source._storage,
        result._base is (source if source._base is None else source._base),
        values,
    )


def _same(a, b, source_a, source_b) -> None:
    da, db = _describe(a, source_a), _describe(b, source_b)
    if isinstance(a, BaseException) or isinstance(b, BaseException):
        assert da == db
        return
    *meta_a, values_a = da
    *meta_b, values_b = db
    assert meta_a == meta_b
    if values_a is None or values_b is None:
        assert values_a is values_b
    else:
        np.testing.assert_array_equal(values_a[0], values_b[0])
        assert values_a[1] == values_b[1]


def _run(fn, *args):
    try:
        return fn(*args)
    except Exception as error:
        return error


CALLS = [
    ("view", lambda t: t.view(-1)),
    ("view sizes", lambda t: t.view(4, -1)),
    ("view tuple", lambda t: t.view((2, 12))),
    ("view two -1", lambda t: t.view(-1, -1)),
    ("view wrong count", lambda t: t.view(5)),
    ("view negative", lambda t: t.view(-2, 12)),
    ("view empty", lambda t: t.view(0, -1)),
    ("view()", lambda t: t.view()),
    ("view past the C range", lambda t: t.view(2**62, 4, -1)),
    ("view dtype", lambda t: t.view(ember.int32) if t.dtype.itemsize == 4 else t.view(ember.int64)),
    ("view op", lambda t: views.view(t, (t.numel(),))),
    ("transpose", lambda t: t.transpose(0, -1)),
    ("transpose out of range", lambda t: t.transpose(0, 5)),
    ("t", lambda t: t.t()),
    ("ember.t", lambda t: ember.t(t)),
    ("unsqueeze 0", lambda t: t.unsqueeze(0)),
    ("unsqueeze -1", lambda t: t.unsqueeze(-1)),
    ("unsqueeze 1", lambda t: t.unsqueeze(1)),
    ("unsqueeze bad", lambda t: t.unsqueeze(7)),
    ("unsqueeze bool", lambda t: t.unsqueeze(True)),
    ("select", lambda t: t.select(0, -1)),
    ("select out of range", lambda t: t.select(0, 9)),
    ("slice op", lambda t: views.slice_(t, -1, 1, None, 2)),
    ("slice op negative bounds", lambda t: views.slice_(t, 0, -5, -1)),
    ("slice op past the end", lambda t: views.slice_(t, 0, 7, 9)),
    ("slice op bad step", lambda t: views.slice_(t, 0, 0, 1, 0)),
    ("slice op huge step", lambda t: views.slice_(t, 0, 0, None, 2**40)),
    ("slice op huge bounds", lambda t: views.slice_(t, 0, -(2**70), 2**63)),
]

INDICES = [
    1,
    -1,
    (0, 1),
    (slice(1, 3), slice(None, None, 2)),
    (None, 0),
    (Ellipsis, 0),
    slice(None),
    (),
    (slice(-2, None), None, slice(None, -1)),
    (slice(5, 1),),
    (0, 0, 0, 0),
    9,
    True,
    (slice(None, None, -1),),
    (slice(0.5, 2),),
    (slice(None, None, 2**40),),
    (slice(-(2**63), 2**63 - 1),),
    "a",
]


@pytest.mark.parametrize("call", [c[1] for c in CALLS], ids=[c[0] for c in CALLS])
def test_view_calls_match_the_python_path(call, python_only, no_dispatching_subclass):
    sources = _tensors()
    fast = {name: _run(call, t) for name, t in sources.items()}
    python_only()
    for name, again in _tensors().items():
        _same(fast[name], _run(call, again), sources[name], again)


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_basic_indexing_matches_the_python_path(index, python_only, no_dispatching_subclass):
    sources = _tensors()
    fast = {name: _run(lambda t: t[index], t) for name, t in sources.items()}
    python_only()
    for name, again in _tensors().items():
        _same(fast[name], _run(lambda t: t[index], again), sources[name], again)


@pytest.fixture
def no_dispatching_subclass(monkeypatch):
    """The flag a dispatching subclass sets for good (an earlier test may have defined one) turns the
    fast path off; these tests see the state of a process that defined none."""
    monkeypatch.setattr(dispatch._flags, "subclasses", False)


@needs_native
def test_the_c_functions_take_the_common_case(no_dispatching_subclass):
    a = ember.ones(4, 6)
    for out in (
        native.view(a, (24,)),
        native.view_method(a, (2, -1)),
        native.transpose(a, 0, 1),
        native.t(a),
        native.unsqueeze(a, 1),
        native.select(a, 0, 1),
        native.slice(a, 1, 1, None, 2),
        native.getitem(a, (slice(1, 3), None, 0)),
        native.method(0, a),
    ):
        assert type(out) is Tensor and out._base is a
    assert native.call(ember.ops.aten.add.Tensor, (a, a), {}) is not fastpath.MISS


@needs_native
def test_make_view_and_wrap_match_python():
    base = ember.arange(12, dtype=ember.float64).reshape(3, 4)
    cases = [((4, 3), (1, 4), 0), ((2,), (5,), 1), ((0, 2), (2, 1), 11), ((), (), 7)]
    for shape, stride, offset in cases:
        fast = tensor_module.make_view(base, shape, stride, offset)
        _same(fast, tensor_module._make_view_python(base, shape, stride, offset), base, base)
    array = np.arange(6.0).reshape(2, 3)
    args = (array, array.nbytes, ember.device("cpu"), (2, 3), (3, 1), ember.float64)
    fast, python = tensor_module._wrap(*args), tensor_module._wrap_python(*args)
    assert (fast._storage.data is python._storage.data is array) and fast._storage.version == 0
    for name in set(type(python._storage).__slots__) - {"__weakref__"}:  # every slot filled, as __init__ does
        assert getattr(fast._storage, name) is getattr(python._storage, name) or name == "version"
    assert _describe(fast, fast)[:5] == _describe(python, python)[:5]


@needs_native
def test_make_view_hands_other_calls_to_python():
    class Sub(Tensor):
        pass

    base = ember.arange(4.0)
    sub = tensor_module._new(Sub, base._storage, (4,), (1,), 0, base.dtype, base._array)
    view = tensor_module.make_view(sub, (2,), (2,), 0)  # a subclass base: the Python function
    assert type(view) is Tensor and view._base is sub
    with pytest.raises(TypeError):
        tensor_module.make_view(base, (2,))


@needs_native
def test_the_dispatcher_fast_path_declines_what_it_must(no_dispatching_subclass):
    a = ember.ones(2, 2)
    op = ember.ops.aten.add.Tensor
    assert native.call(op, (a, a), {}) is not fastpath.MISS
    assert native.call(op, (1.0, 2.0), {}) is fastpath.MISS  # no tensor argument: the Python path decides
    assert native.call(op, (1.0, a), {}) is not fastpath.MISS  # the first tensor argument's device
    a.requires_grad_()
    assert native.call(op, (a, 1.0), {}) is fastpath.MISS
    assert native.call(ember.ops.aten.cat.default, ([ember.ones(1), a],), {}) is fastpath.MISS
    a.requires_grad_(False)

    class Seen(dispatch.DispatchMode):
        def __init__(self):
            self.ops = []

        def __ember_dispatch__(self, func, types, args, kwargs):
            self.ops.append(func)
            return func(*args, **kwargs)

    with Seen() as mode:
        assert native.call(op, (a, a), {}) is fastpath.MISS
        a.view(4)
        a.t()
        a[0]
    assert len(mode.ops) == 3  # each reached the mode, through the Python path


def test_views_under_grad_record_their_nodes():
    pytest.importorskip("ember.autograd")
    x = ember.ones(2, 3, requires_grad=True)
    for y in (x.view(6), x.t(), x.unsqueeze(0), x[1], x[:, ::2], x.transpose(0, 1)):
        assert y.grad_fn is not None
        y.sum().backward()


@needs_native
def test_no_references_or_memory_leak_over_many_calls(no_dispatching_subclass):
    a = ember.ones(8, 8)
    storage, shape, add = a._storage, a._shape, ember.ops.aten.add.Tensor
    counted = [a, storage, shape, storage.data, add, a.dtype, a.device]

    def work():
        for _ in range(200):
            a.view(64).view(8, 8).t().unsqueeze(0)
            a[1:3, ::2], a[5], a[None, 0]
            native.call(add, (a, a), {})
            a + a
            ember.tensor(1.0)
            views.view(a, (64,))

    work()
    gc.collect()
    base = [sys.getrefcount(o) for o in counted]
    tracemalloc.start()
    work()
    gc.collect()
    first, _ = tracemalloc.get_traced_memory()
    for _ in range(5):
        work()
    gc.collect()
    second, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    a._views.prune()
    assert [sys.getrefcount(o) for o in counted] == base
    assert second - first < 64 * 1024


def test_ember_runs_without_the_extension():
    code = (
        "import ember\n"
        "from ember.core import fastpath\n"
        "assert fastpath.native is None\n"
        "a = ember.arange(6.0).reshape(2, 3)\n"
        "b = a.t().unsqueeze(0)[0, 1:, None]\n"
        "assert b.shape == (2, 1, 2) and b.tolist() == [[[1.0, 4.0]], [[2.0, 5.0]]]\n"
        "assert (a + a).sum().item() == 30.0\n"
    )
    env = dict(os.environ, EMBER_FASTPATH="0")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
