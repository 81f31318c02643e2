"""How much of PyTorch's public API Ember has: public names per namespace, PyTorch's against Ember's.

    python tools/api_coverage.py                 # the table
    python tools/api_coverage.py --missing nn    # also list what one namespace lacks (repeatable)

A namespace's public names are those of ``dir()`` without a leading underscore, less what a module
merely imports or keeps for its docstrings: other packages' modules, classes, functions and ``typing``
forms (``Optional``, ``bisect_right``, ``TYPE_CHECKING``); where the module declares ``__all__``, values
neither in it nor defined under the module (``lr_scheduler.inf``, ``lr_scheduler.Optimizer``); and
dicts of docstring fragments (``nn.functional.tf32_notes``, ``fft.common_args``). Names of the
families Ember leaves out (``EXCLUDED``: quantized, sparse CSR/BSR/CSC/BSC, nested and jagged
tensors, TorchScript/JIT with its IR and type classes, vendor devices other than CUDA) are counted apart and not in the
coverage. PyTorch must be installed (it is the reference); the measuring functions themselves take
any two objects, so that they are tested without it.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import types
from dataclasses import dataclass
from typing import Any

# (label, PyTorch's path, Ember's path); a path ending in ".Tensor" names a class, not a module.
NAMESPACES: list[tuple[str, str, str]] = [
    ("top level", "torch", "ember"),
    ("Tensor", "torch.Tensor", "ember.Tensor"),
    ("nn", "torch.nn", "ember.nn"),
    ("nn.functional", "torch.nn.functional", "ember.nn.functional"),
    ("nn.init", "torch.nn.init", "ember.nn.init"),
    ("nn.utils", "torch.nn.utils", "ember.nn.utils"),
    ("nn.parallel", "torch.nn.parallel", "ember.nn.parallel"),
    ("optim", "torch.optim", "ember.optim"),
    ("optim.lr_scheduler", "torch.optim.lr_scheduler", "ember.optim.lr_scheduler"),
    ("autograd", "torch.autograd", "ember.autograd"),
    ("func", "torch.func", "ember.func"),
    ("linalg", "torch.linalg", "ember.linalg"),
    ("fft", "torch.fft", "ember.fft"),
    ("special", "torch.special", "ember.special"),
    ("distributions", "torch.distributions", "ember.distributions"),
    ("testing", "torch.testing", "ember.testing"),
    ("utils.data", "torch.utils.data", "ember.utils.data"),
    ("utils.benchmark", "torch.utils.benchmark", "ember.utils.benchmark"),
    ("amp", "torch.amp", "ember.amp"),
    ("accelerator", "torch.accelerator", "ember.accelerator"),
    ("backends", "torch.backends", "ember.backends"),
    ("hub", "torch.hub", "ember.hub"),
    ("onnx", "torch.onnx", "ember.onnx"),
]

# Families out of scope, by a pattern on the name (searched anywhere in it, case-insensitive).
EXCLUDED: dict[str, str] = {
    "quantized": r"quantiz|qint|quint|qscheme|int_repr|(^|_)q_|fake_quant|qparams|^per_(tensor|channel)_|^ao$",
    "sparse CSR/BSR": r"(^|_)(csr|csc|bsr|bsc)(_|$)|sparse_compressed|crow_indices|ccol_indices|(^|_)(col|row)_indices",
    "nested": r"nested|jagged",
    "JIT": r"jit|(^|_)script|^fork$|^wait$|compiled_with_cxx11_abi|^classes$|^FileCheck$",
    # TorchScript's IR (graphs, nodes, values), its type system and its executor, exported at the top level.
    "TorchScript IR and types": r"(?-i:^(AliasDb|AnyType|ArgumentSpec|AwaitType|Block|BoolType|CallStack|Capsule|ClassType|"
    r"Code|CompilationUnit|CompleteArgumentSpec|ComplexType|ConcreteModuleType|ConcreteModuleTypeBuilder|"
    r"DeepCopyMemoTable|DeviceObjType|DictType|EnumType|ErrorReport|ExecutionPlan|FloatType|FutureType|Gradient|"
    r"Graph|GraphExecutorState|IODescriptor|InferredType|IntType|InterfaceType|ListType|LiteScriptModule|"
    r"LockingLogger|LoggerBase|NoneType|NoopLogger|NumberType|OptionalType|PyObjectType|RRefType|StaticModule|"
    r"StreamObjType|StringType|SymBoolType|SymIntType|TensorType|TracingState|TupleType|Type|UnionType|Use|Value|"
    r"Node|import_ir_module|import_ir_module_from_buffer|parse_ir|parse_type_comment|merge_type_from_type_comment|"
    r"unify_type_list|ThroughputBenchmark|BenchmarkConfig|BenchmarkExecutionStats|"
    r"BroadcastingList[123])$)",
    "vendor devices": r"(^|_)(xpu|mps|mtia|hpu|ipu|xla|vulkan|maia|miopen|mkldnn|cudnn|fbgemm|hip|rocm|nnpack|mkl)(_|$)",
}
# TorchScript's containers of a script module's members, which PyTorch also exports at its top level
# (``torch.ModuleDict`` is not ``torch.nn.ModuleDict``): part of the JIT family there only.
SCRIPT_CONTAINERS = {"top level": {"ModuleDict", "ParameterDict", "BufferDict"}}
_EXCLUDED_RE = {family: re.compile(pattern, re.IGNORECASE) for family, pattern in EXCLUDED.items()}


@dataclass
class Row:
    label: str
    reference: int  # PyTorch's public names
    excluded: int  # of those, in an excluded family
    present: int  # of the in-scope ones, those Ember has
    missing: list[str]
    available: bool = True  # False when Ember lacks the namespace itself

    @property
    def in_scope(self) -> int:
        return self.reference - self.excluded

    @property
    def coverage(self) -> float:
        return 100.0 * self.present / self.in_scope if self.in_scope else 100.0


def public_names(namespace: Any) -> set[str]:
    """The public names of a module or class, less what a module only imports from elsewhere: modules
    that are not its submodules, and classes and functions defined outside its package (``Path``,
    ``Any``, ``urlopen``)."""
    names = {name for name in dir(namespace) if not name.startswith("_")}
    if not isinstance(namespace, types.ModuleType):
        return names
    prefix = namespace.__name__ + "."
    root = namespace.__name__.split(".")[0]
    declared = getattr(namespace, "__all__", None)
    kept = set()
    for name in names:
        value = getattr(namespace, name, None)
        if isinstance(value, types.ModuleType):
            if value.__name__.startswith(prefix):
                kept.add(name)
            continue
        if name == "TYPE_CHECKING" or _docstring_fragments(value):
            continue
        home = (
            getattr(value, "__module__", None)
            if isinstance(value, (type, types.FunctionType)) or _typing_form(value)
            else None
        )
        if isinstance(home, str) and home.split(".")[0] != root:
            continue  # another package's class or function, or a typing form
        if (
            declared is not None
            and name not in declared
            and not (isinstance(home, str) and home.startswith(namespace.__name__))
        ):
            continue  # neither declared public nor defined here: an import or a module constant
        kept.add(name)
    return kept


def _typing_form(value: Any) -> bool:
    """``Optional``, ``Literal``, ``Self`` and builtins such as ``bisect_right``: objects whose home is
    a module of their own, read off ``__module__``."""
    return isinstance(value, types.BuiltinFunctionType) or type(value).__module__ in ("typing", "typing_extensions")


def _docstring_fragments(value: Any) -> bool:
    """A dict of strings that a module formats into its docstrings."""
    return isinstance(value, dict) and bool(value) and all(isinstance(v, str) for v in value.values())


def excluded_family(name: str) -> str | None:
    for family, pattern in _EXCLUDED_RE.items():
        if pattern.search(name):
            return family
    return None


def measure(label: str, reference: Any, candidate: Any | None) -> Row:
    """Compare the public names of ``reference`` (PyTorch's) and ``candidate`` (Ember's, or None if absent)."""
    wanted = public_names(reference)
    excluded = {name for name in wanted if excluded_family(name) or name in SCRIPT_CONTAINERS.get(label, ())}
    in_scope = wanted - excluded
    # Ember has a name when the attribute answers, whatever module defines it (a re-export works for users).
    have = {name for name in in_scope if hasattr(candidate, name)} if candidate is not None else set()
    present = in_scope & have
    return Row(label, len(wanted), len(excluded), len(present), sorted(in_scope - present), candidate is not None)


def resolve(path: str) -> Any | None:
    """Import ``a.b.c`` as a module, or as attribute ``c`` of module ``a.b``; None if it does not exist."""
    try:
        return importlib.import_module(path)
    except ImportError:
        module, _, attribute = path.rpartition(".")
        try:
            return getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError):
            return None


def format_table(rows: list[Row]) -> str:
    header = f"{'namespace':<20} {'PyTorch':>8} {'excluded':>9} {'in scope':>9} {'Ember':>7} {'coverage':>9}"
    lines = [header, "-" * len(header)]
    for row in rows:
        note = "" if row.available else "  (namespace missing)"
        lines.append(
            f"{row.label:<20} {row.reference:>8} {row.excluded:>9} {row.in_scope:>9} {row.present:>7} "
            f"{row.coverage:>8.0f}%{note}"
        )
    total_scope = sum(r.in_scope for r in rows)
    total_present = sum(r.present for r in rows)
    overall = 100.0 * total_present / total_scope if total_scope else 100.0
    lines.append("-" * len(header))
    lines.append(
        f"{'all':<20} {sum(r.reference for r in rows):>8} {sum(r.excluded for r in rows):>9} {total_scope:>9} "
        f"{total_present:>7} {overall:>8.0f}%"
    )
    lines.append("")
    lines.append("Excluded families (not counted): " + "; ".join(f"{f} /{p}/" for f, p in EXCLUDED.items()))
    lines.append(
        "Also part of JIT: " + "; ".join(f"{label}: {', '.join(sorted(n))}" for label, n in SCRIPT_CONTAINERS.items())
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="append", default=[], help="list the names a namespace lacks")
    args = parser.parse_args(argv)
    if resolve("torch") is None:
        print("api_coverage: PyTorch (the reference) is not installed", file=sys.stderr)
        return 2
    rows = []
    for label, torch_path, ember_path in NAMESPACES:
        reference = resolve(torch_path)
        if reference is None:
            continue
        rows.append(measure(label, reference, resolve(ember_path)))
    print(format_table(rows))
    for label in args.missing:
        row = next((r for r in rows if r.label == label), None)
        if row is None:
            print(f"\nno namespace {label!r}; the labels are: {', '.join(r.label for r in rows)}", file=sys.stderr)
            return 2
        print(f"\nmissing in {label} ({len(row.missing)}):\n  " + "\n  ".join(row.missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
