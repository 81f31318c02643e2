"""``ember.utils.benchmark`` against ``torch.utils.benchmark``: Measurement statistics and printing
over fixed times, and the shape of Timer's results."""

import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
from torch.utils import benchmark as tb  # noqa: E402

import ember  # noqa: E402
from ember.utils import benchmark as eb  # noqa: E402

TIMES = {
    "one": [2.5e-5],
    "two": [1.0e-3, 1.2e-3],
    "steady": [1.00e-6, 1.01e-6, 0.99e-6, 1.00e-6, 1.02e-6],
    "noisy": [1e-3, 2e-3, 1.5e-3, 4e-3, 1.1e-3, 0.9e-3],
    "fluctuating": [1.0, 1.15, 1.05, 1.1, 1.2],
    "seconds": [3.0, 3.1, 2.9, 3.05],
}
SPECS = {
    "bare": {"stmt": "x + 1", "setup": "pass"},
    "labelled": {"stmt": "x + 1", "setup": "x = 1", "label": "L", "sub_label": "S", "description": "D"},
    "multiline": {"stmt": "a = 1\nb = a + 1", "setup": "import math\nx = 2", "num_threads": 4},
}


def _measurements(times, spec, number=10):
    theirs = tb.Measurement(number, list(times), tb.TaskSpec(**spec))
    ours = eb.Measurement(number, list(times), eb.TaskSpec(**spec))
    return ours, theirs


@pytest.mark.parametrize("spec", list(SPECS))
@pytest.mark.parametrize("times", list(TIMES))
def test_measurement_matches_torch(times, spec):
    ours, theirs = _measurements(TIMES[times], SPECS[spec])
    assert ours.times == pytest.approx(theirs.times)
    for name in ("mean", "median", "iqr"):
        assert getattr(ours, name) == pytest.approx(getattr(theirs, name), rel=1e-12, abs=1e-18), name
    assert ours.has_warnings is theirs.has_warnings
    assert ours.meets_confidence() is theirs.meets_confidence()
    assert ours.title == theirs.title
    assert ours.number_per_run == theirs.number_per_run == 10
    # The printed form is PyTorch's, after the first line (the object's class and address).
    assert repr(ours).splitlines()[1:] == repr(theirs).splitlines()[1:]


def test_select_unit_matches_torch():
    for t in (3e-9, 2.5e-7, 4e-5, 1.2e-2, 0.5, 7.0, 120.0):
        assert eb.select_unit(t) == tb.select_unit(t)


def test_timer_results():
    timer = eb.Timer("x + y", setup="y = 2", globals={"x": 1}, label="add", num_threads=1)
    once = timer.timeit(50)
    assert once.number_per_run == 50 and len(once.raw_times) == 1 and once.raw_times[0] > 0
    assert once.title == "add" and once.task_spec.stmt == "x + y"
    blocked = timer.blocked_autorange(min_run_time=0.02)
    assert sum(blocked.raw_times) >= 0.02 and blocked.number_per_run >= 1
    adaptive = timer.adaptive_autorange(min_run_time=0.01, max_run_time=0.5)
    assert len(adaptive.raw_times) >= 1
    # The statement sees ember under both names, as PyTorch's Timer binds torch.
    tensor_timer = eb.Timer("torch.add(a, a)", setup="a = ember.ones(4)")
    assert tensor_timer.timeit(3).number_per_run == 3


def test_timer_keeps_the_thread_count():
    before = ember.get_num_threads()
    eb.Timer("pass", num_threads=1).timeit(2)
    assert ember.get_num_threads() == before


def test_timer_errors():
    with pytest.raises(ValueError):
        eb.Timer(lambda: None)
    with pytest.raises(ValueError, match="Python statements"):
        eb.Timer("x", language="c++")


def _compare_inputs(lib):
    spec = lib.TaskSpec
    out = []
    for threads in (1, 4):
        for row, base in (("small", 1.0e-6), ("large", 4.0e-5)):
            for col, factor in (("ember", 1.0), ("numpy", 2.3), ("slow", 11.0)):
                times = [base * factor * (1 + 0.03 * k) for k in range(6)]
                task = spec(stmt="f(x)", setup="pass", label="add", sub_label=row, description=col, num_threads=threads)
                out.append(lib.Measurement(10, [t * 10 for t in times], task))
    noisy = spec(stmt="g(x)", setup="pass", label="other", sub_label="noisy", description="ember", num_threads=1)
    out.append(lib.Measurement(1, [1e-3, 2e-3, 1.5e-3, 4e-3, 1.1e-3], noisy))
    # A replicate of one task: Compare merges it with the first.
    replicate = spec(stmt="f(x)", setup="pass", label="add", sub_label="small", description="ember", num_threads=1)
    out.append(lib.Measurement(5, [1.01e-6 * 5, 0.99e-6 * 5], replicate))
    return out


@pytest.mark.parametrize("options", [(), ("trim",), ("colorize",), ("rowwise",), ("highlight",), ("trim", "highlight")])
def test_compare_matches_torch(options):
    tables = []
    for lib in (eb, tb):
        compare = lib.Compare(_compare_inputs(lib))
        if "trim" in options:
            compare.trim_significant_figures()
        if "colorize" in options:
            compare.colorize()
        if "rowwise" in options:
            compare.colorize(rowwise=True)
        if "highlight" in options:
            compare.highlight_warnings()
        tables.append(str(compare))
    assert tables[0] == tables[1]


def test_significant_figures_and_merge_match_torch():
    for times in TIMES.values():
        ours, theirs = _measurements(times, SPECS["bare"])
        assert ours.significant_figures == theirs.significant_figures
    merged_ours = eb.Measurement.merge(_compare_inputs(eb))
    merged_theirs = tb.Measurement.merge(_compare_inputs(tb))
    assert len(merged_ours) == len(merged_theirs)
    for ours, theirs in zip(merged_ours, merged_theirs, strict=True):
        assert ours.number_per_run == theirs.number_per_run and ours.times == pytest.approx(theirs.times)
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        eb.Compare([1.0])
