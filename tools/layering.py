"""The layering check: no package imports a package to its right in DESIGN.md's order.

    logging → tensor → autograd → sdpa → nn → fx → dynamo → inductor → export
                                                  ↘ cuda (device plugin)      distributed

``cuda`` branches off after ``dynamo``; ``distributed`` may use everything but the meta-package;
the meta-package ``ember`` may use everything. Which import names belong to which package is read
from the tree (``packages/<pkg>/src/ember/<name>``), so a new sub-package needs no edit here; a new
package needs its place in ``ALLOWED``. Only ``src`` is checked: tests may import what they like.

Also checked: only the meta-package ships ``ember/__init__.py`` (the namespace rule).

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


def owners(packages_dir: Path) -> dict[str, str]:
    """Import name under ``ember`` (``logs``, ``core``, ...) -> package folder that ships it."""
    table: dict[str, str] = {}
    for package in sorted(p for p in packages_dir.iterdir() if (p / "src" / "ember").is_dir()):
        for child in (package / "src" / "ember").iterdir():
            if child.name.startswith((".", "__")) or child.name.endswith(".pyc"):
                continue
            table[child.name.removesuffix(".py")] = package.name
    return table


def imported_modules(tree: ast.AST, module: str) -> list[tuple[int, str]]:
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
            if prefix == "ember":  # `from ember import logs` means ember.logs
                found += [(node.lineno, f"ember.{alias.name}") for alias in node.names]
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
    violations = []
    for line, imported in imported_modules(tree, module):
        pieces = imported.split(".")
        if pieces[0] != "ember":
            continue
        if len(pieces) == 1:
            target = META
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
