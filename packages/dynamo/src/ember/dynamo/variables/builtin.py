"""Builtins and operators, through one lookup table: ``call_builtin(tx, fn, args, kwargs)``.

Operators on tensors (or symbolic sizes) become ``operator.*`` graph nodes; on constants they are
computed at capture time; on containers and user objects they follow Python's rules.
"""

from __future__ import annotations

import builtins
import functools
import math
import operator
from collections.abc import Callable
from typing import Any

from ember.dynamo.exc import Unsupported
from ember.dynamo.variables.base import ConstantVariable, VariableTracker
from ember.dynamo.variables.containers import (
    BaseListVariable,
    DictVariable,
    DictViewVariable,
    IteratorVariable,
    ListVariable,
    SetVariable,
    TupleVariable,
)
from ember.dynamo.variables.functions import BuiltinVariable, UserFunctionVariable
from ember.dynamo.variables.tensor import SymNodeVariable, TensorVariable

# Pure functions of constants: computed at capture time when every argument is a constant.
_PURE = {
    abs, all, any, bool, callable, chr, divmod, float, format, hash, int, len, max, min, ord, pow, repr, round,
    sorted, str, sum, tuple, list, dict, set, frozenset, range, slice, reversed, enumerate, zip, type, isinstance,
    issubclass, complex, bin, hex, oct, iter,
}  # fmt: skip
_PURE_MODULES = (operator, math)

_REFLECTED = {
    operator.add: "__radd__", operator.sub: "__rsub__", operator.mul: "__rmul__", operator.truediv: "__rtruediv__",
    operator.floordiv: "__rfloordiv__", operator.mod: "__rmod__", operator.pow: "__rpow__",
    operator.matmul: "__rmatmul__", operator.and_: "__rand__", operator.or_: "__ror__", operator.xor: "__rxor__",
    operator.lshift: "__rlshift__", operator.rshift: "__rrshift__",
}  # fmt: skip
_DUNDER = {
    operator.add: "__add__", operator.sub: "__sub__", operator.mul: "__mul__", operator.truediv: "__truediv__",
    operator.floordiv: "__floordiv__", operator.mod: "__mod__", operator.pow: "__pow__",
    operator.matmul: "__matmul__", operator.and_: "__and__", operator.or_: "__or__", operator.xor: "__xor__",
    operator.lshift: "__lshift__", operator.rshift: "__rshift__", operator.eq: "__eq__", operator.ne: "__ne__",
    operator.lt: "__lt__", operator.le: "__le__", operator.gt: "__gt__", operator.ge: "__ge__",
    operator.iadd: "__iadd__", operator.imul: "__imul__", operator.isub: "__isub__",
    operator.itruediv: "__itruediv__",
    operator.neg: "__neg__", operator.pos: "__pos__", operator.invert: "__invert__",
}  # fmt: skip
INPLACE_TO_PLAIN = {
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv, operator.imod: operator.mod,
    operator.ipow: operator.pow, operator.imatmul: operator.matmul, operator.iand: operator.and_,
    operator.ior: operator.or_, operator.ixor: operator.xor, operator.ilshift: operator.lshift,
    operator.irshift: operator.rshift,
}  # fmt: skip


def _is_graph_value(vt: VariableTracker) -> bool:
    return isinstance(vt, (TensorVariable, SymNodeVariable))


def _user_dunder(tx, vt: VariableTracker, name: str):
    import inspect
    import types

    from ember.dynamo.variables.objects import ObjectVariable
    from ember.dynamo.variables.user_objects import NewObjectVariable

    if isinstance(vt, (ObjectVariable, NewObjectVariable)):
        fn = inspect.getattr_static(vt.python_type(), name, None)
        if isinstance(fn, types.FunctionType):
            return fn
    return None


