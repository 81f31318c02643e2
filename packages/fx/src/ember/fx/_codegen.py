"""Python code generation for a ``Graph``: the text a ``GraphModule`` runs and prints.

The output reads as ``torch.fx`` prints it (with ``ember`` for ``torch``): ``def forward(self, x):``,
one line per node, operators infix (``add = x + y``), method calls on their receiver
(``view = x.view(2, 3)``), submodules and attributes on ``self`` (``getattr(self.layers, "0")``),
functions by their public qualified name (``ember.relu(x)``, ``ember.ops.aten.add.Tensor(x, y)``)
with whatever else they need passed in as globals, and each value set to None after its last use
(``;  x = None``) so that memory is freed as early as in eager code.

Names: every identifier the code uses, locals and globals alike, comes from one ``_Namespace`` made
for this one piece of code, so a node named ``relu`` and the global function ``relu`` can never
collide. ``Graph`` uses another ``_Namespace`` for node names.
"""

from __future__ import annotations

import builtins
import enum
import functools
import keyword
import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ember.core.devices import device
from ember.core.dispatch import OpOverload, OpOverloadPacket
from ember.core.tensor import Tensor
from ember.fx._names import _dtype_abbr, _get_qualified_name, _is_tensor_method, _shape, _type_repr
from ember.fx.node import Argument, Node

if TYPE_CHECKING:
    from ember.fx.graph import _node_list

__all__ = ["CodeGen", "PythonCode"]


# -- names -----------------------------------------------------------------------------------------


class _CustomBuiltin:
    """An object every generated module has as a global, with the import that provides it."""

    def __init__(self, import_str: str, obj: object) -> None:
        self.import_str = import_str
        self.obj = obj


# Names a generated local may not take: keywords and builtins (unless the object is that builtin).
_illegal_names: dict[str, object] = {k: object() for k in keyword.kwlist}
_illegal_names.update(builtins.__dict__)

_custom_builtins: dict[str, _CustomBuiltin] = {}


def _register_custom_builtin(name: str, import_str: str, obj: object) -> None:
    _custom_builtins[name] = _CustomBuiltin(import_str, obj)
    _illegal_names[name] = obj


def _ember_module() -> Any:
    # The ``ember`` package object: the meta-package when installed, else the namespace package.
    # Importing these makes ``ember.ops``/``ember.nn.functional`` reachable as attributes.
    import ember.nn.functional
    import ember.ops  # noqa: F401

    return sys.modules["ember"]


def _register_builtins() -> None:
    _register_custom_builtin("inf", "from math import inf", math.inf)
    _register_custom_builtin("nan", "from math import nan", math.nan)
    _register_custom_builtin("NoneType", "NoneType = type(None)", type(None))
    _register_custom_builtin("ember", "import ember", _ember_module())
    _register_custom_builtin("device", "from ember import device", device)


_register_builtins()


def _is_magic(x: str) -> bool:
    return x.startswith("__") and x.endswith("__")


_snake_case_sub = functools.partial(re.compile(r"(?<=[a-z])([A-Z])").sub, r"_\1")


def _snake_case(s: str) -> str:
    """``pascalCase`` -> ``pascal_case``; ``ALL_CAPS`` -> ``all_caps``."""
    return _snake_case_sub(s).lower()


_illegal_char_regex = re.compile("[^0-9a-zA-Z_]+")
# A legal identifier, split into its base and an optional ``_<number>`` suffix.
_name_regex = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")


class _Namespace:
    """Unique names for objects: one name per object, no name twice, no shadowed builtin."""

    def __init__(self) -> None:
        self._obj_to_name: dict[object, str] = {}
        self._used_names: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str, obj: object | None) -> str:
        """A fresh name from ``candidate`` (made legal first), remembered for ``obj`` if given."""
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        match = _name_regex.match(candidate)
        if match is None:
            candidate = _illegal_char_regex.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _name_regex.match(candidate)
            assert match is not None, f"Name regex failed to match candidate: {candidate}"
        base, num = match.group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if _illegal_names.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def associate_name_with_obj(self, name: str, obj: object) -> None:
        existing = self._obj_to_name.setdefault(obj, name)
        if existing is not name:
            raise AssertionError("obj is already associated")

    def _rename_object(self, obj: object, name: str) -> None:
        if obj not in self._obj_to_name:
            raise AssertionError(f"Object {obj} is not in _obj_to_name")
        self._obj_to_name[obj] = name
        self._used_names.add(name)


