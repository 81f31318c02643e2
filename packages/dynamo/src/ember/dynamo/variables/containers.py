"""Lists, tuples (named ones too), dicts, sets and iterators whose items are trackers.

Mutable containers record their mutation with the side-effect table when they came from the frame
(they have a source): the generated code then writes their final contents back, so the caller sees
what eager execution would have left.
"""

from __future__ import annotations

import collections
from typing import Any

from ember.dynamo.exc import Unsupported
from ember.dynamo.variables.base import ConstantVariable, VariableTracker


def _index(vt: VariableTracker) -> Any:
    concrete = getattr(vt, "concrete", None)
    key = concrete() if concrete is not None else vt.as_python_constant()
    if not isinstance(key, (int, slice)):
        raise Unsupported(f"indexing a sequence with {type(key).__name__} is not supported")
    return key


class BaseListVariable(VariableTracker):
    def __init__(self, items: list[VariableTracker], source=None) -> None:
        self.items = list(items)
        self.source = source

    def unpack(self, tx) -> list[VariableTracker]:
        return list(self.items)

    def truth(self, tx) -> bool:
        return bool(self.items)

    def as_python_constant(self) -> Any:
        return self.python_type()(v.as_python_constant() for v in self.items)

    def getitem(self, tx, key: VariableTracker) -> VariableTracker:
        k = _index(key)
        if isinstance(k, slice):
            return self.rebuild(self.items[k])
        try:
            return self.items[k]
        except IndexError:
            from ember.dynamo.variables.exceptions import user_error

            raise user_error(IndexError, f"{self.python_type().__name__} index out of range") from None

    def rebuild(self, items: list[VariableTracker]) -> VariableTracker:
        return type(self)(items)

    def call_method(self, tx, name, args, kwargs):
        from ember.dynamo.variables.builtin import compare_eq

        if name == "__getitem__" and len(args) == 1:
            return self.getitem(tx, args[0])
        if name == "__len__" and not args:
            return ConstantVariable(len(self.items))
        if name == "__contains__" and len(args) == 1:
            return ConstantVariable(any(compare_eq(tx, v, args[0]) for v in self.items))
        if name == "index" and len(args) == 1:
            for i, v in enumerate(self.items):
                if compare_eq(tx, v, args[0]):
                    return ConstantVariable(i)
            raise Unsupported("list.index found nothing at capture time")
        if name == "count" and len(args) == 1:
            return ConstantVariable(sum(compare_eq(tx, v, args[0]) for v in self.items))
        raise Unsupported(f"{self.python_type().__name__}.{name} is not supported")

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from ember.dynamo.variables.functions import BuiltinMethodVariable

        if hasattr(self.python_type(), name):
            return BuiltinMethodVariable(self, name)
        raise Unsupported(f"{self.python_type().__name__} has no attribute {name!r}")


class TupleVariable(BaseListVariable):
    """A tuple; ``cls`` is a tuple subclass (a named tuple, ``ember.Size``, a return type) or tuple."""

    def __init__(self, items, source=None, cls: type = tuple) -> None:
        super().__init__(items, source)
        self.cls = cls

    def python_type(self) -> type:
        return self.cls

    def rebuild(self, items):
        return TupleVariable(items)

    def as_python_constant(self) -> Any:
        values = [v.as_python_constant() for v in self.items]
        if self.cls is tuple:
            return tuple(values)
        if _is_namedtuple(self.cls):
            return self.cls(*values)
        return self.cls(values)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if _is_namedtuple(self.cls):
            if name in self.cls._fields:
                return self.items[self.cls._fields.index(name)]
            import inspect
            import types

            from ember.dynamo.variables.builder import wrap
            from ember.dynamo.variables.functions import UserMethodVariable

            static = inspect.getattr_static(self.cls, name, None)
            if isinstance(static, types.FunctionType):
                return UserMethodVariable(wrap(tx, static, None), self)
            if isinstance(static, classmethod):
                return UserMethodVariable(wrap(tx, static.__func__, None), wrap(tx, self.cls, None))
            if name == "_fields":
                return ConstantVariable(self.cls._fields)
        return super().var_getattr(tx, name)

    def reconstruct(self, cg) -> None:
        if self.cls is tuple:
            for v in self.items:
                cg.reconstruct(v)
            cg.build("BUILD_TUPLE", len(self.items))
            return
        if _is_namedtuple(self.cls):
            cg.call_const(self.cls, self.items)
            return
        cg.call_const(self.cls, [TupleVariable(self.items)])

    def describe(self) -> str:
        return f"a {self.cls.__name__}"