def apply_operator(tx, fn: Callable, args: list[VariableTracker]) -> VariableTracker:
    """``fn(*args)`` for an operator-module function, on any trackers."""
    if any(_is_graph_value(a) for a in args):
        if fn in INPLACE_TO_PLAIN and isinstance(args[0], TensorVariable):
            return tx.output.call_graph("call_function", fn, args, {})
        if fn in INPLACE_TO_PLAIN:
            fn = INPLACE_TO_PLAIN[fn]
        if fn in (operator.is_, operator.is_not):
            same = args[0] is args[1]
            return ConstantVariable(same if fn is operator.is_ else not same)
        if fn is operator.contains:
            raise Unsupported("`in` with a tensor depends on its data")
        if fn is operator.not_:
            raise Unsupported("`not` of a tensor depends on its data")
        user = [a for a in args if _user_dunder(tx, a, _DUNDER.get(fn, "")) is not None]
        if not user:
            return tx.output.call_graph("call_function", fn, args, {})
    if all(isinstance(a, ConstantVariable) for a in args):
        try:
            return ConstantVariable(fn(*[a.value for a in args]))
        except Exception as e:  # the same error eager would raise: break so that it raises there
            raise Unsupported(f"{fn.__name__} raised {type(e).__name__} at capture time: {e}") from None
    if fn in (operator.is_, operator.is_not):
        a, b = args
        same = _identical(a, b)
        return ConstantVariable(same if fn is operator.is_ else not same)
    if fn is operator.not_:
        return ConstantVariable(not args[0].truth(tx))
    if fn is operator.truth:
        return ConstantVariable(args[0].truth(tx))
    if fn is operator.getitem:
        return getitem(tx, args[0], args[1])
    if fn is operator.contains:
        return args[0].call_method(tx, "__contains__", [args[1]], {})
    if fn in INPLACE_TO_PLAIN and isinstance(args[0], ListVariable) and fn is operator.iadd:
        return args[0].call_method(tx, "extend", [args[1]], {}) and args[0]
    if fn in INPLACE_TO_PLAIN and _user_dunder(tx, args[0], _DUNDER.get(fn, "")) is None:
        return apply_operator(tx, INPLACE_TO_PLAIN[fn], args)
    if len(args) == 2:
        a, b = args
        name = _DUNDER.get(fn)
        if name is not None:
            f = _user_dunder(tx, a, name)
            if f is not None:
                return tx.inline_function_value(f, [a, b], {})
            rname = _REFLECTED.get(fn)
            f = _user_dunder(tx, b, rname) if rname else None
            if f is not None:
                return tx.inline_function_value(f, [b, a], {})
        if fn in (operator.eq, operator.ne):
            eq = compare_eq(tx, a, b)
            return ConstantVariable(eq if fn is operator.eq else not eq)
        if isinstance(a, BaseListVariable) and isinstance(b, BaseListVariable) and fn is operator.add:
            return a.rebuild(a.items + b.items) if type(a) is type(b) else _type_error(fn, a, b)
        if isinstance(a, BaseListVariable) and isinstance(b, ConstantVariable) and fn is operator.mul:
            return a.rebuild(a.items * b.value)
        if isinstance(b, BaseListVariable) and isinstance(a, ConstantVariable) and fn is operator.mul:
            return b.rebuild(b.items * a.value)
        if isinstance(a, SetVariable) and isinstance(b, SetVariable) and fn in _SET_OPS:
            return a.call_method(tx, _SET_OPS[fn], [b], {})
        if isinstance(a, DictVariable) and isinstance(b, DictVariable) and fn is operator.or_:
            return DictVariable({**a.items, **b.items})
        if (
            fn in (operator.lt, operator.le, operator.gt, operator.ge)
            and a.is_python_constant()
            and b.is_python_constant()
        ):
            return ConstantVariable(fn(a.as_python_constant(), b.as_python_constant()))
    if (
        fn is operator.or_
        and all(a.is_python_constant() for a in args)
        and all(isinstance(a.as_python_constant(), type) for a in args)
    ):
        return ConstantVariable(fn(*[a.as_python_constant() for a in args]))  # ``list | tuple``
    if len(args) == 1:
        f = _user_dunder(tx, args[0], _DUNDER.get(fn, ""))
        if f is not None:
            return tx.inline_function_value(f, args, {})
    raise Unsupported(f"operator.{fn.__name__} on {', '.join(a.describe() for a in args)} is not supported")


