"""Callables: user functions and closures (inlined), methods, builtins, ember ops, partials, super()."""

from __future__ import annotations

import inspect
import types
from typing import Any

from ember.dynamo.exc import Unsupported
from ember.dynamo.source import AttrSource, GetItemSource
from ember.dynamo.variables.base import CellVariable, ConstantVariable, VariableTracker


def bind_args(
    code: types.CodeType,
    defaults: tuple[VariableTracker, ...],
    kwdefaults: dict[str, VariableTracker],
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
    name: str,
) -> dict[str, VariableTracker]:
    """Python's argument binding, over trackers: the callee's locals by name."""
    from ember.dynamo.variables.containers import DictVariable, TupleVariable

    nargs = code.co_argcount
    nkw = code.co_kwonlyargcount
    names = code.co_varnames
    pos_names = names[:nargs]
    kwonly = names[nargs : nargs + nkw]
    has_varargs = bool(code.co_flags & inspect.CO_VARARGS)
    has_varkw = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    out: dict[str, VariableTracker] = {}
    for n, v in zip(pos_names, args, strict=False):
        out[n] = v
    extra = list(args[nargs:])
    if extra and not has_varargs:
        raise Unsupported(f"{name}() takes {nargs} positional arguments but {len(args)} were given")
    posonly = set(pos_names[: code.co_posonlyargcount])
    rest_kw: dict[str, VariableTracker] = {}
    for k, v in kwargs.items():
        if (k in pos_names and k not in posonly) or k in kwonly:
            if k in out:
                raise Unsupported(f"{name}() got multiple values for argument {k!r}")
            out[k] = v
        elif has_varkw:
            rest_kw[k] = v
        else:
            raise Unsupported(f"{name}() got an unexpected keyword argument {k!r}")
    first_default = nargs - len(defaults)
    for i, n in enumerate(pos_names):
        if n not in out:
            if i >= first_default:
                out[n] = defaults[i - first_default]
            else:
                raise Unsupported(f"{name}() missing required argument {n!r}")
    for n in kwonly:
        if n not in out:
            if n in kwdefaults:
                out[n] = kwdefaults[n]
            else:
                raise Unsupported(f"{name}() missing keyword-only argument {n!r}")
    i = nargs + nkw
    if has_varargs:
        out[names[i]] = TupleVariable(extra)
        i += 1
    if has_varkw:
        out[names[i]] = DictVariable(rest_kw)
    return out


class BaseUserFunctionVariable(VariableTracker):
    def get_code(self) -> types.CodeType:
        raise NotImplementedError

    def get_globals(self) -> dict:
        raise NotImplementedError

    def bind(self, tx, args, kwargs) -> dict[str, VariableTracker]:
        raise NotImplementedError

    def closure_cells(self, tx) -> dict[str, CellVariable]:
        raise NotImplementedError

    def call_function(self, tx, args, kwargs):
        return tx.inline_user_function(self, args, kwargs)