class ListVariable(BaseListVariable):
    def python_type(self) -> type:
        return list

    def call_method(self, tx, name, args, kwargs):
        mutating = {"append", "extend", "pop", "insert", "clear", "reverse", "remove", "__setitem__", "sort"}
        if name in mutating:
            tx.output.side_effects.mutate(self)
        if name == "append" and len(args) == 1:
            self.items.append(args[0])
            return ConstantVariable(None)
        if name == "extend" and len(args) == 1:
            self.items.extend(tx.unpack_iterable(args[0]))
            return ConstantVariable(None)
        if name == "pop":
            i = args[0].as_python_constant() if args else -1
            return self.items.pop(i)
        if name == "insert" and len(args) == 2:
            self.items.insert(args[0].as_python_constant(), args[1])
            return ConstantVariable(None)
        if name == "clear":
            self.items.clear()
            return ConstantVariable(None)
        if name == "reverse":
            self.items.reverse()
            return ConstantVariable(None)
        if name == "remove" and len(args) == 1:
            from ember.dynamo.variables.builtin import compare_eq

            for i, v in enumerate(self.items):
                if compare_eq(tx, v, args[0]):
                    del self.items[i]
                    return ConstantVariable(None)
            raise Unsupported("list.remove found nothing at capture time")
        if name == "sort":
            key = kwargs.get("key")
            reverse = kwargs.get("reverse", ConstantVariable(False)).as_python_constant()
            from ember.dynamo.variables.builtin import sort_items

            self.items[:] = sort_items(tx, self.items, key, reverse)
            return ConstantVariable(None)
        if name == "__setitem__" and len(args) == 2:
            k = _index(args[0])
            if isinstance(k, slice):
                self.items[k] = tx.unpack_iterable(args[1])
            else:
                self.items[k] = args[1]
            return ConstantVariable(None)
        if name == "__delitem__" and len(args) == 1:
            tx.output.side_effects.mutate(self)
            del self.items[_index(args[0])]
            return ConstantVariable(None)
        if name == "copy" and not args:
            return ListVariable(list(self.items))
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg) -> None:
        for v in self.items:
            cg.reconstruct(v)
        cg.build("BUILD_LIST", len(self.items))

    def describe(self) -> str:
        return "a list"


def _is_namedtuple(cls: type) -> bool:
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")


def _key(vt: VariableTracker) -> Any:
    from ember.dynamo.variables.objects import hashable_key

    return hashable_key(vt)


