from pathlib import Path

import pytest


@pytest.fixture
def make_tree(tmp_path: Path):
    """``make_tree({"pkg/src/ember/x.py": "..."})``: those files under a fresh ``packages`` folder."""

    def make(files: dict[str, str]) -> Path:
        for relative, text in files.items():
            path = tmp_path / "packages" / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return tmp_path / "packages"

    return make
