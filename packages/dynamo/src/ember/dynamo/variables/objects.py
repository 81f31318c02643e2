"""Objects held by identity: user objects and nn.Modules, Python modules, classes, ember op functions,
grad-mode context managers and ``super()``."""

from __future__ import annotations

import dataclasses
import inspect
import types
from typing import Any

from ember.dynamo.exc import Unsupported
from ember.dynamo.source import AttrSource, TypeSource
from ember.dynamo.variables.base import ConstantVariable, VariableTracker

_MISSING = object()
_MODULE_ITERATORS = frozenset(
    {
        "parameters",
        "named_parameters",
        "buffers",
        "named_buffers",
        "children",
        "named_children",
        "modules",
        "named_modules",
    }
)
CONSTANT_TYPES = (int, float, bool, str, bytes, complex, type(None), type(Ellipsis), type(NotImplemented))


def hashable_key(vt: VariableTracker) -> Any:
    if isinstance(vt, ConstantVariable):
        return vt.value
    if isinstance(vt, (ObjectVariable, PythonModuleVariable, ClassVariable)):
        return _IdKey(vt)
    from ember.dynamo.variables.functions import BuiltinVariable, UserFunctionVariable

    if isinstance(vt, (UserFunctionVariable, BuiltinVariable)):
        return _IdKey(vt)
    real = getattr(vt, "real_value", None)
    if real is not None:  # a graph input tensor: a key by the identity of the real tensor (optimizer state)
        return _IdKey(vt, real)
    if vt.is_python_constant():
        return vt.as_python_constant()
    raise Unsupported(f"{vt.describe()} as a dict key or set item is not supported")


class _IdKey:
    """A dict key standing for an object held by identity; remembers its tracker."""

    def __init__(self, vt: VariableTracker, obj: Any = None) -> None:
        self.vt = vt
        if obj is None:
            obj = getattr(vt, "value", None) if not hasattr(vt, "fn") else vt.fn
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _IdKey) and other.obj is self.obj


def key_to_vt(k: Any) -> VariableTracker:
    if isinstance(k, _IdKey):
        return k.vt
    return ConstantVariable(k)


