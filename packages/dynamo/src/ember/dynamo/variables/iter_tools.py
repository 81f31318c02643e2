"""``itertools`` over iterables known at capture time, and ``collections.deque``."""

from __future__ import annotations

import collections
import itertools
import operator
from typing import Any

from ember.dynamo.exc import Unsupported
from ember.dynamo.variables.base import ConstantVariable
from ember.dynamo.variables.containers import IteratorVariable, ListVariable, TupleVariable


def _items(tx, vt):
    return tx.unpack_iterable(vt)


def _const(kwargs, name, default):
    vt = kwargs.get(name)
    return default if vt is None else vt.as_python_constant()


def _product(tx, args, kwargs):
    pools = [_items(tx, a) for a in args] * _const(kwargs, "repeat", 1)
    return IteratorVariable([TupleVariable(list(t)) for t in itertools.product(*pools)])


def _chain(tx, args, kwargs):
    return IteratorVariable([v for a in args for v in _items(tx, a)])


def _chain_from_iterable(tx, args, kwargs):
    return IteratorVariable([v for a in _items(tx, args[0]) for v in _items(tx, a)])


def _accumulate(tx, args, kwargs):
    from ember.dynamo.variables.builtin import apply_operator

    items = _items(tx, args[0])
    func = args[1] if len(args) > 1 else kwargs.get("func")
    initial = kwargs.get("initial")
    out, acc = [], initial
    if acc is not None and not (isinstance(acc, ConstantVariable) and acc.value is None):
        out.append(acc)
    else:
        acc = None
    for v in items:
        if acc is None:
            acc = v
        elif func is None or (isinstance(func, ConstantVariable) and func.value is None):
            acc = apply_operator(tx, operator.add, [acc, v])
        else:
            acc = func.call_function(tx, [acc, v], {})
        out.append(acc)
    return IteratorVariable(out)


def _islice(tx, args, kwargs):
    items = _items(tx, args[0])
    bounds = [a.as_python_constant() for a in args[1:]]
    return IteratorVariable(list(itertools.islice(items, *bounds)))


def _zip_longest(tx, args, kwargs):
    fill = kwargs.get("fillvalue", ConstantVariable(None))
    lists = [_items(tx, a) for a in args]
    return IteratorVariable([TupleVariable(list(t)) for t in itertools.zip_longest(*lists, fillvalue=fill)])


def _combinations(tx, args, kwargs):
    r = args[1].as_python_constant() if len(args) > 1 else _const(kwargs, "r", None)
    return IteratorVariable([TupleVariable(list(t)) for t in itertools.combinations(_items(tx, args[0]), r)])


def _permutations(tx, args, kwargs):
    r = args[1].as_python_constant() if len(args) > 1 else _const(kwargs, "r", None)
    return IteratorVariable([TupleVariable(list(t)) for t in itertools.permutations(_items(tx, args[0]), r)])


def _pairwise(tx, args, kwargs):
    items = _items(tx, args[0])
    return IteratorVariable([TupleVariable([a, b]) for a, b in itertools.pairwise(items)])


def _repeat(tx, args, kwargs):
    times = args[1].as_python_constant() if len(args) > 1 else _const(kwargs, "times", None)
    if times is None:
        raise Unsupported("itertools.repeat without times is infinite")
    return IteratorVariable([args[0]] * times)


ITERTOOLS = {
    itertools.product: _product,
    itertools.chain: _chain,
    itertools.chain.from_iterable: _chain_from_iterable,
    itertools.accumulate: _accumulate,
    itertools.islice: _islice,
    itertools.zip_longest: _zip_longest,
    itertools.combinations: _combinations,
    itertools.permutations: _permutations,
    itertools.pairwise: _pairwise,
    itertools.repeat: _repeat,
}


class DequeVariable(ListVariable):
    """A ``collections.deque`` made during capture (with its ``maxlen``)."""

    def __init__(self, items, source=None, maxlen: int | None = None) -> None:
        super().__init__(items, source)
        self.maxlen = maxlen

    def python_type(self) -> type:
        return collections.deque

    def _trim(self, left: bool) -> None:
        if self.maxlen is not None:
            while len(self.items) > self.maxlen:
                self.items.pop(0 if not left else -1)

    def call_method(self, tx, name, args, kwargs):
        if name in {"append", "appendleft", "extend", "extendleft", "popleft", "rotate"}:
            tx.output.side_effects.mutate(self)
        if name == "append":
            self.items.append(args[0])
            self._trim(left=False)
            return ConstantVariable(None)
        if name == "appendleft":
            self.items.insert(0, args[0])
            self._trim(left=True)
            return ConstantVariable(None)
        if name == "extend":
            for v in tx.unpack_iterable(args[0]):
                self.items.append(v)
                self._trim(left=False)
            return ConstantVariable(None)
        if name == "extendleft":
            for v in tx.unpack_iterable(args[0]):
                self.items.insert(0, v)
                self._trim(left=True)
            return ConstantVariable(None)
        if name == "popleft":
            return self.items.pop(0)
        if name == "rotate":
            n = args[0].as_python_constant() if args else 1
            if self.items:
                n %= len(self.items)
                self.items[:] = self.items[-n:] + self.items[:-n]
            return ConstantVariable(None)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg) -> None:
        cg.call_const(collections.deque, [ListVariable(self.items)], {"maxlen": ConstantVariable(self.maxlen)})

    def describe(self) -> str:
        return "a deque"


def make_deque(tx, args, kwargs) -> DequeVariable:
    items = tx.unpack_iterable(args[0]) if args else []
    maxlen = args[1].as_python_constant() if len(args) > 1 else _const(kwargs, "maxlen", None)
    d = DequeVariable([], maxlen=maxlen)
    for v in items:
        d.items.append(v)
        d._trim(left=False)
    return d


def register(table: dict[Any, Any]) -> None:
    table.update(ITERTOOLS)
    table[collections.deque] = make_deque
