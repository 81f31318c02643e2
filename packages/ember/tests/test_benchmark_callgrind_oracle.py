"""``ember.utils.benchmark``'s Callgrind containers against ``torch.utils.benchmark``'s: the same
``FunctionCounts`` and ``CallgrindStats`` built from the same rows in both, every method's result
compared (rows, sums, printed text)."""

import re

import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
from torch.utils import benchmark as tb  # noqa: E402

from ember.utils import benchmark as eb  # noqa: E402

LONG = "/very/long/path/to/build/../aten/src/ATen/native/" + "VeryLongKernelName" * 6 + "(at::Tensor const&)"
ROWS = {
    "empty": [],
    "one": [(7, "a.c:f")],
    "mixed": [
        (120, "/usr/src/python/Objects/dictobject.c:lookdict_unicode [/usr/bin/python3.11]"),
        (90, "/tmp/build1/build/../aten/src/ATen/core/add.cpp:at::add [libtorch_cpu.so]"),
        (-40, "/home/u/cpython/Python/ceval.c:_PyEval_EvalFrameDefault [/usr/bin/python3.11]"),
        (33, LONG),
        (12, "/opt/build/aten/src/ATen/ops/mul.h:at::mul"),
        (5, "???:0x0000000000123abc [/usr/lib/libc.so.6]"),
        (-1234567, "dictobject.c:lookdict_unicode_nodummy"),
    ],
    "many": [(1000 - 37 * i, f"file{i % 7}.c:function_{i}") for i in range(25)],
    "ties": [(3, "b"), (3, "a"), (3, "c"), (-3, "d")],
}
OTHER = [
    (60, "/tmp/build1/build/../aten/src/ATen/core/add.cpp:at::add [libtorch_cpu.so]"),
    (7, "a.c:f"),
    (5, "new.c:g"),
]
HEADER = re.compile(r"^<[\w.]+\.(\w+) object at 0x[0-9a-f]+>", re.M)


def _text(obj) -> str:
    """``repr`` without the package path and address of its first line."""
    return HEADER.sub(r"<\1>", repr(obj))


def _pair(rows, inclusive=False, **kwargs):
    ours = eb.FunctionCounts(tuple(eb.FunctionCount(c, fn) for c, fn in rows), inclusive, **kwargs)
    theirs = tb.FunctionCounts(tuple(tb.FunctionCount(c, fn) for c, fn in rows), inclusive, **kwargs)
    return ours, theirs


def _same(ours, theirs):
    assert [tuple(r) for r in ours] == [tuple(r) for r in theirs]
    assert ours.inclusive == theirs.inclusive
    assert ours.truncate_rows == theirs.truncate_rows
    assert len(ours) == len(theirs)
    assert ours.sum() == theirs.sum()
    assert _text(ours) == _text(theirs)


@pytest.mark.parametrize("name", sorted(ROWS))
@pytest.mark.parametrize("inclusive", [False, True])
@pytest.mark.parametrize("linewidth", [None, 30, 60, 200])
@pytest.mark.parametrize("truncate_rows", [True, False])
def test_repr_and_sum(name, inclusive, linewidth, truncate_rows):
    ours, theirs = _pair(ROWS[name], inclusive, truncate_rows=truncate_rows, _linewidth=linewidth)
    _same(ours, theirs)


@pytest.mark.parametrize("name", sorted(ROWS))
@pytest.mark.parametrize("inclusive", [False, True])
def test_operations(name, inclusive):
    ours, theirs = _pair(ROWS[name], inclusive)
    other_ours, other_theirs = _pair(OTHER, inclusive)
    _same(ours + other_ours, theirs + other_theirs)
    _same(ours - other_ours, theirs - other_theirs)
    _same(other_ours - ours, other_theirs - theirs)
    _same(ours - ours, theirs - theirs)
    for factor in (2, 0.5, -1, 0, 1.7):
        _same(ours * factor, theirs * factor)
    _same(ours.denoise(), theirs.denoise())
    _same(ours.filter(lambda fn: "ATen" in fn), theirs.filter(lambda fn: "ATen" in fn))
    _same(ours.transform(lambda fn: fn.split(":")[0]), theirs.transform(lambda fn: fn.split(":")[0]))
    _same(ours.transform(lambda fn: "one"), theirs.transform(lambda fn: "one"))


@pytest.mark.parametrize("name", sorted(ROWS))
@pytest.mark.parametrize("index", [slice(None), slice(1, 4), slice(None, None, -1), slice(2, 30, 3)])
def test_slicing(name, index):
    ours, theirs = _pair(ROWS[name])
    _same(ours[index], theirs[index])


def test_merging_inclusive_with_exclusive_fails_alike():
    ours, theirs = _pair(ROWS["one"], inclusive=True)
    other_ours, other_theirs = _pair(ROWS["one"], inclusive=False)
    with pytest.raises(AssertionError) as expected:
        theirs + other_theirs
    with pytest.raises(AssertionError) as got:
        ours + other_ours
    assert str(got.value) == str(expected.value)