_SET_OPS = {
    operator.or_: "union",
    operator.and_: "intersection",
    operator.sub: "difference",
    operator.xor: "symmetric_difference",
}


def _type_error(fn, a, b):
    raise Unsupported(f"{fn.__name__} of {a.describe()} and {b.describe()} raises TypeError")


def _identical(a: VariableTracker, b: VariableTracker) -> bool:
    if a is b:
        return True
    va, vb = getattr(a, "value", _NO), getattr(b, "value", _NO)
    if va is not _NO and vb is not _NO and not isinstance(a, ConstantVariable) and not isinstance(b, ConstantVariable):
        return va is vb
    fa, fb = getattr(a, "fn", _NO), getattr(b, "fn", _NO)
    if fa is not _NO and fb is not _NO:
        return fa is fb
    if isinstance(a, ConstantVariable) and isinstance(b, ConstantVariable):
        return a.value is b.value
    if isinstance(a, ConstantVariable) or isinstance(b, ConstantVariable):
        return False  # a constant (None, True, ...) is never a container or an object held by identity
    return False


_NO = object()


def compare_eq(tx, a: VariableTracker, b: VariableTracker) -> bool:
    if a is b:
        return True
    if _is_graph_value(a) or _is_graph_value(b):
        raise Unsupported("== on a tensor inside a container comparison")
    if isinstance(a, ConstantVariable) and isinstance(b, ConstantVariable):
        return a.value == b.value
    if isinstance(a, BaseListVariable) and isinstance(b, BaseListVariable):
        if type(a) is not type(b) and not (isinstance(a, TupleVariable) and isinstance(b, TupleVariable)):
            return False
        return len(a.items) == len(b.items) and all(compare_eq(tx, x, y) for x, y in zip(a.items, b.items, strict=True))
    if a.is_python_constant() and b.is_python_constant():
        return a.as_python_constant() == b.as_python_constant()
    return _identical(a, b)


def getitem(tx, obj: VariableTracker, key: VariableTracker) -> VariableTracker:
    if isinstance(obj, TensorVariable):
        return tx.output.call_graph("call_function", operator.getitem, [obj, key], {})
    if isinstance(obj, (BaseListVariable, DictVariable)):
        if isinstance(key, SymNodeVariable):
            key = ConstantVariable(key.as_int())
        return obj.getitem(tx, key)
    if isinstance(obj, ConstantVariable):
        return ConstantVariable(obj.value[key.as_python_constant()])
    from ember.dynamo.variables.objects import ObjectVariable

    if isinstance(obj, ObjectVariable):
        from ember.nn import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential

        v = obj.value
        k = key.as_python_constant()
        if isinstance(v, (ModuleList, Sequential, ParameterList)):
            names = list(v._modules) if not isinstance(v, ParameterList) else list(v._parameters)
            if isinstance(k, slice):
                raise Unsupported("slicing a ModuleList/Sequential inside the compiled region")
            return obj.var_getattr(tx, names[k])
        if isinstance(v, (ModuleDict, ParameterDict)):
            return obj.var_getattr(tx, k)
    f = _user_dunder(tx, obj, "__getitem__")
    if f is not None:
        return tx.inline_function_value(f, [obj, key], {})
    return obj.call_method(tx, "__getitem__", [key], {})