class UserFunctionVariable(BaseUserFunctionVariable):
    """A Python function that exists outside the capture (a global, an attribute, an argument)."""

    def __init__(self, fn: types.FunctionType, source=None) -> None:
        self.fn = fn
        self.source = source

    def python_type(self) -> type:
        return types.FunctionType

    def as_python_constant(self) -> Any:
        return self.fn

    def get_code(self):
        return self.fn.__code__

    def get_globals(self):
        return self.fn.__globals__

    def get_name(self) -> str:
        return self.fn.__qualname__

    def call_function(self, tx, args, kwargs):
        # ``is_compiling()`` (and functions marked like it, for packages that cannot import this one) answers
        # True in the graph, with no guard: at run time the real function answers False.
        if getattr(self.fn, "__ember_is_compiling__", False):
            return ConstantVariable(True)
        from ember.dynamo.variables.flex_attention import call_flex_attention, is_flex_attention

        if is_flex_attention(self.fn):  # one graph op, not the eager body (flex_attention.py)
            return call_flex_attention(tx, self.fn, args, kwargs)
        return super().call_function(tx, args, kwargs)

    def bind(self, tx, args, kwargs):
        from ember.dynamo.variables.builder import wrap

        fn = self.fn
        src = self.source
        defaults = tuple(
            wrap(tx, d, GetItemSource(AttrSource(src, "__defaults__"), i) if src else None)
            for i, d in enumerate(fn.__defaults__ or ())
        )
        kwdefaults = {
            k: wrap(tx, d, GetItemSource(AttrSource(src, "__kwdefaults__"), k) if src else None)
            for k, d in (fn.__kwdefaults__ or {}).items()
        }
        return bind_args(fn.__code__, defaults, kwdefaults, args, kwargs, fn.__name__)

    def closure_cells(self, tx):
        from ember.dynamo.variables.builder import wrap

        cells: dict[str, CellVariable] = {}
        for i, (name, cell) in enumerate(zip(self.fn.__code__.co_freevars, self.fn.__closure__ or (), strict=False)):
            key = id(cell)
            existing = tx.output.real_cells.get(key)
            if existing is not None:
                cells[name] = existing
                continue
            cell_src = GetItemSource(AttrSource(self.source, "__closure__"), i) if self.source else None
            try:
                content = cell.cell_contents
            except ValueError:
                vt = CellVariable(None, cell_src)
            else:
                vt = CellVariable(
                    wrap(tx, content, AttrSource(cell_src, "cell_contents") if cell_src else None), cell_src
                )
            tx.output.real_cells[key] = vt
            tx.output.keepalive.append(cell)
            cells[name] = vt
        return cells

    def var_getattr(self, tx, name):
        from ember.dynamo.variables.builder import wrap

        if name in ("__name__", "__qualname__", "__module__", "__doc__"):
            return ConstantVariable(getattr(self.fn, name))
        return wrap(tx, getattr(self.fn, name), AttrSource(self.source, name) if self.source else None)

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            cg.load_source(self.source)
        else:
            cg.load_const(self.fn)

    def describe(self) -> str:
        return f"the function {self.fn.__qualname__}"


class NestedFunctionVariable(BaseUserFunctionVariable):
    """A function made during capture (MAKE_FUNCTION): its closure cells are trackers."""

    def __init__(self, code, qualname, f_globals, defaults=None, kwdefaults=None, closure=None) -> None:
        self.code = code
        self.qualname = qualname
        self.f_globals = f_globals
        self.defaults = defaults  # TupleVariable or None
        self.kwdefaults = kwdefaults  # DictVariable or None
        self.closure = closure  # TupleVariable of CellVariable, or None

    def python_type(self) -> type:
        return types.FunctionType

    def get_code(self):
        return self.code

    def get_globals(self):
        return self.f_globals

    def get_name(self) -> str:
        return self.qualname

    def bind(self, tx, args, kwargs):
        defaults = tuple(self.defaults.items) if self.defaults is not None else ()
        kwdefaults = dict(self.kwdefaults.items) if self.kwdefaults is not None else {}
        return bind_args(self.code, defaults, kwdefaults, args, kwargs, self.code.co_name)

    def closure_cells(self, tx):
        if self.closure is None:
            return {}
        return dict(zip(self.code.co_freevars, self.closure.items, strict=True))

    def var_getattr(self, tx, name):
        if name in ("__name__",):
            return ConstantVariable(self.code.co_name)
        if name == "__qualname__":
            return ConstantVariable(self.qualname)
        raise Unsupported(f"attribute {name!r} of a nested function")

    def reconstruct(self, cg) -> None:
        if self.closure is not None:
            self._make_closure(cg)
            return
        fn = types.FunctionType(self.code, self.f_globals, self.code.co_name)
        if self.defaults is not None:
            fn.__defaults__ = self.defaults.as_python_constant()
        if self.kwdefaults is not None:
            fn.__kwdefaults__ = self.kwdefaults.as_python_constant()
        fn.__qualname__ = self.qualname
        cg.load_const(fn)

    def _make_closure(self, cg) -> None:
        """MAKE_FUNCTION in the generated code, over the frame's own cells (written back first)."""
        import sys

        cells = list(self.closure.items)
        if self.f_globals is not cg.tx_output.f_globals or not all(hasattr(c, "root_name") for c in cells):
            raise Unsupported("a closure over the cells of an inlined function escapes the compiled region")
        for c in cells:
            cg.write_back_cell(c)
        flags = 0
        if self.defaults is not None:
            cg.reconstruct(self.defaults)
            flags |= 0x01
        if self.kwdefaults is not None:
            cg.reconstruct(self.kwdefaults)
            flags |= 0x02
        for c in cells:
            cg.load_closure(c.root_name)
        cg.build("BUILD_TUPLE", len(cells))
        flags |= 0x08
        cg.load_const(self.code)
        if sys.version_info < (3, 13):
            cg.build("MAKE_FUNCTION", flags)
            return
        cg.add("MAKE_FUNCTION")
        for flag in (0x08, 0x02, 0x01):
            if flags & flag:
                cg.build("SET_FUNCTION_ATTRIBUTE", flag)

    def describe(self) -> str:
        return f"the nested function {self.qualname}"