def _is_from_ember(obj: object) -> bool:
    """Objects the generated code reaches as ``ember.<dotted path>`` rather than as a global."""
    if isinstance(obj, OpOverload | OpOverloadPacket):
        return True
    if _is_tensor_method(obj):
        # PyTorch's Tensor methods (C descriptors without a module) go in as globals:
        # ``torch_Tensor_add = torch.Tensor.add``; ours follow, so the code reads the same.
        return False
    module = getattr(obj, "__module__", None)
    if module is None or not (module == "ember" or module.startswith("ember.")):
        return False
    # Compiled code is passed in as globals, as PyTorch does for torch._dynamo and torch._inductor.
    return not module.startswith(("ember.dynamo.", "ember.inductor.", "ember.aot."))


def _format_target(base: str, target: str) -> str:
    """``self.layers.0.weight`` as Python: ``getattr(self.layers, "0").weight``."""
    r = base
    for e in target.split("."):
        r = f"{r}.{e}" if e.isidentifier() else f'getattr({r}, "{e}")'
    return r


# -- operators printed infix -----------------------------------------------------------------------

reflectable_magic_methods = {
    "add": "{} + {}",
    "sub": "{} - {}",
    "mul": "{} * {}",
    "floordiv": "{} // {}",
    "truediv": "{} / {}",
    "div": "{} / {}",
    "mod": "{} % {}",
    "pow": "{} ** {}",
    "lshift": "{} << {}",
    "rshift": "{} >> {}",
    "and_": "{} & {}",
    "or_": "{} | {}",
    "xor": "{} ^ {}",
    "getitem": "{}[{}]",
    "matmul": "{} @ {}",
}

magic_methods = {
    "eq": "{} == {}",
    "ne": "{} != {}",
    "lt": "{} < {}",
    "gt": "{} > {}",
    "le": "{} <= {}",
    "ge": "{} >= {}",
    "pos": "+{}",
    "neg": "-{}",
    "invert": "~{}",
    **reflectable_magic_methods,
}

inplace_methods = {
    "iadd": "{} += {}",
    "iand": "{} &= {}",
    "ifloordiv": "{} //= {}",
    "ilshift": "{} <<= {}",
    "imod": "{} %= {}",
    "imul": "{} *= {}",
    "imatmul": "{} @= {}",
    "ior": "{} |= {}",
    "ipow": "{} **= {}",
    "irshift": "{} >>= {}",
    "isub": "{} -= {}",
    "itruediv": "{} /= {}",
    "ixor": "{} ^= {}",
    "setitem": "{}[{}] = {}",
}

# -- stack traces and colors -----------------------------------------------------------------------

_stack_line = re.compile(r"^File \"(.+)\", line (\d+), in (.+)$")


def _stack_trace_summary(stack_trace: str | None) -> str | None:
    """``File: path:line in fn, code: text`` for the innermost frame of a recorded stack trace."""
    if stack_trace is None:
        return None
    lines = stack_trace.strip().split("\n")
    # The innermost frame is last; its code is on the line after its ``File ...`` line.
    for idx in range(len(lines) - 2, -1, -1):
        match = _stack_line.match(lines[idx].strip())
        if match:
            file, lineno, name = match.groups()
            return f"File: {file}:{lineno} in {name}, code: {lines[idx + 1].strip()}"
    return None


def _identity(s: str) -> str:
    return s


def _color(code: str) -> Callable[[str], str]:
    return lambda s: f"{code}{s}\033[0m"


_color_fns = {
    "red": _color("\033[31m"),
    "blue": _color("\033[34m"),
    "dim": _color("\033[2m"),
    "dim_blue": _color("\033[2m\033[34m"),
    "dim_green": _color("\033[2m\033[32m"),
}

# -- the generator ---------------------------------------------------------------------------------


@dataclass
class PythonCode:
    """The source of a graph's ``forward`` and the globals it runs with."""

    src: str
    globals: dict[str, Any]
    # Line of ``src`` (counted from the ``def``) -> index of the node it came from.
    _lineno_map: dict[int, int | None] | None = None
    _prologue_start: int = 0


