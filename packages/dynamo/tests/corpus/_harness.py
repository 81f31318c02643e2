"""Loads the corpus programs under PyTorch or Ember and runs them eagerly or compiled.

Every corpus module (``corpus/*.py`` without a leading underscore) is a plain Python file written
against the global name ``torch``, which the harness binds before running it: to PyTorch, or to
Ember (as ``import ember as torch`` would). Each module ends with ``CASES``, a list of dicts:

    fn             the program, a plain function
    inputs         rng -> tuple of arguments for one call (rng: a seeded ``numpy.random.Generator``)
    calls          rng -> list of argument tuples, one per call (instead of ``inputs``; recompiles)
    driver         (f, rng) -> list of results: runs the calls itself (to change globals in between)
    graphs         the number of graphs PyTorch's ``torch.compile`` compiles for the whole run
    options        keyword arguments for ``compile`` (``dynamic``, ``fullgraph``)
    dynamic_dims   {argument index: dims} marked dynamic (``mark_dynamic``) before compiled calls
    observe        () -> anything: state the program changes that is not a global or an argument
    name           the case's name when one function has several cases (default: the function's)

Every run loads the module afresh (fresh globals, closures and objects, fresh code objects), so
runs never share state. A run's outcome is made of plain Python values and NumPy arrays: the
results of each call, the arguments after the calls (in-place updates), the module's data globals,
what ``observe`` returns, and what was printed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import io
import math
import sys
import traceback
import types
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

CORPUS = Path(__file__).parent
SEED = 20261127
_loads = 0


def modules() -> list[Path]:
    return sorted(p for p in CORPUS.glob("*.py") if not p.name.startswith("_"))


def load(path: Path, lib: Any) -> dict[str, Any]:
    """Runs the corpus module at ``path`` with ``torch`` bound to ``lib``; returns its globals."""
    global _loads
    _loads += 1
    name = f"ember_corpus_{lib.__name__}_{path.stem}_{_loads}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.torch = lib
    # Registered so that dataclasses and typing find the module by name, as for an imported module.
    sys.modules[name] = module
    try:
        exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    finally:
        sys.modules.pop(name, None)
    return module.__dict__


def case_name(spec: dict[str, Any]) -> str:
    return spec.get("name") or spec["fn"].__name__


@dataclasses.dataclass(frozen=True)
class CaseId:
    category: str
    name: str
    graphs: int

    @property
    def id(self) -> str:
        return f"{self.category}.{self.name}"


def case_ids(lib: Any) -> list[CaseId]:
    """Every case of the corpus, read by loading each module once under ``lib``."""
    out = []
    for path in modules():
        seen = set()
        for spec in load(path, lib)["CASES"]:
            name = case_name(spec)
            if name in seen:
                raise ValueError(f"{path.name}: two cases named {name!r}")
            seen.add(name)
            out.append(CaseId(path.stem, name, spec["graphs"]))
    return out


@dataclasses.dataclass
class Outcome:
    results: list[Any]
    args: list[Any]
    globals: dict[str, Any]
    observed: Any
    printed: str
    frame_count: int | None = None
    op_count: int | None = None
    errors: list[str] = dataclasses.field(default_factory=list)  # tracebacks of escaping exceptions

    def explain(self) -> str:
        return "".join(f"\nan exception escaped a call:\n{text}" for text in self.errors)


_SKIP_GLOBALS = {"CASES", "torch", "np"}


def _data_globals(ns: dict[str, Any], lib: Any) -> dict[str, Any]:
    out = {}
    for key, value in ns.items():
        if key.startswith("__") or key in _SKIP_GLOBALS:
            continue
        if isinstance(value, types.ModuleType | types.FunctionType | types.BuiltinFunctionType | type):
            continue
        if callable(value) and not isinstance(value, lib.nn.Module):
            continue
        # Data the program can change: builtin values and containers, tensors, modules and objects
        # of the module's own classes (not a logger, whose state reaches every logger there is).
        own = type(value).__module__ == ns["__name__"]
        if not (own or type(value).__module__ == "builtins" or isinstance(value, lib.Tensor | lib.nn.Module)):
            continue
        out[key] = plain(value, lib)
    return out


def run(
    lib: Any,
    case: CaseId,
    compile_with: Callable[[Callable, dict[str, Any]], Callable] | None = None,
    counter: Any = None,
) -> Outcome:
    """Runs ``case`` under ``lib``: eagerly, or through ``compile_with(fn, options)``."""
    ns = load(CORPUS / f"{case.category}.py", lib)
    spec = next(s for s in ns["CASES"] if case_name(s) == case.name)
    rng = np.random.default_rng(SEED)
    fn = spec["fn"]
    if compile_with is not None:
        fn = compile_with(fn, spec.get("options", {}))
    buffer = io.StringIO()
    all_args: list[tuple] = []
    errors: list[str] = []
    with contextlib.redirect_stdout(buffer):
        if "driver" in spec:
            results = list(spec["driver"](fn, rng))
        else:
            arg_sets = spec["calls"](rng) if "calls" in spec else [spec["inputs"](rng)]
            results = []
            for args in arg_sets:
                if compile_with is not None:
                    for index, dims in spec.get("dynamic_dims", {}).items():
                        for dim in dims:
                            lib._dynamo.mark_dynamic(args[index], dim)
                results.append(_call(fn, args, errors))
                all_args.append(args)
    observed = spec["observe"]() if "observe" in spec else None
    return Outcome(
        results=[plain(r, lib) for r in results],
        args=[plain(a, lib) for a in all_args],
        globals=_data_globals(ns, lib),
        observed=plain(observed, lib),
        printed=buffer.getvalue(),
        frame_count=None if counter is None else counter.frame_count,
        op_count=None if counter is None else counter.op_count,
        errors=errors,
    )


def _call(fn: Callable, args: tuple, errors: list[str]) -> Any:
    try:
        return fn(*args)
    except Exception as error:  # an escaping exception is part of the program's behaviour
        errors.append("".join(traceback.format_exception(error)[-12:]))
        return ("raised", type(error).__name__)


def plain(obj: Any, lib: Any, depth: int = 0) -> Any:
    """``obj`` as plain Python values and NumPy arrays, the same for PyTorch's and Ember's objects."""
    if depth > 8:
        return "..."
    d = depth + 1
    if isinstance(obj, lib.Tensor):
        return ("tensor", _short(obj.dtype), tuple(obj.shape), obj.requires_grad, obj.detach().cpu().numpy().copy())
    if obj is None or isinstance(obj, bool | int | float | str | bytes | complex):
        return obj
    if isinstance(obj, lib.dtype):
        return ("dtype", _short(obj))
    if isinstance(obj, lib.device):
        return ("device", str(obj))
    if isinstance(obj, enum.Enum):
        return ("enum", type(obj).__name__, obj.name)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return ("namedtuple", type(obj).__name__, [plain(v, lib, d) for v in obj])
    if isinstance(obj, list | tuple):
        return (type(obj).__name__ if type(obj) in (list, tuple) else "seq", [plain(v, lib, d) for v in obj])
    if isinstance(obj, deque):
        return ("deque", [plain(v, lib, d) for v in obj])
    if isinstance(obj, dict):
        return ("dict", [(plain(k, lib, d), plain(v, lib, d)) for k, v in obj.items()])
    if isinstance(obj, set | frozenset):
        return ("set", sorted(repr(plain(v, lib, d)) for v in obj))
    if isinstance(obj, lib.nn.Module):
        state = [(k, plain(v, lib, d)) for k, v in obj.state_dict().items()]
        extra = {k: plain(v, lib, d) for k, v in vars(obj).items() if not k.startswith("_") and k != "training"}
        return ("module", type(obj).__name__, obj.training, state, sorted(extra.items()))
    if dataclasses.is_dataclass(obj):
        return (
            "dataclass",
            type(obj).__name__,
            [(f.name, plain(getattr(obj, f.name), lib, d)) for f in dataclasses.fields(obj)],
        )
    if hasattr(obj, "items") and hasattr(obj, "keys"):  # Mapping types that are not dicts
        return ("mapping", type(obj).__name__, [(plain(k, lib, d), plain(v, lib, d)) for k, v in obj.items()])
    if isinstance(obj, BaseException):
        return ("exception", type(obj).__name__)
    if callable(obj):
        return ("callable", getattr(obj, "__name__", type(obj).__name__))
    if hasattr(obj, "__dict__"):
        return ("object", type(obj).__name__, sorted((k, plain(v, lib, d)) for k, v in vars(obj).items()))
    return ("repr", repr(obj))


def _short(dtype: Any) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def mismatch(a: Any, b: Any, rtol: float, atol: float, where: str = "") -> str | None:
    """Where ``a`` and ``b`` (from ``plain``) differ, or None: floats within tolerance, the rest exactly."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return f"{where}: array against {type(b).__name__}"
        if a.shape != b.shape:
            return f"{where}: shape {a.shape} != {b.shape}"
        if a.dtype.kind in "fc":
            if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
                worst = float(np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
                return f"{where}: values differ (largest difference {worst:.3g})"
            return None
        if not np.array_equal(a, b):
            return f"{where}: values differ: {a.tolist()} != {b.tolist()}"
        return None
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return None
        return None if math.isclose(a, b, rel_tol=rtol, abs_tol=atol) else f"{where}: {a!r} != {b!r}"
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if type(a) is not type(b) or len(a) != len(b):
            return f"{where}: {_brief(a)} != {_brief(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = mismatch(x, y, rtol, atol, f"{where}[{i}]")
            if found:
                return found
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            found = mismatch(a[key], b[key], rtol, atol, f"{where}.{key}")
            if found:
                return found
        return None
    if type(a) is not type(b) or a != b:
        return f"{where}: {_brief(a)} != {_brief(b)}"
    return None


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 200 else text[:200] + "..."


def compare(a: Outcome, b: Outcome, rtol: float, atol: float) -> str | None:
    """The first difference between two runs' outcomes, or None."""
    for field in ("results", "args", "globals", "observed", "printed"):
        found = mismatch(getattr(a, field), getattr(b, field), rtol, atol, field)
        if found:
            return found
    return None