class DictVariable(VariableTracker):
    """A dict (or OrderedDict / defaultdict) whose keys are constants or objects held by identity."""

    def __init__(self, items: dict[Any, VariableTracker], source=None, cls: type = dict, default=None) -> None:
        self.items = dict(items)
        self.source = source
        self.cls = cls
        self.default_factory = default  # a tracker, for defaultdict

    def python_type(self) -> type:
        return self.cls

    def truth(self, tx) -> bool:
        return bool(self.items)

    def unpack(self, tx) -> list[VariableTracker]:
        return [_key_vt(k) for k in self.items]

    def as_python_constant(self) -> Any:
        return self.cls((k, v.as_python_constant()) for k, v in self.items.items())

    def getitem(self, tx, key: VariableTracker) -> VariableTracker:
        k = _key(key)
        if k in self.items:
            return self.items[k]
        if self.cls is collections.Counter:
            return ConstantVariable(0)  # a Counter's missing key counts zero (and is not inserted)
        if self.default_factory is not None:
            tx.output.side_effects.mutate(self)
            value = self.default_factory.call_function(tx, [], {})
            self.items[k] = value
            return value
        from ember.dynamo.variables.exceptions import user_error

        raise user_error(KeyError, k if isinstance(k, (int, str, float, bool, type(None))) else repr(k))

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from ember.dynamo.variables.functions import BuiltinMethodVariable

        if name == "default_factory" and self.cls is collections.defaultdict:
            return self.default_factory
        if hasattr(self.cls, name):
            return BuiltinMethodVariable(self, name)
        raise Unsupported(f"dict has no attribute {name!r}")

    def call_method(self, tx, name, args, kwargs):
        if name in {"__setitem__", "pop", "setdefault", "update", "clear", "popitem", "__delitem__"}:
            tx.output.side_effects.mutate(self)
        if name == "__getitem__" and len(args) == 1:
            return self.getitem(tx, args[0])
        if name == "__setitem__" and len(args) == 2:
            self.items[_key(args[0])] = args[1]
            return ConstantVariable(None)
        if name == "__delitem__" and len(args) == 1:
            del self.items[_key(args[0])]
            return ConstantVariable(None)
        if name == "__contains__" and len(args) == 1:
            return ConstantVariable(_key(args[0]) in self.items)
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name == "get":
            k = _key(args[0])
            if k in self.items:
                return self.items[k]
            return args[1] if len(args) > 1 else ConstantVariable(None)
        if name == "keys":
            return DictViewVariable(self, "keys")
        if name == "values":
            return DictViewVariable(self, "values")
        if name == "items":
            return DictViewVariable(self, "items")
        if name == "pop":
            k = _key(args[0])
            if k in self.items:
                return self.items.pop(k)
            if len(args) > 1:
                return args[1]
            raise Unsupported(f"dict.pop: key {k!r} missing at capture time")
        if name == "popitem":
            k = next(reversed(self.items))
            return TupleVariable([_key_vt(k), self.items.pop(k)])
        if name == "setdefault":
            k = _key(args[0])
            if k not in self.items:
                self.items[k] = args[1] if len(args) > 1 else ConstantVariable(None)
            return self.items[k]
        if name == "update":
            for a in args:
                if isinstance(a, DictVariable):
                    self.items.update(a.items)
                else:
                    for pair in tx.unpack_iterable(a):
                        k, v = tx.unpack_iterable(pair)
                        self.items[_key(k)] = v
            for k, v in kwargs.items():
                self.items[k] = v
            return ConstantVariable(None)
        if name == "clear":
            self.items.clear()
            return ConstantVariable(None)
        if name == "copy":
            return DictVariable(self.items, cls=self.cls, default=self.default_factory)
        if name == "move_to_end":
            tx.output.side_effects.mutate(self)
            k = _key(args[0])
            last = (args[1] if len(args) > 1 else kwargs.get("last", ConstantVariable(True))).as_python_constant()
            value = self.items.pop(k)
            if last:
                self.items[k] = value
            else:
                self.items = {k: value, **self.items}
            return ConstantVariable(None)
        raise Unsupported(f"dict.{name} is not supported")

    def reconstruct(self, cg) -> None:
        if self.cls is collections.defaultdict:
            cg.reconstruct(self.default_factory)
        for k, v in self.items.items():
            cg.reconstruct(_key_vt(k))
            cg.reconstruct(v)
        cg.build("BUILD_MAP", len(self.items))
        if self.cls is collections.defaultdict:
            cg.call_on_stack(2, self.cls)
        elif self.cls is not dict:
            cg.call_on_stack(1, self.cls)

    def describe(self) -> str:
        return f"a {self.cls.__name__}"


def _key_vt(k: Any) -> VariableTracker:
    from ember.dynamo.variables.objects import key_to_vt

    return key_to_vt(k)


