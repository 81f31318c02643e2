"""From a real value found in the frame (with its source) to a tracker, installing the guards that
capture relies on."""

from __future__ import annotations

import builtins
import collections
import functools
import sys
import types
from typing import Any

from ember.core.tensor import Tensor
from ember.dynamo.exc import Unsupported
from ember.dynamo.guards import GuardKind
from ember.dynamo.source import AttrSource, DictItemSource, GetItemSource, LocalSource, Source
from ember.dynamo.variables.base import ConstantVariable, VariableTracker
from ember.dynamo.variables.containers import DictVariable, ListVariable, SetVariable, TupleVariable
from ember.dynamo.variables.functions import BuiltinVariable, PartialVariable, UserFunctionVariable, UserMethodVariable
from ember.dynamo.variables.objects import (
    CONSTANT_TYPES,
    ClassVariable,
    EmberFunctionVariable,
    ObjectVariable,
    PythonModuleVariable,
    _IdKey,
)

_BUILTIN_TYPES = {v for v in vars(builtins).values() if isinstance(v, type)}


def _constant_like(value: Any) -> bool:
    from ember.core.devices import device
    from ember.core.dtypes import dtype

    if type(value) in CONSTANT_TYPES or isinstance(value, (dtype, device, range, slice)):
        return True
    if isinstance(value, (tuple, frozenset)) and type(value) in (tuple, frozenset):
        return all(_constant_like(v) for v in value)
    return False


def wrap(tx, value: Any, source: Source | None) -> VariableTracker:
    """The tracker for ``value``; guards on it when it has a source. Identity-held values are wrapped once."""
    out = tx.output
    if source is not None and _is_tensor(value):
        # One placeholder per source: two arguments that are the same tensor now may not be next time
        # (the graph reads each from its own source, and each has its own guard).
        return out.tensor_input(value, source)
    cached = out.wrapped.get(id(value))
    if cached is not None:
        return cached  # one tracker per object, whichever path reached it first (mutations stay shared)
    vt = _wrap(tx, value, source)
    if not isinstance(vt, ConstantVariable):
        out.wrapped[id(value)] = vt
        out.keepalive.append(value)
    return vt


def _is_tensor(value: Any) -> bool:
    from ember.core.tensor import Tensor

    return isinstance(value, Tensor)


def _guard(tx, source, kind: GuardKind, value: Any = None) -> None:
    if source is not None:
        tx.output.add_guard(source, kind, value)


def _wrap(tx, value: Any, source: Source | None) -> VariableTracker:
    from ember.dynamo import trace_rules
    from ember.nn import Module

    out = tx.output
    if isinstance(value, Tensor):
        if source is None:
            raise Unsupported("a tensor that capture cannot reach from the frame (no source)")
        return out.tensor_input(value, source)
    if type(value) in (int, float) and source is not None and out.dynamic_scalar(source, value):
        return out.scalar_input(value, source)
    if _constant_like(value):
        if value is None:
            _guard(tx, source, GuardKind.NONE_MATCH, True)
        else:
            _guard(tx, source, GuardKind.EQUALS_MATCH, value)
        return ConstantVariable(value, source)
    if trace_rules.is_graph_function(value):
        _guard(tx, source, GuardKind.ID_MATCH, id(value))
        return EmberFunctionVariable(value, source)
    if type(value) in (list, tuple) or (isinstance(value, tuple) and hasattr(type(value), "_fields")):
        _guard(tx, source, GuardKind.TYPE_MATCH, type(value))
        _guard(tx, source, GuardKind.LENGTH_MATCH, len(value))
        items = [wrap(tx, v, GetItemSource(source, i) if source else None) for i, v in enumerate(value)]
        if type(value) is list:
            return ListVariable(items, source)
        return TupleVariable(items, source, cls=type(value))
    if type(value) in (dict, collections.OrderedDict, collections.defaultdict, collections.Counter):
        _guard(tx, source, GuardKind.TYPE_MATCH, type(value))
        if value and source is not None and all(isinstance(k, Tensor) for k in value):
            return _tensor_keyed_dict(tx, value, source)
        _guard(tx, source, GuardKind.DICT_KEYS, tuple(value.keys()))
        items = {}
        for k, v in value.items():
            if not _constant_like(k):
                raise Unsupported(f"a dict with a {type(k).__name__} key")
            items[k] = wrap(tx, v, GetItemSource(source, k) if source else None)
        default = None
        if type(value) is collections.defaultdict:
            default = wrap(tx, value.default_factory, AttrSource(source, "default_factory") if source else None)
        return DictVariable(items, source, cls=type(value), default=default)
    if type(value) in (set, frozenset):
        if not all(_constant_like(v) for v in value):
            raise Unsupported("a set of non-constant items")
        _guard(tx, source, GuardKind.EQUALS_MATCH, value)
        return SetVariable([ConstantVariable(v) for v in value], source, frozen=type(value) is frozenset)
    if isinstance(value, types.FunctionType):
        _guard(tx, source, GuardKind.ID_MATCH, id(value))
        return UserFunctionVariable(value, source)
    if _is_table_builtin(value):
        _guard(tx, source, GuardKind.ID_MATCH, id(value))
        return BuiltinVariable(value, source)
    if isinstance(value, types.MethodType):
        _guard(tx, source, GuardKind.TYPE_MATCH, types.MethodType)
        fn = wrap(tx, value.__func__, AttrSource(source, "__func__") if source else None)
        obj = wrap(tx, value.__self__, AttrSource(source, "__self__") if source else None)
        return UserMethodVariable(fn, obj, source)
    if isinstance(value, functools.partial):
        _guard(tx, source, GuardKind.TYPE_MATCH, functools.partial)
        fn = wrap(tx, value.func, AttrSource(source, "func") if source else None)
        args = [
            wrap(tx, a, GetItemSource(AttrSource(source, "args"), i) if source else None)
            for i, a in enumerate(value.args)
        ]
        kwargs = {
            k: wrap(tx, v, GetItemSource(AttrSource(source, "keywords"), k) if source else None)
            for k, v in value.keywords.items()
        }
        return PartialVariable(fn, args, kwargs, source)
    if isinstance(
        value,
        (
            types.BuiltinFunctionType,
            types.BuiltinMethodType,
            types.WrapperDescriptorType,
            types.MethodDescriptorType,
            types.MethodWrapperType,
        ),
    ) or (isinstance(value, type) and value in _BUILTIN_TYPES):
        _guard(tx, source, GuardKind.ID_MATCH, id(value))
        return BuiltinVariable(value, source)
    if isinstance(value, types.ModuleType):
        _guard(tx, source, GuardKind.ID_MATCH, id(value))
        return PythonModuleVariable(value, source)
    if isinstance(value, type):
        _guard(tx, source, GuardKind.ID_MATCH, id(value))
        return ClassVariable(value, source)
    if source is not None and _is_optimizer(value):
        _prepare_optimizer(tx, value, source)
    if isinstance(value, Module):
        # By type, not identity: blocks of the same structure share the compiled code.
        _guard(tx, source, GuardKind.TYPE_MATCH, type(value))
        return ObjectVariable(value, source)
    if source is None:
        raise Unsupported(f"a {type(value).__name__} object that capture cannot reach from the frame")
    _guard(tx, source, GuardKind.TYPE_MATCH, type(value))
    return ObjectVariable(value, source)