def sort_items(tx, items: list[VariableTracker], key: VariableTracker | None, reverse: bool) -> list[VariableTracker]:
    if key is None or (isinstance(key, ConstantVariable) and key.value is None):
        keys = [v.as_python_constant() for v in items]
    else:
        keys = [key.call_function(tx, [v], {}).as_python_constant() for v in items]
    order = sorted(range(len(items)), key=lambda i: keys[i], reverse=reverse)
    return [items[i] for i in order]


def _iter_items(tx, vt: VariableTracker) -> list[VariableTracker]:
    return tx.unpack_iterable(vt)


def _minmax(tx, fn, args, kwargs):
    items = _iter_items(tx, args[0]) if len(args) == 1 else list(args)
    if "key" in kwargs or "default" in kwargs:
        raise Unsupported(f"{fn.__name__}() with key= or default=")
    if any(_is_graph_value(v) for v in items):
        if len(items) == 2 and any(isinstance(v, TensorVariable) for v in items):
            from ember.dynamo.trace_rules import api as _api

            api = _api()

            tensor_fn = api.maximum if fn is max else api.minimum
            a, b = items
            if all(isinstance(v, TensorVariable) for v in items):
                return tx.output.call_graph("call_function", tensor_fn, [a, b], {})
        if all(isinstance(v, (SymNodeVariable, ConstantVariable)) for v in items):
            return tx.output.call_graph("call_function", fn, items, {})
        raise Unsupported(f"{fn.__name__}() over tensors depends on their data")
    values = [v.as_python_constant() for v in items]
    result = fn(values)
    return items[values.index(result)]


def _isinstance(tx, args, kwargs):
    obj, classes = args
    cls = classes.as_python_constant()
    t = obj.python_type()
    if isinstance(obj, TensorVariable):
        from ember.nn import Parameter

        t = Parameter if getattr(obj.example, "_is_param", False) else type(obj.example)
        if t.__name__ == "FakeTensor":
            from ember.dynamo.trace_rules import api as _api

            api = _api()

            t = api.Tensor
        src_value = tx.output.input_value(obj)
        if src_value is not None:
            t = type(src_value)
    return ConstantVariable(issubclass(t, cls))


def _getattr(tx, args, kwargs):
    obj, name = args[0], args[1].as_python_constant()
    if len(args) == 3:
        try:
            return tx.getattr(obj, name)
        except Unsupported as e:
            if "has no attribute" in e.reason:
                return args[2]
            raise
    return tx.getattr(obj, name)


def _hasattr(tx, args, kwargs):
    obj, name = args[0], args[1].as_python_constant()
    try:
        tx.getattr(obj, name)
    except Unsupported as e:
        if "has no attribute" in e.reason:
            return ConstantVariable(False)
        raise
    return ConstantVariable(True)


def _setattr(tx, args, kwargs):
    tx.store_attr(args[0], args[1].as_python_constant(), args[2])
    return ConstantVariable(None)


def _len(tx, args, kwargs):
    obj = args[0]
    if isinstance(obj, TensorVariable):
        return obj.call_method(tx, "__len__", [], {})
    if isinstance(obj, (BaseListVariable, DictVariable, SetVariable, DictViewVariable)):
        return ConstantVariable(len(obj.unpack(tx)) if not isinstance(obj, DictVariable) else len(obj.items))
    from ember.dynamo.variables.objects import ObjectVariable

    if isinstance(obj, ObjectVariable):
        from ember.nn import ModuleDict, ModuleList, ParameterList, Sequential

        if isinstance(obj.value, (ModuleList, Sequential, ModuleDict)):
            return ConstantVariable(len(obj.value._modules))
        if isinstance(obj.value, ParameterList):
            return ConstantVariable(len(obj.value._parameters))
    f = _user_dunder(tx, obj, "__len__")
    if f is not None:
        return tx.inline_function_value(f, [obj], {})
    if obj.is_python_constant():
        return ConstantVariable(len(obj.as_python_constant()))
    raise Unsupported(f"len() of {obj.describe()}")