class DictViewVariable(VariableTracker):
    def __init__(self, d: DictVariable, kind: str) -> None:
        self.d, self.kind = d, kind

    def python_type(self) -> type:
        return type(getattr({}, self.kind)())

    def unpack(self, tx) -> list[VariableTracker]:
        if self.kind == "keys":
            return [_key_vt(k) for k in self.d.items]
        if self.kind == "values":
            return list(self.d.items.values())
        return [TupleVariable([_key_vt(k), v]) for k, v in self.d.items.items()]

    def truth(self, tx) -> bool:
        return bool(self.d.items)

    def call_method(self, tx, name, args, kwargs):
        if name == "__len__":
            return ConstantVariable(len(self.d.items))
        if name == "__contains__" and self.kind == "keys":
            return ConstantVariable(_key(args[0]) in self.d.items)
        raise Unsupported(f"dict view method {name} is not supported")

    def reconstruct(self, cg) -> None:
        cg.reconstruct(self.d)
        cg.call_method_on_stack(self.kind, 0)


class SetVariable(VariableTracker):
    def __init__(self, items: list[VariableTracker], source=None, frozen: bool = False) -> None:
        self.items: dict[Any, VariableTracker] = {}
        for v in items:
            self.items.setdefault(_key(v), v)
        self.source = source
        self.frozen = frozen

    def python_type(self) -> type:
        return frozenset if self.frozen else set

    def unpack(self, tx) -> list[VariableTracker]:
        return list(self.items.values())

    def truth(self, tx) -> bool:
        return bool(self.items)

    def as_python_constant(self) -> Any:
        return self.python_type()(v.as_python_constant() for v in self.items.values())

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from ember.dynamo.variables.functions import BuiltinMethodVariable

        return BuiltinMethodVariable(self, name)

    def call_method(self, tx, name, args, kwargs):
        if name in {"add", "discard", "remove", "update", "clear", "pop"}:
            tx.output.side_effects.mutate(self)
        if name == "add":
            self.items.setdefault(_key(args[0]), args[0])
            return ConstantVariable(None)
        if name in {"discard", "remove"}:
            k = _key(args[0])
            if k not in self.items and name == "remove":
                raise Unsupported("set.remove of a missing item at capture time")
            self.items.pop(k, None)
            return ConstantVariable(None)
        if name == "update":
            for a in args:
                for v in tx.unpack_iterable(a):
                    self.items.setdefault(_key(v), v)
            return ConstantVariable(None)
        if name == "clear":
            self.items.clear()
            return ConstantVariable(None)
        if name == "__contains__":
            return ConstantVariable(_key(args[0]) in self.items)
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name in {"union", "intersection", "difference", "symmetric_difference", "issubset", "issuperset"}:
            others = [set(_key(v) for v in tx.unpack_iterable(a)) for a in args]
            result = getattr(set(self.items), name)(*others)
            if isinstance(result, bool):
                return ConstantVariable(result)
            pool = dict(self.items)
            for a in args:
                for v in tx.unpack_iterable(a):
                    pool.setdefault(_key(v), v)
            return SetVariable([pool[k] for k in result])
        if name == "copy":
            return SetVariable(list(self.items.values()))
        raise Unsupported(f"set.{name} is not supported")

    def reconstruct(self, cg) -> None:
        for v in self.items.values():
            cg.reconstruct(v)
        cg.build("BUILD_SET", len(self.items))
        if self.frozen:
            cg.call_on_stack(1, frozenset)


class IteratorVariable(VariableTracker):
    """An iterator over items known at capture time; ``next`` advances it (a mutation)."""

    def __init__(self, items: list[VariableTracker]) -> None:
        self.items = list(items)
        self.index = 0

    def next(self, tx) -> VariableTracker | None:
        if self.index >= len(self.items):
            return None
        self.index += 1
        return self.items[self.index - 1]

    def unpack(self, tx) -> list[VariableTracker]:
        rest = self.items[self.index :]
        self.index = len(self.items)
        return rest

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from ember.dynamo.variables.functions import BuiltinMethodVariable

        if name == "__next__":
            return BuiltinMethodVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name == "__next__":
            v = self.next(tx)
            if v is None:
                from ember.dynamo.variables.exceptions import user_error

                raise user_error(StopIteration)
            return v
        raise Unsupported(f"iterator.{name} is not supported")

    def reconstruct(self, cg) -> None:
        cg.call_const(iter, [TupleVariable(self.items[self.index :])])

    def describe(self) -> str:
        return "an iterator"