class ObjectVariable(VariableTracker):
    """A Python object from the frame (user classes, nn.Modules): attributes read through, writes recorded."""

    def __init__(self, value: Any, source=None) -> None:
        self.value = value
        self.source = source

    def python_type(self) -> type:
        return type(self.value)

    def is_module(self) -> bool:
        from ember.nn import Module

        return isinstance(self.value, Module)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from ember.dynamo.variables.builder import wrap

        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is not None:
            return pending
        obj = self.value
        src = AttrSource(self.source, name) if self.source is not None else None
        if name == "__class__":
            return wrap(tx, type(obj), TypeSource(self.source) if self.source else None)
        if name == "__dict__":
            raise Unsupported("reading an object's __dict__ is not supported")
        if self.is_module() and name in _MODULE_ITERATORS:
            from ember.dynamo.variables.functions import BuiltinMethodVariable

            return BuiltinMethodVariable(self, name)
        if self.is_module():
            d = obj.__dict__
            for store in ("_parameters", "_buffers", "_modules"):
                if name in d.get(store, {}):
                    return wrap(tx, d[store][name], src)
        static = inspect.getattr_static(obj, name, _MISSING)
        if static is _MISSING:
            if self.is_module() or not hasattr(type(obj), "__getattr__"):
                raise Unsupported(f"{type(obj).__name__!r} object has no attribute {name!r}")
            getattr_fn = type(obj).__getattr__
            if isinstance(getattr_fn, types.FunctionType):
                return tx.inline_function_value(getattr_fn, [self, ConstantVariable(name)], {})
            raise Unsupported(f"{type(obj).__name__}.__getattr__ is not traceable")
        inst_dict = getattr(obj, "__dict__", {})
        if name in inst_dict:
            return wrap(tx, inst_dict[name], src)
        cls_src = AttrSource(TypeSource(self.source), name) if self.source is not None else None
        return bind_class_attr(tx, self, static, name, cls_src, src)

    def call_function(self, tx, args, kwargs):
        obj = self.value
        if self.is_module():
            if obj._forward_pre_hooks or obj._forward_hooks:
                raise Unsupported(
                    "module hooks are not supported by capture", "remove the hooks or compile inside them"
                )
            from ember.dynamo.variables.builder import wrap

            forward = inspect.getattr_static(obj, "forward")
            fsrc = AttrSource(TypeSource(self.source), "forward") if self.source else None
            return bind_class_attr(tx, self, forward, "forward", fsrc, None).call_function(tx, args, kwargs)
        call = inspect.getattr_static(type(obj), "__call__", None)
        if isinstance(call, types.FunctionType):
            from ember.dynamo.variables.builder import wrap
            from ember.dynamo.variables.functions import UserMethodVariable

            src = AttrSource(TypeSource(self.source), "__call__") if self.source else None
            return UserMethodVariable(wrap(tx, call, src), self).call_function(tx, args, kwargs)
        raise Unsupported(f"calling a {type(obj).__name__} object is not supported")

    def call_method(self, tx, name, args, kwargs):
        if self.is_module() and name in _MODULE_ITERATORS:
            return self._module_iter(tx, name, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def _module_iter(self, tx, name, args, kwargs):
        from ember.dynamo.variables.builder import wrap
        from ember.dynamo.variables.containers import IteratorVariable, TupleVariable

        cargs = [a.as_python_constant() for a in args]
        ckw = {k: v.as_python_constant() for k, v in kwargs.items()}
        named = name.startswith("named")
        method = name if named else f"named_{name}"
        out = []
        for key, val in getattr(self.value, method)(*cargs, **ckw):
            src = self.source
            if src is not None:
                for part in key.split(".") if key else []:
                    src = AttrSource(src, part)
            vt = wrap(tx, val, src)
            out.append(TupleVariable([ConstantVariable(key), vt]) if named else vt)
        return IteratorVariable(out)

    def truth(self, tx) -> bool:
        if hasattr(type(self.value), "__bool__") or hasattr(type(self.value), "__len__"):
            raise Unsupported(f"truth of a {type(self.value).__name__} object")
        return True

    def unpack(self, tx):
        from ember.nn import ModuleDict, ModuleList, ParameterList, Sequential

        if isinstance(self.value, (ModuleList, Sequential, ParameterList)):
            return [self.var_getattr(tx, k) for k in self.value._modules or self.value._parameters]
        if isinstance(self.value, ModuleDict):
            return [ConstantVariable(k) for k in self.value._modules]
        iter_fn = inspect.getattr_static(type(self.value), "__iter__", None)
        if isinstance(iter_fn, types.FunctionType):
            it = tx.inline_function_value(iter_fn, [self], {})
            return tx.unpack_iterable(it)
        raise Unsupported(f"iterating over a {type(self.value).__name__} object is not supported")

    def describe(self) -> str:
        return f"a {type(self.value).__name__} object"


def bind_class_attr(tx, obj_vt: VariableTracker, static: Any, name: str, cls_src, inst_src) -> VariableTracker:
    """What ``obj.name`` gives when ``name`` is found on the class (``static``, found without binding)."""
    from ember.dynamo.variables.builder import wrap
    from ember.dynamo.variables.functions import UserMethodVariable

    if isinstance(static, staticmethod):
        return wrap(tx, static.__func__, None)
    if isinstance(static, classmethod):
        return UserMethodVariable(wrap(tx, static.__func__, None), wrap(tx, obj_vt.python_type(), None))
    if isinstance(static, types.FunctionType):
        return UserMethodVariable(wrap(tx, static, cls_src), obj_vt)
    if isinstance(static, property):
        if static.fget is None:
            raise Unsupported(f"property {name!r} has no getter")
        return tx.inline_function_value(static.fget, [obj_vt], {})
    if isinstance(static, functools_cached_property()):
        raise Unsupported("functools.cached_property is not supported")
    if hasattr(type(static), "__get__") and not isinstance(static, (types.BuiltinFunctionType, type)):
        # Other descriptors (slots, C methods): read through the real object.
        value = getattr(obj_vt.value, name)
        if isinstance(value, types.BuiltinMethodType) or (callable(value) and not isinstance(value, type)):
            return wrap(tx, value, inst_src)
        return wrap(tx, value, inst_src)
    return wrap(tx, static, cls_src)


def functools_cached_property() -> type:
    import functools

    return functools.cached_property


class PythonModuleVariable(VariableTracker):
    def __init__(self, value: types.ModuleType, source=None) -> None:
        self.value = value
        self.source = source

    def python_type(self) -> type:
        return types.ModuleType

    def var_getattr(self, tx, name):
        from ember.dynamo.variables.builder import wrap

        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is not None:
            return pending
        if not hasattr(self.value, name):
            raise Unsupported(f"module {self.value.__name__!r} has no attribute {name!r}")
        value = getattr(self.value, name)
        return wrap(tx, value, AttrSource(self.source, name) if self.source else None)

    def reconstruct(self, cg) -> None:
        cg.load_const(self.value)

    def describe(self) -> str:
        return f"the module {self.value.__name__}"


class ClassVariable(VariableTracker):
    """A user class (or a non-builtin class): calling it makes a tracked new object."""

    def __init__(self, value: type, source=None) -> None:
        self.value = value
        self.source = source

    def python_type(self) -> type:
        return type(self.value)

    def as_python_constant(self) -> Any:
        return self.value

    def var_getattr(self, tx, name):
        from ember.dynamo.variables.builder import wrap

        static = inspect.getattr_static(self.value, name, _MISSING)
        if static is _MISSING:
            raise Unsupported(f"class {self.value.__name__} has no attribute {name!r}")
        if isinstance(static, staticmethod):
            return wrap(tx, static.__func__, None)
        if isinstance(static, classmethod):
            from ember.dynamo.variables.functions import UserMethodVariable

            return UserMethodVariable(wrap(tx, static.__func__, None), self)
        return wrap(tx, getattr(self.value, name), AttrSource(self.source, name) if self.source else None)

    def call_function(self, tx, args, kwargs):
        from ember.dynamo.variables.user_objects import construct

        return construct(tx, self, args, kwargs)

    def reconstruct(self, cg) -> None:
        cg.load_const(self.value)

    def describe(self) -> str:
        return f"the class {self.value.__qualname__}"


class EmberFunctionVariable(VariableTracker):
    """An ember op function (or one allowed in the graph): a call is a ``call_function`` node."""

    def __init__(self, fn: Any, source=None) -> None:
        self.fn = fn
        self.source = source

    def as_python_constant(self) -> Any:
        return self.fn

    def python_type(self) -> type:
        return type(self.fn)

    def call_function(self, tx, args, kwargs):
        from ember.dynamo.trace_rules import api as _api

        api = _api()

        fn = self.fn
        if fn is api.is_grad_enabled:
            return ConstantVariable(api.is_grad_enabled())
        if fn is not None and fn is api.is_tensor:
            from ember.dynamo.variables.tensor import TensorVariable

            return ConstantVariable(isinstance(args[0], TensorVariable))
        if fn is api.get_default_dtype:
            return ConstantVariable(api.get_default_dtype())
        if fn is not None and fn in (api.is_floating_point, api.numel):
            return args[0].call_method(tx, fn.__name__, args[1:], kwargs)
        return tx.output.call_graph("call_function", fn, args, kwargs)

    def var_getattr(self, tx, name):
        if name in ("__name__", "__qualname__", "__module__"):
            return ConstantVariable(getattr(self.fn, name))
        raise Unsupported(f"attribute {name!r} of {self.describe()}")

    def reconstruct(self, cg) -> None:
        cg.load_const(self.fn)

    def describe(self) -> str:
        return f"ember.{getattr(self.fn, '__name__', self.fn)}"


class GradModeVariable(VariableTracker):
    """``ember.no_grad()`` / ``enable_grad()`` / ``set_grad_enabled(b)`` used in a ``with`` block."""

    def __init__(self, target: bool, cls: type) -> None:
        self.target = target
        self.cls = cls
        self.prev: bool | None = None

    def enter(self, tx) -> VariableTracker:
        from ember.dynamo.trace_rules import api as _api

        api = _api()

        self.prev = api.is_grad_enabled()
        tx.output.set_grad_mode(self.target)
        return ConstantVariable(None)

    def exit(self, tx) -> VariableTracker:
        tx.output.set_grad_mode(self.prev)
        return ConstantVariable(None)

    def var_getattr(self, tx, name):
        from ember.dynamo.variables.functions import BuiltinMethodVariable

        if name in ("__enter__", "__exit__"):
            return BuiltinMethodVariable(self, name)
        raise Unsupported(f"grad mode object attribute {name!r}")

    def call_method(self, tx, name, args, kwargs):
        if name == "__enter__":
            return self.enter(tx)
        if name == "__exit__":
            return self.exit(tx)
        raise Unsupported(f"grad mode object method {name!r}")

    def reconstruct(self, cg) -> None:
        # Only the block's exit is ever rebuilt (a graph break inside the block): restore the mode before it.
        cg.call_const(GradModeRestore, [ConstantVariable(self.prev)])

    def call_function(self, tx, args, kwargs):
        # Used as a decorator: @ember.no_grad() def f(...)
        raise Unsupported("grad-mode decorators made inside the compiled region are not supported")

    def describe(self) -> str:
        return f"{self.cls.__name__}()"


class GradModeRestore:
    """The rest of a grad-mode ``with`` block that a graph break split: its exit restores the mode."""

    def __init__(self, prev: bool) -> None:
        self.prev = prev

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        from ember.dynamo.trace_rules import api as _api

        api = _api()

        api.set_grad_enabled(self.prev)


def is_dataclass_instance(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)
