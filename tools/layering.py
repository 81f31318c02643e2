"""The layering check: no package imports a package to its right in DESIGN.md's order.

    logging → tensor → autograd → sdpa → nn → fx → dynamo → inductor → export
                                                  ↘ cuda (device plugin)      distributed

``cuda`` branches off after ``dynamo``; ``distributed`` may use everything but the meta-package;
the meta-package ``ember`` may use everything. Which import names belong to which package is read
from the tree (``packages/<pkg>/src/ember/<name>``), so a new sub-package needs no edit here; a new
package needs its place in ``ALLOWED``. Only ``src`` is checked: tests may import what they like.

Also checked: only the meta-package ships ``ember/__init__.py`` (the namespace rule).

A folder under ``ember`` without ``__init__.py`` is a namespace that several packages may share
(``ember/utils``: ``checkpoint`` from autograd, ``data`` from nn); its children are owned one by one,
so ``ember.utils.checkpoint`` belongs to autograd and ``ember.utils.data`` to nn.

Run ``python tools/layering.py``; it prints each violation as ``file:line: message``.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
META = "ember"
CHAIN = ["logging", "tensor", "autograd", "sdpa", "nn", "fx", "dynamo", "inductor", "export"]


def _allowed() -> dict[str, set[str]]:
    allowed = {name: set(CHAIN[:i]) for i, name in enumerate(CHAIN)}
    allowed["cuda"] = set(CHAIN[: CHAIN.index("dynamo") + 1])
    allowed["distributed"] = set(CHAIN) | {"cuda"}
    allowed[META] = set(allowed) | {"distributed"}
    return allowed


ALLOWED = _allowed()


@dataclass(frozen=True)
class Violation:
    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def _children(folder: Path) -> list[Path]:
    return [c for c in folder.iterdir() if not c.name.startswith((".", "__")) and not c.name.endswith(".pyc")]


def _is_namespace(folder: Path) -> bool:
    return folder.is_dir() and not (folder / "__init__.py").exists()


def owners(packages_dir: Path) -> dict[str, str]:
    """Import name under ``ember`` (``logs``, ``core``, ``utils.data``, ...) -> package folder that ships it.

    A folder shipped by one package only is that package's, whether or not it has ``__init__.py``;
    the children of a namespace folder shipped by several are listed one by one.
    """
    table: dict[str, str] = {}
    shippers: dict[str, set[str]] = {}
    children: dict[str, dict[str, str]] = {}
    for package in sorted(p for p in packages_dir.iterdir() if (p / "src" / "ember").is_dir()):
        for child in _children(package / "src" / "ember"):
            name = child.name.removesuffix(".py")
            shippers.setdefault(name, set()).add(package.name)
            table[name] = package.name
            if _is_namespace(child):
                for grandchild in _children(child):
                    children.setdefault(name, {})[f"{name}.{grandchild.name.removesuffix('.py')}"] = package.name
    for name, packages in shippers.items():
        if len(packages) > 1 and name in children:
            del table[name]
            table.update(children[name])
    return table


def namespaces(table: dict[str, str]) -> set[str]:
    """The namespace folders shared by packages: ``utils`` when ``utils.checkpoint`` is in the table."""
    return {key.split(".")[0] for key in table if "." in key}


def imported_modules(tree: ast.AST, module: str, shared: frozenset = frozenset()) -> list[tuple[int, str]]:
    """Absolute names imported by a module's source, relative imports resolved."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: -node.level]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            # `from ember import logs` means ember.logs; so does `from ember.utils import data` for a namespace.
            if prefix == "ember" or (prefix.startswith("ember.") and prefix[6:] in shared):
                found += [(node.lineno, f"{prefix}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, prefix))
    return found


def check(packages_dir: Path) -> list[Violation]:
    table = owners(packages_dir)
    violations = []
    for package in sorted(p for p in packages_dir.iterdir() if (p / "src").is_dir()):
        name = package.name
        if name not in ALLOWED:
            violations.append(
                Violation(package, 0, f"package {name!r} has no place in the layering (tools/layering.py)")
            )
            continue
        init = package / "src" / "ember" / "__init__.py"
        if init.exists() and name != META:
            violations.append(Violation(init, 1, "only the meta-package may ship ember/__init__.py"))
        for path in sorted((package / "src").rglob("*.py")):
            violations += _check_file(path, package, name, table)
    return violations


def _check_file(path: Path, package: Path, name: str, table: dict[str, str]) -> list[Violation]:
    relative = path.relative_to(package / "src").with_suffix("")
    # ember/logs/__init__.py is "ember.logs.__init__", so that level-1 imports resolve to ember.logs
    module = ".".join(relative.parts)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    shared = frozenset(namespaces(table))
    violations = []
    for line, imported in imported_modules(tree, module, shared):
        pieces = imported.split(".")
        if pieces[0] != "ember":
            continue
        if len(pieces) == 1:
            target = META
        elif pieces[1] in shared and len(pieces) == 2:
            continue  # the bare namespace holds no code of its own
        elif pieces[1] in shared and ".".join(pieces[1:3]) in table:
            target = table[".".join(pieces[1:3])]
        elif pieces[1] in table:
            target = table[pieces[1]]
        else:
            violations.append(Violation(path, line, f"imports {imported}, which no package ships"))
            continue
        if target != name and target not in ALLOWED[name]:
            violations.append(
                Violation(path, line, f"{name} imports {imported} from {target}, which lies to its right")
            )
    return violations


def main() -> int:
    violations = check(ROOT / "packages")
    for violation in violations:
        print(violation)
    print(f"layering: {len(violations)} violations" if violations else "layering: ok")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
