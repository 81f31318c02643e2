"""The corpus harness finds the differences it is there to find: in results, in arguments updated
in place, in globals, in printed output, in graph counts; and its corpus is well formed."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path

import numpy as np

import ember


def _harness():
    name = "ember_dynamo_corpus_harness"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / "corpus" / "_harness.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


H = _harness()
CASES = {case.id: case for case in H.case_ids(ember)}


def test_every_category_has_10_to_20_programs_and_counts_are_positive():
    per = {}
    for case in CASES.values():
        per[case.category] = per.get(case.category, 0) + 1
        assert case.graphs >= 1, f"{case.id}: PyTorch compiles no graph of it, so it tests nothing"
    assert len(per) == 12, sorted(per)
    assert all(10 <= n <= 20 for n in per.values()), per
    assert sum(per.values()) >= 160


def test_each_run_loads_the_module_afresh():
    case = CASES["side_effects.global_list"]
    first, second = H.run(ember, case), H.run(ember, case)
    assert len(first.globals["HISTORY"][1]) == 2  # two calls, two entries: no state left by the first run
    assert H.compare(first, second, 1e-6, 1e-7) is None


def test_a_wrong_result_is_found():
    case = CASES["straight_line.arith"]
    eager = H.run(ember, case)
    off = H.run(ember, case, lambda fn, options: lambda *args: fn(*args) * 1.001)
    assert "results" in H.compare(eager, off, 1e-5, 1e-6)
    assert H.compare(eager, off, 1e-2, 1e-2) is None


def test_integers_compare_exactly_and_floats_within_tolerance():
    assert H.mismatch(np.array([1, 2]), np.array([1, 3]), 1.0, 1.0) is not None
    assert H.mismatch(np.array([True]), np.array([False]), 1.0, 1.0) is not None
    assert H.mismatch(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]), 1e-6, 0.0) is None
    assert H.mismatch(np.zeros(2), np.zeros(3), 1.0, 1.0) is not None


def test_a_missing_side_effect_is_found():
    case = CASES["side_effects.global_list"]
    eager = H.run(ember, case)
    # Same values, but HISTORY is never appended to.
    skipped = H.run(ember, case, lambda fn, options: lambda x: x - x.mean())
    assert H.compare(eager, skipped, 1e-5, 1e-6).startswith("globals")


def test_an_unmade_in_place_update_is_found():
    case = CASES["side_effects.inplace_on_input"]
    eager = H.run(ember, case)
    pure = H.run(ember, case, lambda fn, options: lambda x: ((x + 1) * 2).sum())
    assert H.compare(eager, pure, 1e-5, 1e-6).startswith("args")


def test_missing_printed_output_is_found():
    case = CASES["graph_breaks.print_between"]
    eager = H.run(ember, case)
    assert eager.printed == "between\n"

    def silent(fn, options):
        def run(*args):
            with contextlib.redirect_stdout(io.StringIO()):
                return fn(*args)

        return run

    assert H.compare(eager, H.run(ember, case, silent), 1e-5, 1e-6).startswith("printed")


def test_an_escaping_exception_is_recorded_with_its_traceback():
    case = CASES["exceptions.raise_escapes"]
    outcome = H.run(ember, case)
    assert outcome.results[1] == ("tuple", ["raised", "RuntimeError"])
    assert "asked to fail" in outcome.explain()


def test_plain_values_are_library_neutral():
    assert H.plain(ember.tensor([1, 2]), ember)[:3] == ("tensor", "int64", (2,))
    assert H.plain(ember.float16, ember) == ("dtype", "float16")
    assert H.plain({"b": 1, "a": [2, (3,)]}, ember) == ("dict", [("b", 1), ("a", ("list", [2, ("tuple", [3])]))])