class CodeGen:
    """Turns a graph's nodes into Python source; subclasses change the signature or the return."""

    def __init__(self) -> None:
        self._body_transformer: Callable[[list[str]], list[str]] | None = None
        self._func_name: str = "forward"

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str) -> str:
        """``def forward(self, a, b):`` for the given free variables."""
        if not free_vars or free_vars[0] != "self":
            free_vars.insert(0, "self")
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args: Argument, repr_fn: Callable[[object], str] = repr) -> str:
        """The return statement (unindented)."""
        return f"return {repr_fn(output_args)}"

    def process_inputs(self, *args: Any) -> Any:
        """Map the callers' inputs to the graph's placeholders (identity here)."""
        return args

    def process_outputs(self, outputs: Any) -> Any:
        """Map the graph's output to what callers get (identity here)."""
        return outputs

    def additional_globals(self) -> list[tuple[str, Any]]:
        """Extra ``(name, object)`` globals the generated code uses."""
        return []

    def _gen_python_code(
        self,
        nodes: _node_list,
        root_module: str,
        namespace: _Namespace,
        *,
        verbose: bool = False,
        include_stride: bool = False,
        include_device: bool = False,
        colored: bool = False,
        additional_meta: list[str] | None = None,
    ) -> PythonCode:
        emitter = _Emitter(self, namespace, root_module, verbose, include_stride, include_device, colored)
        emitter.additional_meta = additional_meta or []
        return emitter.run(nodes)


