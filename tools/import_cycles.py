"""Import cycles among Ember's modules: groups of modules that import each other, directly or round
a loop, counting imports made inside functions (a deferred import is still a back-edge that only the
order of first calls keeps working). Imports under ``if TYPE_CHECKING:`` do not count.

``KNOWN`` lists the cycles the tree has today; a new cycle, or a known one that grows, fails
``tools/tests/test_import_cycles.py``, and a known one that is gone must leave the list.

    python tools/import_cycles.py     # prints each cycle as its sorted modules
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

KNOWN: list[frozenset[str]] = [
    frozenset(s.split())
    for s in (
        # Tensor, its factories and printing call each other: the core's own knot.
        "ember.core.creation ember.core.aten.shape.copying ember.core.aten.factories.factories ember.core.pointwise "
        "ember.core.printing ember.core.tensor",
        "ember.core.aten.pointwise.binary ember.core.aten.pointwise.unary",
        "ember.func._vmap.batched ember.func._vmap.table",
        "ember.autograd._saved_mutation ember.autograd.graph ember.autograd.views ember.autograd.view_replay",
        "ember.autograd._function_node ember.autograd.function",
        # The package's __init__ installs what its modules use; func and autograd reach each other lazily.
        "ember.autograd ember.autograd._forward_dispatch ember.autograd._forward_rules ember.autograd.describe "
        "ember.autograd.forward_ad ember.autograd.functional ember.autograd.functional_api ember.autograd.gradcheck "
        "ember.autograd.tensor_methods ember.func ember.func._vmap ember.func._vmap.api "
        "ember.func._vmap.autograd_function ember.func.linearize ember.func.transforms",
        "ember.nn.modules.module ember.nn.modules.module_state",
        # The dtypes of limited support are instances of ember.core.dtypes.dtype, and that module gathers
        # them into its lookup tables (by name, from NumPy) once they exist.
        "ember.core.dtypes ember.core.dtypes_extra",
        # Sparse tensors: the subclass dispatches each op to its kernel table, and the kernels make
        # sparse tensors of their results.
        "ember.core.aten.sparse.coo_ops ember.core.sparse.api ember.core.sparse.construct ember.core.sparse.coo "
        "ember.core.sparse.kernels ember.core.sparse.pointwise ember.core.sparse.products ember.core.sparse.structure",
        # Fake tensors: the mode runs each op through its implementation modules, which make fake
        # tensors of that mode (PyTorch keeps the same knot inside one file).
        "ember._subclasses.fake_converter ember._subclasses.fake_dynamic ember._subclasses.fake_impls "
        "ember._subclasses.fake_tensor",
        # Bytecode capture: the translator makes trackers of the values it meets, and trackers inline
        # calls through new translators (PyTorch's dynamo has the same knot).
        "ember.dynamo.bytecode_ops ember.dynamo.codegen ember.dynamo.convert_frame ember.dynamo.decorators "
        "ember.dynamo.frame_cache ember.dynamo.generators ember.dynamo.output_graph ember.dynamo.side_effects "
        "ember.dynamo.symbolic_convert ember.dynamo.trace_rules ember.dynamo.variables.base "
        "ember.dynamo.variables.builder ember.dynamo.variables.builtin ember.dynamo.variables.containers "
        "ember.dynamo.variables.exceptions ember.dynamo.variables.flex_attention ember.dynamo.variables.functions "
        "ember.dynamo.variables.iter_tools "
        "ember.dynamo.variables.objects ember.dynamo.variables.tensor ember.dynamo.variables.user_objects",
    )
]


def modules(packages_dir: Path) -> dict[str, Path]:
    found = {}
    for path in packages_dir.glob("*/src/ember/**/*.py"):
        src = next(p for p in path.parents if p.name == "src")
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _type_checking_blocks(tree: ast.AST) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    return skipped


def edges(table: dict[str, Path]) -> dict[str, set[str]]:
    def owner(name: str) -> str | None:
        while name and name not in table:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in table}
    for module, path in table.items():
        tree = ast.parse(path.read_text())
        skipped = _type_checking_blocks(tree)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            for name in names:
                target = owner(name)
                # A module importing its own package (or a parent) only runs that package's __init__.
                if target and target != module and not module.startswith(target + "."):
                    graph[module].add(target)
    return graph


def cycles(packages_dir: Path) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    graph = edges(modules(packages_dir))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(frozenset(group))
    return found


def main() -> int:
    for group in cycles(ROOT / "packages"):
        print(" ".join(sorted(group)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