class UserMethodVariable(VariableTracker):
    """A function bound to an object tracker (``obj.method``)."""

    def __init__(self, fn: VariableTracker, obj: VariableTracker, source=None) -> None:
        self.fn = fn
        self.obj = obj
        self.source = source

    def call_function(self, tx, args, kwargs):
        return self.fn.call_function(tx, [self.obj, *args], kwargs)

    def var_getattr(self, tx, name):
        if name == "__self__":
            return self.obj
        if name == "__func__":
            return self.fn
        return self.fn.var_getattr(tx, name)

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            cg.load_source(self.source)
            return
        cg.call_const(types.MethodType, [self.fn, self.obj])

    def describe(self) -> str:
        return f"the method {self.fn.describe()}"


class BuiltinVariable(VariableTracker):
    """A builtin function or type (len, isinstance, range, list, dict, ...), handled by one table."""

    def __init__(self, fn: Any, source=None) -> None:
        self.fn = fn
        self.source = source

    def as_python_constant(self) -> Any:
        return self.fn

    def python_type(self) -> type:
        return type(self.fn)

    def call_function(self, tx, args, kwargs):
        from ember.dynamo.variables.builtin import call_builtin

        return call_builtin(tx, self.fn, args, kwargs)

    def var_getattr(self, tx, name):
        from ember.dynamo.variables.builder import wrap

        value = getattr(self.fn, name)
        if isinstance(self.fn, type) and isinstance(
            inspect.getattr_static(self.fn, name, None), (classmethod, staticmethod)
        ):
            return wrap(tx, value, None)
        return wrap(tx, value, AttrSource(self.source, name) if self.source else None)

    def reconstruct(self, cg) -> None:
        cg.load_const(self.fn)

    def describe(self) -> str:
        return f"the builtin {getattr(self.fn, '__name__', self.fn)}"


class BuiltinMethodVariable(VariableTracker):
    """``obj.name`` for a method of a tracked builtin value (list.append, dict.items, str.format...)."""

    def __init__(self, obj: VariableTracker, name: str) -> None:
        self.obj = obj
        self.name = name

    def call_function(self, tx, args, kwargs):
        obj = self.obj
        if isinstance(obj, ConstantVariable):
            from ember.dynamo.variables.builtin import call_constant_method

            return call_constant_method(tx, obj, self.name, args, kwargs)
        return obj.call_method(tx, self.name, args, kwargs)

    def reconstruct(self, cg) -> None:
        cg.reconstruct(self.obj)
        cg.load_attr(self.name)

    def describe(self) -> str:
        return f"the method {self.name} of {self.obj.describe()}"


class TensorMethodVariable(VariableTracker):
    def __init__(self, tensor: VariableTracker, name: str) -> None:
        self.tensor = tensor
        self.name = name

    def call_function(self, tx, args, kwargs):
        return self.tensor.call_method(tx, self.name, args, kwargs)

    def reconstruct(self, cg) -> None:
        cg.reconstruct(self.tensor)
        cg.load_attr(self.name)

    def describe(self) -> str:
        return f"Tensor.{self.name}"


class PartialVariable(VariableTracker):
    """``functools.partial(fn, *args, **kwargs)`` with tracked pieces."""

    def __init__(self, func: VariableTracker, args: list, kwargs: dict, source=None) -> None:
        self.func, self.args, self.kwargs = func, list(args), dict(kwargs)
        self.source = source

    def call_function(self, tx, args, kwargs):
        return self.func.call_function(tx, [*self.args, *args], {**self.kwargs, **kwargs})

    def var_getattr(self, tx, name):
        from ember.dynamo.variables.containers import DictVariable, TupleVariable

        if name == "func":
            return self.func
        if name == "args":
            return TupleVariable(self.args)
        if name == "keywords":
            return DictVariable(self.kwargs)
        raise Unsupported(f"functools.partial has no attribute {name!r}")

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            cg.load_source(self.source)
            return
        import functools

        cg.call_const(functools.partial, [self.func, *self.args], self.kwargs)

    def describe(self) -> str:
        return "a functools.partial"
