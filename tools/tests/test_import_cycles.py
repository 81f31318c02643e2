import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import import_cycles


def test_no_import_cycle_beyond_the_known_ones():
    found = import_cycles.cycles(import_cycles.ROOT / "packages")
    new = [sorted(group) for group in found if not any(group <= known for known in import_cycles.KNOWN)]
    assert not new, f"new import cycles (a module importing, even inside a function, one that imports it): {new}"
    gone = [sorted(known) for known in import_cycles.KNOWN if not any(group & known for group in found)]
    assert not gone, f"these known cycles are gone: drop them from import_cycles.KNOWN: {gone}"


def test_the_cycles_named_in_the_op_table_work_stay_broken():
    found = set().union(*import_cycles.cycles(import_cycles.ROOT / "packages"))
    for module in ("ember.linalg", "ember.autograd.engine", "ember.utils.data.multiprocess"):
        assert module not in found


def test_a_deferred_import_is_a_back_edge_and_type_checking_is_not(make_tree):
    packages = make_tree(
        {
            "a/src/ember/x/__init__.py": "",
            "a/src/ember/x/one.py": "from ember.x import two\n",
            "a/src/ember/x/two.py": "def f():\n    from ember.x import one\n",
            "a/src/ember/x/three.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ember.x import four\n",
            "a/src/ember/x/four.py": "from ember.x import three\n",
        },
    )
    assert import_cycles.cycles(packages) == [frozenset({"ember.x.one", "ember.x.two"})]