def _stats(module, spec, number, debug, stmt, base, callgrind_out="out"):
    def counts(rows, inclusive):
        return module.FunctionCounts(tuple(module.FunctionCount(c, fn) for c, fn in rows), inclusive)

    return module.CallgrindStats(
        task_spec=module.TaskSpec(**spec),
        number_per_run=number,
        built_with_debug_symbols=debug,
        baseline_inclusive_stats=counts(base, True),
        baseline_exclusive_stats=counts(base, False),
        stmt_inclusive_stats=counts(stmt + base, True),
        stmt_exclusive_stats=counts(stmt, False),
        stmt_callgrind_out=callgrind_out,
    )


SPECS = [
    {"stmt": "y = x + 1", "setup": "pass"},
    {"stmt": "a = 1\nb = a + 1", "setup": "import math\nx = 2", "label": "L", "sub_label": "S", "num_threads": 4},
]
CASES = [
    (SPECS[0], 100, True, ROWS["mixed"], ROWS["ties"]),
    (SPECS[1], 7, False, ROWS["many"], ROWS["mixed"]),
    (SPECS[0], 1, False, ROWS["one"], ROWS["empty"]),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_callgrind_stats(case):
    ours, theirs = (_stats(m, *CASES[case]) for m in (eb, tb))
    assert _text(ours) == _text(theirs)
    for denoise in (False, True):
        assert ours.counts(denoise=denoise) == theirs.counts(denoise=denoise)
    for inclusive in (False, True):
        _same(ours.stats(inclusive=inclusive), theirs.stats(inclusive=inclusive))
    _same(ours.stats(), theirs.stats())
    other_ours, other_theirs = (_stats(m, *CASES[(case + 1) % len(CASES)]) for m in (eb, tb))
    for inclusive in (False, True):
        _same(ours.delta(other_ours, inclusive=inclusive), theirs.delta(other_theirs, inclusive=inclusive))
    standard_ours, standard_theirs = ours.as_standardized(), theirs.as_standardized()
    assert standard_ours.stmt_callgrind_out is None is standard_theirs.stmt_callgrind_out
    assert _text(standard_ours) == _text(standard_theirs)
    for field in (
        "baseline_inclusive_stats",
        "baseline_exclusive_stats",
        "stmt_inclusive_stats",
        "stmt_exclusive_stats",
    ):
        _same(getattr(standard_ours, field), getattr(standard_theirs, field))
    assert standard_ours.number_per_run == standard_theirs.number_per_run


@pytest.mark.parametrize("value", [1, 2.5, "s", b"b", True, 1j])
def test_copy_if_callgrind(value):
    ours, theirs = eb.CopyIfCallgrind(value, setup="import x"), tb.CopyIfCallgrind(value, setup="import x")
    assert (ours.value, ours.setup, ours.serialization.name) == (theirs.value, theirs.setup, theirs.serialization.name)
    scope = {"n": 3, "w": value}
    assert eb.CopyIfCallgrind.unwrap_all({**scope, "c": ours}) == tb.CopyIfCallgrind.unwrap_all({**scope, "c": theirs})


@pytest.mark.parametrize("value", [[1], None, object()])
def test_copy_if_callgrind_rejects_alike(value):
    with pytest.raises(ValueError, match="Unsupported type") as expected:
        tb.CopyIfCallgrind(value)
    with pytest.raises(ValueError, match="Unsupported type") as got:
        eb.CopyIfCallgrind(value)
    assert str(got.value).splitlines()[:2] == str(expected.value).splitlines()[:2]


def test_collect_callgrind_argument_errors_alike():
    for kwargs in ({"repeats": 0}, {"repeats": -2}):
        with pytest.raises(ValueError) as expected:
            tb.Timer("x = 1").collect_callgrind(**kwargs)
        with pytest.raises(ValueError) as got:
            eb.Timer("x = 1").collect_callgrind(**kwargs)
        assert str(got.value) == str(expected.value)


def test_public_names():
    names = {"CallgrindStats", "CopyIfCallgrind", "FunctionCount", "FunctionCounts"}
    assert names <= set(tb.__all__) if hasattr(tb, "__all__") else names <= set(dir(tb))
    assert names <= set(eb.__all__)
    from torch.utils.benchmark.utils.valgrind_wrapper import timer_interface as theirs

    from ember.utils.benchmark.utils.valgrind_wrapper import timer_interface as ours

    assert set(ours.__all__) == set(theirs.__all__)
    assert [f.name for f in __import__("dataclasses").fields(eb.FunctionCounts)] == [
        f.name for f in __import__("dataclasses").fields(tb.FunctionCounts)
    ]
    assert [f.name for f in __import__("dataclasses").fields(eb.CallgrindStats)] == [
        f.name for f in __import__("dataclasses").fields(tb.CallgrindStats)
    ]
    assert eb.FunctionCount._fields == tb.FunctionCount._fields
