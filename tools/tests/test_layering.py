import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import layering


def messages(packages: Path) -> list[str]:
    return [v.message for v in layering.check(packages)]


def test_the_repository_respects_the_layering():
    assert layering.check(layering.ROOT / "packages") == []


def test_order_follows_the_design():
    assert layering.ALLOWED["logging"] == set()
    assert layering.ALLOWED["tensor"] == {"logging"}
    assert "inductor" not in layering.ALLOWED["cuda"] and "dynamo" in layering.ALLOWED["cuda"]
    assert layering.ALLOWED["distributed"] >= {"export", "cuda"}
    assert layering.ALLOWED["ember"] >= {"distributed", "cuda", "export"}


BASE = {
    "logging/src/ember/logs/__init__.py": "",
    "tensor/src/ember/core/__init__.py": "import ember.logs\n",
    "tensor/src/ember/ops/__init__.py": "from ember.core import x\n",
    "ember/src/ember/__init__.py": "from ember import logs, core\n",
}


def test_a_clean_tree_passes(make_tree):
    assert messages(make_tree(BASE)) == []


@pytest.mark.parametrize(
    "source",
    [
        "import ember.core\n",
        "from ember.core import Tensor\n",
        "from ember import core\n",
        "def lazy():\n    import ember.ops.aten\n",
        "import ember\n",
    ],
)
def test_importing_to_the_right_is_a_violation(make_tree, source):
    files = dict(BASE)
    files["logging/src/ember/logs/_state.py"] = source
    (message,) = messages(make_tree(files))
    assert "logging imports ember" in message and "lies to its right" in message


def test_relative_imports_stay_inside_and_unknown_names_are_reported(make_tree):
    files = dict(BASE)
    files["logging/src/ember/logs/_a.py"] = "from . import _b\nfrom ._b import thing\n"
    files["logging/src/ember/logs/_b.py"] = "import ember.nonexistent\n"
    (message,) = messages(make_tree(files))
    assert "ember.nonexistent, which no package ships" in message


def test_only_the_meta_package_ships_ember_init(make_tree):
    files = dict(BASE)
    files["tensor/src/ember/__init__.py"] = ""
    assert messages(make_tree(files)) == ["only the meta-package may ship ember/__init__.py"]


def test_an_unplaced_package_is_reported(make_tree):
    files = dict(BASE)
    files["mystery/src/ember/mystery/__init__.py"] = ""
    assert any("no place in the layering" in m for m in messages(make_tree(files)))


def test_a_namespace_folder_is_owned_child_by_child(make_tree):
    files = dict(BASE)
    files["tensor/src/ember/utils/hooks.py"] = "import ember.logs\n"
    files["logging/src/ember/utils/names.py"] = ""
    packages = make_tree(files)
    table = layering.owners(packages)
    assert table["utils.hooks"] == "tensor" and table["utils.names"] == "logging"
    assert messages(packages) == []
    (packages / "logging/src/ember/logs/_x.py").write_text("from ember.utils import hooks\nimport ember.utils\n")
    (message,) = messages(packages)
    assert "logging imports ember.utils.hooks from tensor" in message