def _sum(tx, args, kwargs):
    items = _iter_items(tx, args[0])
    acc = args[1] if len(args) > 1 else kwargs.get("start", ConstantVariable(0))
    if all(isinstance(v, ConstantVariable) for v in [*items, acc]):
        return ConstantVariable(sum((v.value for v in items), acc.value))
    for v in items:
        acc = apply_operator(tx, operator.add, [acc, v])
    return acc


def _sorted(tx, args, kwargs):
    items = _iter_items(tx, args[0])
    reverse = kwargs.get("reverse", ConstantVariable(False)).as_python_constant()
    return ListVariable(sort_items(tx, items, kwargs.get("key"), reverse))


def _zip(tx, args, kwargs):
    lists = [_iter_items(tx, a) for a in args]
    strict = kwargs.get("strict", ConstantVariable(False)).as_python_constant()
    if strict and len({len(x) for x in lists}) > 1:
        raise Unsupported("zip(strict=True) with unequal lengths")
    return IteratorVariable([TupleVariable(list(t)) for t in zip(*lists, strict=False)])


def _enumerate(tx, args, kwargs):
    start = args[1] if len(args) > 1 else kwargs.get("start", ConstantVariable(0))
    s = start.as_python_constant()
    return IteratorVariable(
        [TupleVariable([ConstantVariable(i + s), v]) for i, v in enumerate(_iter_items(tx, args[0]))]
    )


def _map(tx, args, kwargs):
    fn, *its = args
    lists = [_iter_items(tx, a) for a in its]
    return IteratorVariable([fn.call_function(tx, list(t), {}) for t in zip(*lists, strict=False)])


def _filter(tx, args, kwargs):
    fn, it = args
    items = _iter_items(tx, it)
    if isinstance(fn, ConstantVariable) and fn.value is None:
        return IteratorVariable([v for v in items if v.truth(tx)])
    return IteratorVariable([v for v in items if fn.call_function(tx, [v], {}).truth(tx)])


def _reversed(tx, args, kwargs):
    obj = args[0]
    if isinstance(obj, ConstantVariable) and isinstance(obj.value, range):
        return IteratorVariable([ConstantVariable(v) for v in reversed(obj.value)])
    return IteratorVariable(list(reversed(_iter_items(tx, obj))))


def _iter(tx, args, kwargs):
    return tx.get_iter(args[0])


def _next(tx, args, kwargs):
    it = args[0]
    if isinstance(it, IteratorVariable):
        v = it.next(tx)
        if v is not None:
            tx.output.side_effects.mutate_iterator(it)
            return v
        if len(args) > 1:
            return args[1]
        from ember.dynamo.variables.exceptions import user_error

        raise user_error(StopIteration)
    return it.call_method(tx, "__next__", [], {})


def _container(cls):
    def build(tx, args, kwargs):
        if not args:
            if cls is dict:
                return DictVariable(dict(kwargs))
            return {list: ListVariable, tuple: TupleVariable}.get(
                cls, lambda x: SetVariable(x, frozen=cls is frozenset)
            )([])
        if cls is dict:
            src = args[0]
            d = DictVariable({})
            d.call_method(tx, "update", [src], kwargs)
            return d
        items = _iter_items(tx, args[0])
        if cls is list:
            return ListVariable(items)
        if cls is tuple:
            return TupleVariable(items)
        return SetVariable(items, frozen=cls is frozenset)

    return build


def _all_any(fn):
    def run(tx, args, kwargs):
        items = _iter_items(tx, args[0])
        return ConstantVariable(fn(v.truth(tx) for v in items))

    return run


def _bool(tx, args, kwargs):
    return ConstantVariable(args[0].truth(tx)) if args else ConstantVariable(False)


