"""``ember.utils.benchmark``'s Callgrind containers on their own: hand-computed rows, sums and text,
``CopyIfCallgrind`` and ``Timer.collect_callgrind``'s checks."""

import os
import stat

import pytest

from ember import nn
from ember.utils import benchmark as eb


def _counts(rows, inclusive=False, **kwargs):
    return eb.FunctionCounts(tuple(eb.FunctionCount(c, fn) for c, fn in rows), inclusive, **kwargs)


def test_rows_are_tuples_with_named_fields():
    row = eb.FunctionCount(5, "f")
    assert row == (5, "f") and row.count == 5 and row.function == "f"


def test_arithmetic_merges_by_name_and_drops_zeros():
    a = _counts([(10, "f"), (4, "g")])
    b = _counts([(3, "f"), (4, "g"), (1, "h")])
    assert list(a + b) == [(13, "f"), (8, "g"), (1, "h")]
    assert list(a - b) == [(7, "f"), (-1, "h")]
    assert list(a * 2.5) == [(25, "f"), (10, "g")]
    assert list(a * 0) == []
    assert (a - a).sum() == 0 and len(a - a) == 0


def test_merging_needs_the_same_kind():
    with pytest.raises(AssertionError, match="inclusive and exclusive"):
        _counts([(1, "f")], True) + _counts([(1, "f")], False)


def test_filter_keeps_order_transform_merges():
    counts = _counts([(1, "x.c:a"), (5, "y.c:b"), (3, "x.c:c")])
    assert list(counts.filter(lambda fn: fn.startswith("x"))) == [(1, "x.c:a"), (3, "x.c:c")]
    assert list(counts.transform(lambda fn: fn.split(":")[0])) == [(5, "y.c"), (4, "x.c")]
    noisy = _counts([(9, "Objects/dictobject.c:lookdict_unicode"), (2, "f")])
    assert list(noisy.denoise()) == [(2, "f")]


def test_indexing():
    counts = _counts([(3, "a"), (2, "b"), (1, "c")])
    assert counts[0] == eb.FunctionCount(3, "a")
    assert counts[-1].function == "c"
    part = counts[1:]
    assert isinstance(part, eb.FunctionCounts) and list(part) == [(2, "b"), (1, "c")]
    assert part.truncate_rows is False and counts.truncate_rows is True


def test_repr_layout():
    text = repr(_counts([(12, "f"), (-3, "g")], _linewidth=80))
    assert text.splitlines()[1:] == ["   12  f", "   -3  g", "", "Total: 9"]
    assert "Total" not in repr(_counts([(1, "f")], inclusive=True))


def test_repr_truncates_rows_and_names():
    counts = _counts([(100 - i, f"f{i}") for i in range(20)], inclusive=True, _linewidth=80)
    lines = repr(counts).splitlines()[1:]
    assert len(lines) == 19 and lines[9] == "  ..." and lines[0] == "  100  f0" and lines[-1] == "   81  f19"
    assert len(repr(counts[:]).splitlines()) == 21
    long = _counts([(1, "a" * 30 + "b" * 30)], inclusive=True, _linewidth=10)
    # A name gets at least 40 columns: 17 characters from its start and 18 from its end around " ... ".
    assert repr(long).splitlines()[1] == "  1  " + "a" * 17 + " ... " + "b" * 18


def _stats(debug=True):
    return eb.CallgrindStats(
        task_spec=eb.TaskSpec(stmt="y = x + 1", setup="pass", num_threads=2),
        number_per_run=10,
        built_with_debug_symbols=debug,
        baseline_inclusive_stats=_counts([(50, "loop")], True),
        baseline_exclusive_stats=_counts([(50, "loop"), (7, "x/dictobject.c:lookdict_unicode")]),
        stmt_inclusive_stats=_counts([(300, "/a/b/Python/ceval.c:eval [/usr/lib/libpython.so]")], True),
        stmt_exclusive_stats=_counts(
            [(200, "/a/b/Objects/longobject.c:add [/usr/lib/libpython.so]"), (40, "o/dictobject.c:lookdict_unicode")]
        ),
        stmt_callgrind_out="raw",
    )


def test_callgrind_stats():
    stats = _stats()
    assert stats.counts() == 240 and stats.counts(denoise=True) == 200
    assert stats.stats() is stats.stmt_exclusive_stats and stats.stats(inclusive=True) is stats.stmt_inclusive_stats
    assert stats.delta(stats).sum() == 0
    lines = repr(stats).splitlines()
    assert lines[1] == "y = x + 1"
    assert lines[3].split() == ["Instructions:", "240", "200"]
    assert lines[4].split() == ["Baseline:", "57", "50"]
    assert lines[5] == "10 runs per measurement, 2 threads"
    assert "Warning" not in repr(stats) and "REL_WITH_DEB_INFO=1" in repr(_stats(debug=False))


def test_as_standardized_strips_paths_and_libraries():
    standard = _stats().as_standardized()
    assert standard.stmt_callgrind_out is None
    assert standard.stmt_exclusive_stats[0].function == "Objects/longobject.c:add"
    assert [fn for _, fn in standard.stmt_inclusive_stats] == ["Python/ceval.c:eval"]


def test_copy_if_callgrind():
    module = nn.Linear(2, 2)
    wrapped = eb.CopyIfCallgrind(module, setup="import ember")
    assert wrapped.value is module and wrapped.setup == "import ember" and wrapped.serialization.name == "TORCH"
    assert eb.CopyIfCallgrind(3).serialization.name == "PICKLE"
    assert eb.CopyIfCallgrind.unwrap_all({"m": wrapped, "n": 1}) == {"m": module, "n": 1}
    with pytest.raises(ValueError, match="Unsupported type: <class 'list'>"):
        eb.CopyIfCallgrind([1])


def test_timer_unwraps_copy_if_callgrind_globals():
    timer = eb.Timer("y = n * 2", globals={"n": eb.CopyIfCallgrind(4)})
    assert timer.timeit(3).number_per_run == 3


def _fake_tools(directory, names):
    for name in names:
        path = directory / name
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.mark.skipif(os.uname().sysname != "Linux", reason="valgrind runs on Linux only")
def test_collect_callgrind_checks(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    timer = eb.Timer("x = 1")
    with pytest.raises(ValueError, match="repeats"):
        timer.collect_callgrind(repeats=0)
    with pytest.raises(NameError):
        eb.Timer("undefined_name").collect_callgrind()
    with pytest.raises(OSError, match=r"^Missing: valgrind, callgrind_control, callgrind_annotate$"):
        timer.collect_callgrind()
    _fake_tools(tmp_path, ["valgrind", "callgrind_annotate"])
    with pytest.raises(OSError, match=r"^Missing: callgrind_control$"):
        timer.collect_callgrind()
    _fake_tools(tmp_path, ["callgrind_control"])
    with pytest.raises(NotImplementedError, match="valgrind"):
        timer.collect_callgrind(5, repeats=2)
