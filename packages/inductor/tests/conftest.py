import os
import sys
from pathlib import Path

import pytest

# the shared helpers (inductor_testing.py) import by name, as the other packages' test helpers do
sys.path.insert(0, str(Path(__file__).parent))

RUN_SLOW = os.environ.get("EMBER_SLOW_TESTS") == "1"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: takes tens of seconds; runs only with EMBER_SLOW_TESTS=1 (nox -s slow)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if RUN_SLOW:
        return
    skip = pytest.mark.skip(reason="slow: set EMBER_SLOW_TESTS=1 to run it (nox -s slow)")
    here = Path(__file__).parent
    for item in items:
        if item.get_closest_marker("slow") is not None and here in Path(str(item.path)).parents:
            item.add_marker(skip)