def _scalar_cast(cls):
    def run(tx, args, kwargs):
        if args and isinstance(args[0], TensorVariable):
            raise Unsupported(f"{cls.__name__}() of a tensor needs its data", "keep the value as a tensor")
        if args and isinstance(args[0], SymNodeVariable):
            return tx.output.call_graph("call_function", cls, args, {})
        return ConstantVariable(cls(*[a.as_python_constant() for a in args]))

    return run


def _type(tx, args, kwargs):
    from ember.dynamo.variables.builder import wrap

    if len(args) != 1:
        raise Unsupported("type() with three arguments")
    obj = args[0]
    if isinstance(obj, TensorVariable):
        value = tx.output.input_value(obj)
        return wrap(tx, type(value) if value is not None else _tensor_type(), None)
    return wrap(tx, obj.python_type(), None)


def _tensor_type():
    from ember.dynamo.trace_rules import api as _api

    api = _api()

    return api.Tensor


def _super(tx, args, kwargs):
    from ember.dynamo.variables.user_objects import SuperVariable

    if args:
        return SuperVariable(args[0].as_python_constant(), args[1])
    return tx.zero_arg_super()


def _print(tx, args, kwargs):
    raise Unsupported("print() has a side effect outside the graph", "move print out of the compiled function")


def _id(tx, args, kwargs):
    obj = args[0]
    value = getattr(obj, "value", None)
    if value is not None and not isinstance(obj, ConstantVariable):
        return ConstantVariable(id(value))
    raise Unsupported(f"id() of {obj.describe()}")


def _callable(tx, args, kwargs):
    from ember.dynamo.variables.objects import ObjectVariable

    obj = args[0]
    if isinstance(obj, (ConstantVariable, BaseListVariable, DictVariable, SetVariable, TensorVariable)):
        return ConstantVariable(False if not isinstance(obj, ConstantVariable) else callable(obj.value))
    if isinstance(obj, ObjectVariable):
        return ConstantVariable(callable(obj.value))
    return ConstantVariable(True)


def _object_setattr(tx, args, kwargs):
    tx.output.side_effects.store_attr(args[0], args[1].as_python_constant(), args[2])
    return ConstantVariable(None)


def _abs(tx, args, kwargs):
    if isinstance(args[0], (TensorVariable, SymNodeVariable)):
        return tx.output.call_graph("call_function", abs, args, {})
    return ConstantVariable(abs(args[0].as_python_constant()))


def _round(tx, args, kwargs):
    if isinstance(args[0], TensorVariable):
        from ember.dynamo.trace_rules import api as _api

        api = _api()

        return tx.output.call_graph("call_function", api.round, args, kwargs)
    return ConstantVariable(round(*[a.as_python_constant() for a in args]))


def _pow(tx, args, kwargs):
    return apply_operator(tx, operator.pow, args)


def _divmod(tx, args, kwargs):
    return TupleVariable([apply_operator(tx, operator.floordiv, args), apply_operator(tx, operator.mod, args)])


def _functools_reduce(tx, args, kwargs):
    fn, it = args[0], _iter_items(tx, args[1])
    acc = args[2] if len(args) > 2 else it.pop(0)
    for v in it:
        acc = fn.call_function(tx, [acc, v], {})
    return acc


def _partial(tx, args, kwargs):
    from ember.dynamo.variables.functions import PartialVariable

    return PartialVariable(args[0], args[1:], kwargs)


def _str_cast(tx, args, kwargs):
    if args and not args[0].is_python_constant():
        raise Unsupported(f"str() of {args[0].describe()}")
    return ConstantVariable(str(*[a.as_python_constant() for a in args]))