def _tensor_keyed_dict(tx, value: dict, source: Source) -> VariableTracker:
    """A dict keyed by tensors the capture already reads from the frame (an optimizer's ``state``, keyed by
    its parameters): guarded on the identity of its keys; each value's source indexes by the key's source."""
    out = tx.output
    by_id = {id(v): out.input_vts[s.name()] for s, v, _ in out.inputs if v is not None}
    _guard(tx, source, GuardKind.DICT_KEY_IDS, tuple(id(k) for k in value))
    items = {}
    local_names = {id(v): name for name, v in out.f_locals.items() if isinstance(v, Tensor)}
    for k, v in value.items():
        key_vt = by_id.get(id(k))
        if key_vt is None and id(k) in local_names:  # a key the frame holds as a local, not read yet
            key_vt = wrap(tx, k, LocalSource(local_names[id(k)]))
        if key_vt is None:
            raise Unsupported("a dict keyed by a tensor that capture has not read from the frame")
        key = _IdKey(key_vt, k)
        items[key] = wrap(tx, v, DictItemSource(source, key_vt.source))
    default = None
    if type(value) is collections.defaultdict:
        default = wrap(tx, value.default_factory, AttrSource(source, "default_factory"))
    return DictVariable(items, source, cls=type(value), default=default)


def _is_optimizer(value: Any) -> bool:
    # No object is an optimizer before ember.optim is imported: capture does not import it (10 modules).
    optim = sys.modules.get("ember.optim")
    return optim is not None and isinstance(value, optim.Optimizer)


def _prepare_optimizer(tx, opt: Any, source: Source) -> None:
    """What capture does first with an optimizer, as PyTorch's does: the state that a first step would
    create lazily (Adam's moments, ...) is created now, for real, so that the graph reads it as inputs
    and the second step runs the same graph; and every parameter is read from the frame, so that
    ``state`` (keyed by parameters) can be indexed by their sources."""
    init_group = getattr(opt, "_init_group", None)
    if init_group is not None:
        from ember.autograd import no_grad

        with no_grad():
            for group in opt.param_groups:
                init_group(group)
    wrap(tx, opt.param_groups, AttrSource(source, "param_groups"))


def _is_table_builtin(value: Any) -> bool:
    from ember.dynamo.variables.builtin import BUILTINS

    try:
        return value in BUILTINS or value == dict.fromkeys
    except TypeError:
        return False


def wrap_constant(value: Any) -> VariableTracker:
    """A tracker for a value computed at capture time (no source, no guards)."""
    if _constant_like(value):
        return ConstantVariable(value)
    if type(value) is list:
        return ListVariable([wrap_constant(v) for v in value])
    if type(value) is tuple:
        return TupleVariable([wrap_constant(v) for v in value])
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return TupleVariable([wrap_constant(v) for v in value], cls=type(value))
    if type(value) is dict:
        return DictVariable({k: wrap_constant(v) for k, v in value.items()})
    if type(value) in (set, frozenset):
        return SetVariable([wrap_constant(v) for v in value], frozen=type(value) is frozenset)
    raise Unsupported(f"a {type(value).__name__} value computed at capture time")
