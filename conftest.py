"""The ``slow`` marker for every package's tests: tests of tens of seconds (whole-model training,
the compile corpus), skipped unless ``EMBER_SLOW_TESTS=1``; ``nox -s slow`` runs them."""

from __future__ import annotations

import os

import pytest

RUN_SLOW = os.environ.get("EMBER_SLOW_TESTS") == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if RUN_SLOW:
        return
    skip = pytest.mark.skip(reason="slow: set EMBER_SLOW_TESTS=1 to run it (nox -s slow)")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)
