"""tools/api_coverage.py on a small pair of fake namespaces (no PyTorch needed)."""

import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import api_coverage


def _module(name: str, **attributes) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    return module


def _function(name: str, module: str):
    def f():
        return None

    f.__name__, f.__module__ = name, module
    return f


@pytest.fixture
def pair():
    import os
    from pathlib import Path as P

    reference = _module(
        "faketorch",
        add=_function("add", "faketorch"),
        mul=_function("mul", "faketorch"),
        quantize_per_tensor=_function("quantize_per_tensor", "faketorch"),
        to_sparse_csr=_function("to_sparse_csr", "faketorch"),
        is_xpu=_function("is_xpu", "faketorch"),
        quantile=_function("quantile", "faketorch"),
        description=_function("description", "faketorch"),
        linalg=_module("faketorch.linalg"),
        os=os,  # an imported standard-library module: not part of the API
        Path=P,  # an imported class: not part of the API
        _private=1,
    )
    candidate = _module("fakeember", add=_function("add", "fakeember"), linalg=_module("fakeember.linalg"), extra=1)
    return reference, candidate


def test_public_names_drop_imports_and_private(pair):
    reference, _ = pair
    assert api_coverage.public_names(reference) == {
        "add",
        "mul",
        "quantize_per_tensor",
        "to_sparse_csr",
        "is_xpu",
        "quantile",
        "description",
        "linalg",
    }


def test_excluded_families():
    assert api_coverage.excluded_family("quantize_per_tensor") == "quantized"
    assert api_coverage.excluded_family("to_sparse_csr") == "sparse CSR/BSR"
    assert api_coverage.excluded_family("is_xpu") == "vendor devices"
    assert api_coverage.excluded_family("nested_tensor") == "nested"
    assert api_coverage.excluded_family("script_if_tracing") == "JIT"
    for in_scope in ("quantile", "description", "dumps", "cuda", "library", "add"):
        assert api_coverage.excluded_family(in_scope) is None, in_scope


def test_measure_and_table(pair):
    reference, candidate = pair
    row = api_coverage.measure("top level", reference, candidate)
    assert (row.reference, row.excluded, row.in_scope, row.present) == (8, 3, 5, 2)
    assert row.missing == ["description", "mul", "quantile"]
    assert row.coverage == pytest.approx(40.0)
    absent = api_coverage.measure("gone", reference, None)
    assert absent.present == 0 and not absent.available
    table = api_coverage.format_table([row, absent])
    lines = table.splitlines()
    assert lines[0].split() == ["namespace", "PyTorch", "excluded", "in", "scope", "Ember", "coverage"]
    assert lines[2].split() == ["top", "level", "8", "3", "5", "2", "40%"]
    assert lines[3].split()[-3:] == ["0%", "(namespace", "missing)"]
    assert lines[5].split() == ["all", "16", "6", "10", "2", "20%"]
    assert "Excluded families" in table and "quantized" in table


def test_classes_count_attributes():
    class Reference:
        def add(self):
            pass

        def is_nested(self):
            pass

        @property
        def shape(self):
            return ()

    class Candidate:
        __slots__ = ("shape",)

        def add(self):
            pass

    row = api_coverage.measure("Tensor", Reference, Candidate)
    assert (row.in_scope, row.present, row.excluded) == (2, 2, 1)


def test_main_without_torch(monkeypatch, capsys):
    monkeypatch.setattr(api_coverage, "resolve", lambda path: None)
    assert api_coverage.main([]) == 2
    assert "not installed" in capsys.readouterr().err


def test_main_on_fake_namespaces(pair, monkeypatch, capsys):
    reference, candidate = pair
    table = {"torch": reference, "ember": candidate}
    monkeypatch.setattr(api_coverage, "NAMESPACES", [("top level", "torch", "ember")])
    monkeypatch.setattr(api_coverage, "resolve", table.get)
    assert api_coverage.main(["--missing", "top level"]) == 0
    out = capsys.readouterr().out
    assert "40%" in out and "missing in top level (3):" in out and "  quantile" in out
    assert api_coverage.main(["--missing", "nope"]) == 2


def test_typing_forms_docstring_fragments_and_undeclared_values_are_not_api():
    import bisect
    import typing

    module = _module(
        "faketorch.sched",
        __all__=["StepLR", "declared_constant"],
        StepLR=type("StepLR", (), {"__module__": "faketorch.sched"}),
        Optimizer=type("Optimizer", (), {"__module__": "faketorch.optim"}),  # imported from a sibling
        helper=_function("helper", "faketorch.sched"),  # defined here, not declared: still counted
        declared_constant=3,
        inf=float("inf"),  # imported from math, not declared
        Optional=typing.Optional,
        TYPE_CHECKING=False,
        bisect_right=bisect.bisect_right,
        common_args={"input": "input (Tensor): the input"},
    )
    assert api_coverage.public_names(module) == {"StepLR", "helper", "declared_constant"}


def test_script_containers_are_excluded_at_the_top_level_only():
    reference = _module("faketorch", ModuleDict=type("ModuleDict", (), {"__module__": "faketorch"}))
    top = api_coverage.measure("top level", reference, _module("fakeember"))
    nn = api_coverage.measure("nn", reference, _module("fakeember"))
    assert (top.excluded, top.in_scope) == (1, 0)
    assert (nn.excluded, nn.missing) == (0, ["ModuleDict"])
