"""The corpus against PyTorch: ``torch.compile`` agrees with PyTorch eager on every program and
compiles the number of graphs the corpus states (marked slow: ``EMBER_SLOW_TESTS=1``); Ember eager
gives PyTorch eager's values, side effects and printed output.

Ember's own ``ember.compile`` is compared with Ember eager, and its graph counts with the counts
checked here, in test_corpus_eager.py (which needs no PyTorch). ``python test_corpus.py`` prints a
table of graph counts per category, PyTorch's and Ember's, measured in the same run.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
from torch._dynamo.testing import CompileCounter  # noqa: E402

import ember  # noqa: E402


def _harness():
    name = "ember_dynamo_corpus_harness"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / "corpus" / "_harness.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


H = _harness()
CASES = H.case_ids(ember)
# Float32 results of two libraries: the same math, possibly summed in another order.
CROSS_RTOL, CROSS_ATOL = 1e-4, 1e-5


@functools.cache
def torch_eager(case):
    return H.run(torch, case)


@functools.cache
def torch_compiled(case):
    torch._dynamo.reset()
    counter = CompileCounter()
    try:
        return H.run(torch, case, lambda fn, options: torch.compile(fn, backend=counter, **options), counter)
    finally:
        torch._dynamo.reset()


@pytest.mark.slow  # about 20 s of torch.compile; the counts it checks are what test_corpus_eager.py reads
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_torch_compile_agrees_with_torch_eager(case):
    eager, compiled = torch_eager(case), torch_compiled(case)
    found = H.compare(eager, compiled, 1e-6, 1e-7)
    assert found is None, found + compiled.explain()
    assert compiled.frame_count == case.graphs, (
        f"PyTorch compiles {compiled.frame_count} graphs, corpus says {case.graphs}"
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_ember_eager_matches_torch_eager(case):
    theirs, ours = torch_eager(case), H.run(ember, case)
    found = H.compare(theirs, ours, CROSS_RTOL, CROSS_ATOL)
    assert found is None, found + ours.explain()


def _summary() -> None:
    """Per category: programs, PyTorch's graphs, and Ember's graphs and agreement where it compiles."""
    rows = {}
    for case in CASES:
        row = rows.setdefault(case.category, [0, 0, 0, 0, 0])
        row[0] += 1
        row[1] += torch_compiled(case).frame_count
        try:
            ember._dynamo.reset()
            counter = ember._dynamo.testing.CompileCounter()
            ours = H.run(
                ember, case, lambda fn, options, counter=counter: ember.compile(fn, backend=counter, **options), counter
            )
        except Exception:
            continue
        row[2] += ours.frame_count
        counted = min(case.graphs, 1) <= ours.frame_count <= case.graphs
        row[3] += counted and H.compare(H.run(ember, case), ours, 1e-5, 1e-6) is None
        row[4] += 1
    print(
        f"{'category':<16} {'programs':>8} {'torch graphs':>12} {'ember ran':>9} {'ember graphs':>12} {'ember ok':>8}"
    )
    for name, (n, theirs, ours, ok, ran) in rows.items():
        print(f"{name:<16} {n:>8} {theirs:>12} {ran:>9} {ours:>12} {ok:>8}")


if __name__ == "__main__":
    _summary()