class _Emitter:
    """The state of one code generation: globals, body lines, and each value's last use."""

    def __init__(
        self,
        codegen: CodeGen,
        namespace: _Namespace,
        root_module: str,
        verbose: bool,
        include_stride: bool,
        include_device: bool,
        colored: bool,
    ) -> None:
        self.codegen = codegen
        self.namespace = namespace
        self.root_module = root_module
        self.verbose = verbose
        self.include_stride = include_stride or os.environ.get("FX_GRAPH_SHOW_STRIDE", "0") == "1"
        self.include_device = include_device or os.environ.get("FX_GRAPH_SHOW_DEVICE", "0") == "1"
        self.free_vars: list[str] = []
        self.body: list[str] = []
        self.globals: dict[str, Any] = {}
        self.return_annotation = ""
        self.prev_summary: str | None = None
        self.additional_meta: list[str] = []
        fns = _color_fns if colored else {}
        self.red = fns.get("red", _identity)
        self.blue = fns.get("blue", _identity)
        self.dim = fns.get("dim", _identity)
        self.dim_blue = fns.get("dim_blue", _identity)
        self.dim_green = fns.get("dim_green", _identity)
        for name, builtin in _custom_builtins.items():
            self.add_global(name, builtin.obj)

    # -- globals and reprs ---------------------------------------------------------------------

    def add_global(self, name_hint: str, obj: Any) -> str:
        """The name ``obj`` goes by in the generated code, adding it to the globals if needed."""
        if _is_from_ember(obj) and obj is not device:
            # Reached through the ``ember`` global by its public dotted name.
            return _get_qualified_name(obj)
        name = self.namespace.create_name(name_hint, obj)
        if name in self.globals:
            if self.globals[name] is not obj:
                raise AssertionError(f"Global name {name} already assigned to different object")
            return name
        self.globals[name] = obj
        return name

    def type_repr(self, o: Any) -> str:
        if o == ():
            return "()"
        typename = _type_repr(o)
        origin = getattr(o, "__origin__", None)
        if origin is not None:
            origin_name = self.add_global(_type_repr(origin), origin)
            args = getattr(o, "__args__", ())
            if args:
                return f"{origin_name}[{','.join(self.type_repr(a) for a in args)}]"
            return origin_name
        return self.add_global(typename, o)

    def repr_arg(self, arg: object) -> str:
        if isinstance(arg, Node):
            return repr(arg)
        if isinstance(arg, tuple) and hasattr(arg, "_fields"):
            cls_name = self.add_global(_get_qualified_name(type(arg)), type(arg))
            return f"{cls_name}{tuple(arg)!r}"
        if isinstance(arg, OpOverload):
            return self.add_global(_get_qualified_name(arg), arg)
        if isinstance(arg, enum.Enum):
            cls_name = self.add_global(type(arg).__name__, type(arg))
            return f"{cls_name}.{arg.name}"
        if isinstance(arg, Tensor):
            return f"ember.Tensor(size={list(arg.shape)}, dtype={_dtype_abbr_name(arg.dtype)})"
        if isinstance(arg, tuple):
            if len(arg) == 1:
                return f"({self.repr_arg(arg[0])},)"
            return "(" + ", ".join(self.repr_arg(a) for a in arg) + ")"
        if isinstance(arg, list):
            return "[" + ", ".join(self.repr_arg(a) for a in arg) + "]"
        if isinstance(arg, slice):
            return f"slice({self.repr_arg(arg.start)}, {self.repr_arg(arg.stop)}, {self.repr_arg(arg.step)})"
        return self.blue(repr(arg))

    def format_args(self, args: tuple, kwargs: dict) -> str:
        parts = [self.repr_arg(a) for a in args]
        parts.extend(f"{k} = {self.repr_arg(v)}" for k, v in kwargs.items())
        return ", ".join(parts)

    # -- nodes ---------------------------------------------------------------------------------

    def run(self, nodes: _node_list) -> PythonCode:
        # Walking backwards, the first use of a value seen is its last use in program order.
        last_use: dict[Node, Node] = {}
        frees_after: dict[Node, list[Node]] = {}
        for node in reversed(nodes):
            for inp in node._input_nodes:
                if inp not in last_use:
                    last_use[inp] = node
                    frees_after.setdefault(node, []).append(inp)

        # Each node's text is preceded by a counter comment, removed below to map lines to nodes.
        for i, node in enumerate(nodes):
            if self.verbose:
                self.stack_trace_summary(node)
            self.body.append(f"# COUNTER: {i}\n")
            self.emit(node)
            self.free_unused(node, frees_after)

        if not self.body:
            self.body.append("pass\n")
        body = self.body
        if self.codegen._body_transformer:
            body = self.codegen._body_transformer(body)
        for name, value in self.codegen.additional_globals():
            self.add_global(name, value)
        prologue = self.codegen.gen_fn_def(self.free_vars, self.return_annotation)

        lineno_map: dict[int, int | None] = {}
        prologue_len = prologue.count("\n") + 1
        lines: list[str] = []
        current: int | None = None
        for line in "".join(body).split("\n"):
            counter = _counter_regexp.search(line)
            if counter is not None:
                current = int(counter.group(1))
            else:
                lineno_map[len(lines) + prologue_len] = current
                lines.append(line)
        code = "\n".join(lines).lstrip("\n")
        code = "\n".join("    " + line for line in code.split("\n"))
        fn_code = f"\n\n\n{prologue}\n{code}"
        return PythonCode(fn_code, self.globals, _lineno_map=lineno_map, _prologue_start=4)

    def free_unused(self, user: Node, frees_after: dict[Node, list[Node]]) -> None:
        if user.op == "placeholder":
            return
        if user.op == "output":
            self.body.append("\n")
            return
        to_free = list(frees_after.get(user, []))
        if not user.users:
            # Kept only for its side effects (dead-code elimination would have removed it otherwise).
            to_free.append(user)
        if to_free:
            self.body.append(f";  {self.dim(' = '.join([repr(n) for n in to_free] + ['None']))}\n")
        else:
            self.body.append("\n")

    def stack_trace_summary(self, node: Node) -> None:
        """The comment over a run of nodes: chosen meta keys, annotations, recompute tags, user line."""
        if node.op in ("placeholder", "output"):
            return
        meta = node.meta
        extra = [f"{key}: {meta[key]}" for key in self.additional_meta if key in meta]
        extra_str = f"# {', '.join(extra)} " if extra else ""
        annotation = ""
        if meta.get("custom"):
            shown = {k: (str(v)[:40] + "..." if len(str(v)) > 40 else v) for k, v in meta["custom"].items()}
            annotation = f" Annotation: {shown}"
        recompute, graph_id = meta.get("recompute"), meta.get("ac_graph_id")
        recompute_info = ""
        if recompute is not None and graph_id is not None:
            recompute_info = f" ac_graph_id: {graph_id} - {recompute.name}"
        elif recompute is not None:
            recompute_info = f" recompute: {recompute.name}"
        elif graph_id is not None:
            recompute_info = f" ac_graph_id: {graph_id}"
        summary = _stack_trace_summary(node.stack_trace) or "No stacktrace found for following nodes"
        text = f"\n{self.dim(f'{extra_str}#{annotation}{recompute_info} {summary}')}\n"
        if text != self.prev_summary:
            self.prev_summary = text
            self.body.append(text)

    def annotation(self, node: Node) -> str:
        annotation = "" if node.type is None else f" : {self.type_repr(node.type)}"
        if not self.verbose:
            return annotation
        val = node.meta.get("val", node.meta.get("tensor_meta", node.meta.get("example_value", None)))
        if isinstance(val, Tensor):
            core = self.tensor_annotation(val)
            if type(val) is Tensor or type(val).__name__ == "FakeTensor":
                return f': "{core}"'
            return f': "{type(val).__name__}({core})"'
        if type(val).__name__ in ("SymInt", "SymFloat", "SymBool"):
            return f': "Sym({val!r})"'
        if type(val).__name__ == "TensorMetadata":
            return f': "{_dtype_abbr(val.dtype)}{_shape(val.shape)}"'
        return annotation

    def tensor_annotation(self, t: Any) -> str:
        stride = _shape(t.stride()) if self.include_stride else ""
        device = f"{t.device}" if self.include_device else ""
        return f"{self.red(_dtype_abbr(t.dtype))}{self.blue(_shape(t.shape))}{self.dim_blue(stride)}{self.dim_green(device)}"

    def emit(self, node: Node) -> None:
        ann = self.annotation(node)
        name = repr(node)
        if node.op == "placeholder":
            default = "" if not node.args else f" = {self.repr_arg(node.args[0])}"
            self.free_vars.append(f"{node.target}{ann}{default}")
            raw_name = node.target.replace("*", "")  # type: ignore[union-attr]
            if raw_name != name:
                self.body.append(f"{name} = {raw_name}\n")
            return
        if node.op == "call_method":
            receiver = _format_target(self.repr_arg(node.args[0]), node.target)  # type: ignore[arg-type]
            self.body.append(f"{name}{ann} = {receiver}({self.format_args(node.args[1:], node.kwargs)})")
            return
        if node.op == "call_function":
            self.emit_call_function(node, name, ann)
            return
        if node.op == "call_module":
            module = _format_target(self.root_module, node.target)  # type: ignore[arg-type]
            self.body.append(f"{name}{ann} = {module}({self.format_args(node.args, node.kwargs)})")
            return
        if node.op == "get_attr":
            self.body.append(f"{name}{ann} = {_format_target(self.root_module, node.target)}")  # type: ignore[arg-type]
            return
        if node.op == "output":
            if node.type is not None:
                self.return_annotation = f" -> {self.type_repr(node.type)}"
            self.body.append(self.codegen.generate_output(node.args[0], repr_fn=self.repr_arg))
            return
        raise NotImplementedError(f"node: {node.op} {node.target}")

    def emit_call_function(self, node: Node, name: str, ann: str) -> None:
        target = node.target
        fn_name = getattr(target, "__name__", None)
        if getattr(target, "__module__", "") == "_operator" and fn_name in magic_methods:
            text = magic_methods[fn_name].format(*(self.repr_arg(a) for a in node.args))
            self.body.append(f"{name}{ann} = {text}")
            return
        if getattr(target, "__module__", "") == "_operator" and fn_name in inplace_methods:
            text = inplace_methods[fn_name].format(*(self.repr_arg(a) for a in node.args))
            self.body.append(f"{text};  {name}{ann} = {self.repr_arg(node.args[0])}")
            return
        global_name = self.add_global(_get_qualified_name(target), target)
        args = node.args
        # getattr(x, "shape") reads as x.shape; with a default (three arguments) it stays a call.
        if global_name == "getattr" and len(args) == 2 and isinstance(args[1], str) and args[1].isidentifier():
            self.body.append(f"{name}{ann} = {_format_target(self.repr_arg(args[0]), args[1])}")
            return
        self.body.append(f"{name}{ann} = {global_name}({self.format_args(args, node.kwargs)})")


_counter_regexp = re.compile(r"# COUNTER: (\d+)")


def _dtype_abbr_name(dtype: Any) -> str:
    return str(dtype).split(".")[-1]
