"""``ember.compile`` on every corpus program against Ember eager: the same results, the same side
effects (arguments updated in place, globals, objects, printed output), and no more graphs than
PyTorch's ``torch.compile`` compiles for the same program (the counts the corpus states, which
test_corpus.py checks against PyTorch), yet at least one where PyTorch compiles any: a program run
wholly eagerly would pass the rest. Needs no PyTorch: it runs on every Python."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

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
CASES = H.case_ids(ember)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_ember_compile_matches_ember_eager(case, record_property):
    eager = H.run(ember, case)
    ember._dynamo.reset()
    counter = ember._dynamo.testing.CompileCounter()
    try:
        compiled = H.run(ember, case, lambda fn, options: ember.compile(fn, backend=counter, **options), counter)
    finally:
        ember._dynamo.reset()
    record_property("graphs", compiled.frame_count)  # in --junitxml reports, beside PyTorch's
    record_property("torch_graphs", case.graphs)
    found = H.compare(eager, compiled, 1e-5, 1e-6)
    assert found is None, found + compiled.explain()
    assert compiled.frame_count <= case.graphs, f"{compiled.frame_count} graphs, PyTorch compiles {case.graphs}"
    # No more graphs than PyTorch, but not by running everything eagerly: what PyTorch captures, we do.
    assert compiled.frame_count >= min(case.graphs, 1), f"no graph compiled, PyTorch compiles {case.graphs}"
