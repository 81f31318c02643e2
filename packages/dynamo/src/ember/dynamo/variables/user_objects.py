"""Objects made during capture (instances of user classes, dataclasses, named tuples) and ``super()``."""

from __future__ import annotations

import collections
import inspect
import types
from typing import Any

from ember.dynamo.exc import Unsupported
from ember.dynamo.variables.base import ConstantVariable, VariableTracker
from ember.dynamo.variables.objects import _MISSING, ClassVariable, GradModeVariable, bind_class_attr


class NewObjectVariable(VariableTracker):
    """An instance of a user class created inside the captured region; its attributes are trackers."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.value = None  # no real object until the generated code builds one

    def python_type(self) -> type:
        return self.cls

    def var_getattr(self, tx, name: str) -> VariableTracker:
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is not None:
            return pending
        if name == "__class__":
            return ClassVariable(self.cls)
        static = inspect.getattr_static(self.cls, name, _MISSING)
        if static is _MISSING:
            getattr_fn = inspect.getattr_static(self.cls, "__getattr__", None)
            if isinstance(getattr_fn, types.FunctionType):
                return tx.inline_function_value(getattr_fn, [self, ConstantVariable(name)], {})
            raise Unsupported(f"{self.cls.__name__!r} object has no attribute {name!r}")
        return bind_class_attr(tx, self, static, name, None, None)

    def call_function(self, tx, args, kwargs):
        call = inspect.getattr_static(self.cls, "__call__", None)
        if isinstance(call, types.FunctionType):
            return tx.inline_function_value(call, [self, *args], kwargs)
        raise Unsupported(f"calling a {self.cls.__name__} object is not supported")

    def unpack(self, tx):
        iter_fn = inspect.getattr_static(self.cls, "__iter__", None)
        if isinstance(iter_fn, types.FunctionType):
            return tx.unpack_iterable(tx.inline_function_value(iter_fn, [self], {}))
        raise Unsupported(f"iterating over a {self.cls.__name__} object is not supported")

    def truth(self, tx) -> bool:
        for dunder in ("__bool__", "__len__"):
            fn = inspect.getattr_static(self.cls, dunder, None)
            if isinstance(fn, types.FunctionType):
                result = tx.inline_function_value(fn, [self], {})
                return result.truth(tx)
        return True

    def reconstruct(self, cg) -> None:
        cg.call_const(object.__new__, [ClassVariable(self.cls)])
        temp = cg.store_temp()
        from ember.dynamo.side_effects import DELETED

        for name, value in cg.tx_output.side_effects.attrs_of(self).items():
            if value is DELETED:
                continue
            # object.__setattr__: frozen dataclasses and __setattr__ overrides ran during capture.
            cg.call(
                lambda: cg.load_const(object.__setattr__),
                [lambda: cg.load_temp(temp), lambda name=name: cg.load_const(name), lambda v=value: cg.reconstruct(v)],
            )
            cg.add("POP_TOP")
        cg.load_temp(temp)

    def describe(self) -> str:
        return f"a new {self.cls.__name__} object"


def construct(tx, cls_vt: ClassVariable, args: list[VariableTracker], kwargs: dict) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a class known at capture time."""
    from ember.dynamo.trace_rules import api as _api

    api = _api()
    from ember.dynamo.variables.containers import TupleVariable
    from ember.dynamo.variables.functions import bind_args
    from ember.nn import Module

    cls = cls_vt.value
    if cls in (api.no_grad, api.enable_grad):
        return GradModeVariable(cls is api.enable_grad, cls)
    if cls is api.set_grad_enabled:
        mode = args[0].as_python_constant() if args else kwargs["mode"].as_python_constant()
        vt = GradModeVariable(bool(mode), cls)
        vt.prev = api.is_grad_enabled()
        tx.output.set_grad_mode(bool(mode))  # a plain call takes effect at once, as in eager
        return vt
    if cls is collections.Counter:
        from ember.dynamo.variables.containers import DictVariable
        from ember.dynamo.variables.objects import hashable_key

        counts: dict = {}
        for item in tx.unpack_iterable(args[0]) if args else []:
            k = hashable_key(item)
            counts[k] = counts.get(k, 0) + 1
        return DictVariable({k: ConstantVariable(n) for k, n in counts.items()}, cls=collections.Counter)
    if cls in (collections.OrderedDict, collections.defaultdict):
        from ember.dynamo.variables.containers import DictVariable

        default = None
        if cls is collections.defaultdict:
            default = args[0] if args else ConstantVariable(None)
            args = args[1:]
        d = DictVariable({}, cls=cls, default=default if cls is collections.defaultdict else None)
        if args or kwargs:
            d.call_method(tx, "update", list(args), kwargs)
        return d
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        new = cls.__new__
        defaults = tuple(ConstantVariable(d) for d in (new.__defaults__ or ()))
        bound = bind_args(new.__code__, defaults, {}, [cls_vt, *args], kwargs, cls.__name__)
        return TupleVariable([bound[f] for f in cls._fields], cls=cls)
    if issubclass(cls, Module):
        raise Unsupported(f"creating a module ({cls.__name__}) inside the compiled region is not supported")
    if issubclass(cls, BaseException):
        from ember.dynamo.variables.exceptions import ExceptionVariable

        return ExceptionVariable(cls, args)
    if type(cls) not in (type, abc_meta()) or cls.__new__ is not object.__new__:
        raise Unsupported(f"creating a {cls.__name__} object is not supported")
    if not cls.__dictoffset__:
        raise Unsupported(f"creating a {cls.__name__} object with __slots__ is not supported")
    obj = NewObjectVariable(cls)
    tx.output.side_effects.track_new(obj)
    init = inspect.getattr_static(cls, "__init__")
    if isinstance(init, types.FunctionType):
        tx.inline_function_value(init, [obj, *args], kwargs)
    elif init is not object.__init__ or args or kwargs:
        raise Unsupported(f"{cls.__name__}.__init__ is not a Python function")
    return obj


def abc_meta() -> type:
    import abc

    return abc.ABCMeta


class SuperVariable(VariableTracker):
    """``super()`` (or ``super(cls, obj)``): attributes are looked up past ``cls`` in the MRO of obj."""

    def __init__(self, cls: type, obj: VariableTracker) -> None:
        self.cls = cls
        self.obj = obj

    def var_getattr(self, tx, name: str) -> VariableTracker:
        obj_type = self.obj.python_type()
        mro = obj_type.__mro__
        start = mro.index(self.cls) + 1
        for klass in mro[start:]:
            if name in klass.__dict__:
                static = klass.__dict__[name]
                if klass is object and name == "__init__":
                    return NoopVariable()
                if isinstance(static, (types.FunctionType, property, staticmethod, classmethod)):
                    return bind_class_attr(tx, self.obj, static, name, None, None)
                raise Unsupported(f"super().{name} resolves to a builtin of {klass.__name__}")
        raise Unsupported(f"super() has no attribute {name!r}")

    def describe(self) -> str:
        return "super()"


class NoopVariable(VariableTracker):
    """A call that does nothing (``object.__init__`` reached through ``super()``)."""

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return ConstantVariable(None)


def set_new_attr(tx, obj: VariableTracker, name: str, value: VariableTracker) -> Any:
    tx.output.side_effects.store_attr(obj, name, value)
    return ConstantVariable(None)
