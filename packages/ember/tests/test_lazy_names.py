"""The top-level names ``ember`` imports on first use (``_LAZY_ATTRIBUTES``) exist in the modules they
name, and a private module that exists to serve the top level lists exactly those names in ``__all__``
(the table repeats them so that ``import ember`` imports none of these modules)."""

from __future__ import annotations

import importlib
from collections import defaultdict

import ember


def _by_module() -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for name, module in ember._LAZY_ATTRIBUTES.items():
        out[module].add(name)
    return out


def test_each_lazy_name_exists_where_the_table_says():
    missing = [
        (name, module)
        for module, names in _by_module().items()
        for name in names
        if not hasattr(importlib.import_module(module), name)
    ]
    assert not missing


def test_private_top_level_modules_list_the_same_names():
    for module, names in _by_module().items():
        if not module.startswith("ember._") or module.startswith(("ember._nn_functions", "ember._C")):
            continue
        declared = getattr(importlib.import_module(module), "__all__", None)
        if declared is not None:
            assert set(declared) == names, module