BUILTINS: dict[Any, Callable] = {
    len: _len, isinstance: _isinstance, getattr: _getattr, hasattr: _hasattr, setattr: _setattr,
    min: functools.partial(_minmax, fn=min), max: functools.partial(_minmax, fn=max), sum: _sum, sorted: _sorted,
    zip: _zip, enumerate: _enumerate, map: _map, filter: _filter, reversed: _reversed, iter: _iter, next: _next,
    list: _container(list), tuple: _container(tuple), dict: _container(dict), set: _container(set),
    frozenset: _container(frozenset), all: _all_any(all), any: _all_any(any), bool: _bool,
    int: _scalar_cast(int), float: _scalar_cast(float), str: _str_cast, type: _type, super: _super, print: _print,
    id: _id, callable: _callable, object.__setattr__: _object_setattr, abs: _abs, round: _round, pow: _pow,
    divmod: _divmod, functools.reduce: _functools_reduce, functools.partial: _partial,
}  # fmt: skip


def _register_iter_tools() -> None:
    from ember.dynamo.variables.iter_tools import register

    register(BUILTINS)


_register_iter_tools()


def _dict_fromkeys(tx, args, kwargs):
    from ember.dynamo.variables.objects import hashable_key

    value = args[1] if len(args) > 1 else ConstantVariable(None)
    return DictVariable({hashable_key(k): value for k in tx.unpack_iterable(args[0])})


def _tuple_new(tx, args, kwargs):
    cls = args[0].as_python_constant()
    items = tx.unpack_iterable(args[1]) if len(args) > 1 else []
    return TupleVariable(items, cls=cls)


def call_builtin(tx, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if isinstance(fn, type) and issubclass(fn, BaseException):
        from ember.dynamo.variables.exceptions import ExceptionVariable

        return ExceptionVariable(fn, list(args))
    if fn is tuple.__new__:
        return _tuple_new(tx, args, kwargs)
    if fn == dict.fromkeys:
        return _dict_fromkeys(tx, args, kwargs)
    if fn in (min, max):
        return _minmax(tx, fn, args, kwargs)
    handler = BUILTINS.get(fn)
    if handler is not None:
        return handler(tx, args, kwargs)
    if fn is range or fn is slice:
        vals = []
        for a in args:
            vals.append(a.as_int() if isinstance(a, SymNodeVariable) else a.as_python_constant())
        return ConstantVariable(fn(*vals))
    if getattr(fn, "__module__", None) == "_operator" or getattr(fn, "__self__", None) is operator:
        return apply_operator(tx, fn, args)
    if getattr(fn, "__module__", None) == "math" and all(isinstance(a, ConstantVariable) for a in args):
        return ConstantVariable(fn(*[a.value for a in args], **{k: v.as_python_constant() for k, v in kwargs.items()}))
    if fn in _PURE and all(a.is_python_constant() for a in [*args, *kwargs.values()]):
        from ember.dynamo.variables.builder import wrap_constant

        return wrap_constant(
            fn(*[a.as_python_constant() for a in args], **{k: v.as_python_constant() for k, v in kwargs.items()})
        )
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
    raise Unsupported(f"the builtin {name} is not supported by capture", "move the call out of the compiled function")


def call_constant_method(tx, obj: ConstantVariable, name: str, args, kwargs) -> VariableTracker:
    """A method of a constant (str.format, int.bit_length, ...): computed when its arguments are constants."""
    if all(a.is_python_constant() for a in [*args, *kwargs.values()]):
        from ember.dynamo.variables.builder import wrap_constant

        method = getattr(obj.value, name)
        return wrap_constant(
            method(*[a.as_python_constant() for a in args], **{k: v.as_python_constant() for k, v in kwargs.items()})
        )
    if name in _DUNDER.values() or name.startswith("__r"):
        for fn, dunder in _DUNDER.items():
            if dunder == name:
                return apply_operator(tx, fn, [obj, *args])
        for fn, dunder in _REFLECTED.items():
            if dunder == name:
                return apply_operator(tx, fn, [args[0], obj])
    raise Unsupported(f"{type(obj.value).__name__}.{name} with non-constant arguments")


__all__ = [
    "BUILTINS",
    "BuiltinVariable",
    "UserFunctionVariable",
    "apply_operator",
    "builtins",
    "call_builtin",
    "getitem",
    "math",
]
