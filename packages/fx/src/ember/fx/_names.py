"""How the graph IR names Python objects: ``ember.relu``, ``ember.ops.aten.add.Tensor``, ``operator.add``.

ember's functions are defined in private modules (``ember.core.pointwise.relu``,
``ember.core.aten.factories.factories.zeros_function``) and re-exported where users reach them
(``ember.relu``, ``ember.zeros``). Printed graphs and generated code use the public name, as
PyTorch's use ``torch.relu``: an index from each public object to its public name, built from the
modules users import (``ember``, ``ember.nn.functional``, ...) and ``Tensor``'s methods, answers
both the dotted name and the short name a node is named after.
"""

from __future__ import annotations

import builtins
import keyword
import sys
import types
from collections.abc import Iterable
from typing import Any

from ember.core.dispatch import OpOverload, OpOverloadPacket

# Where users reach ember's functions and classes; the modules that define them are private.
_PUBLIC_HOMES = ("ember", "ember.nn.functional", "ember.linalg", "ember.special", "ember.fft")
_public_names: dict[int, tuple[Any, str]] = {}
_public_misses: set[int] = set()


def _index_public_names() -> None:
    def add(obj: Any, qualified: str) -> None:
        short = qualified.rsplit(".", 1)[1]
        known = _public_names.get(id(obj))
        # Among aliases, the one spelled as the object's own name wins (ember.cat over ember.concat).
        if known is None or (short == getattr(obj, "__name__", None) and not known[1].endswith("." + short)):
            _public_names[id(obj)] = (obj, qualified)

    api = sys.modules.get("ember.core.api")
    for name, fn in getattr(api, "functions", {}).items():
        add(fn, f"ember.{name}")
    # Public names with an underscore, as PyTorch has them (``ember._assert``, ``ember._check``).
    underscored = set(getattr(sys.modules.get("ember.core"), "__all__", ()))
    for home in _PUBLIC_HOMES:
        module = sys.modules.get(home)
        for name, value in list(vars(module).items()) if module is not None else ():
            public = not name.startswith("_") or (home == "ember" and name in underscored)
            if public and (callable(value) or isinstance(value, type)):
                add(value, f"{home}.{name}")
    # Tensor methods last: a function that is also ``ember.<name>`` goes by that name.
    tensor_cls = getattr(sys.modules.get("ember.core.tensor"), "Tensor", None)
    for name, value in list(vars(tensor_cls).items()) if tensor_cls is not None else ():
        if callable(value) and (not name.startswith("_") or _is_magic_name(name)):
            add(value, f"ember.Tensor.{name}")


def _ember_public_name(obj: Any) -> str | None:
    """``ember.zeros`` for the function defined as ``ember.core....zeros_function``; None if not public."""
    entry = _public_names.get(id(obj))
    if entry is None and id(obj) not in _public_misses:
        _index_public_names()
        entry = _public_names.get(id(obj))
        if entry is None:
            _public_misses.add(id(obj))
    if entry is not None and entry[0] is obj:
        return entry[1]
    return None


def _is_magic_name(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _is_tensor_method(func: Any) -> bool:
    public = _ember_public_name(func) if _is_ember_object(func) else None
    return public is not None and public.startswith("ember.Tensor.")


def _is_ember_object(obj: Any) -> bool:
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and (module == "ember" or module.startswith("ember."))


def _get_qualified_name(func: Any) -> str:
    """The dotted name the generated code calls ``func`` by (``operator.add``, ``ember.relu``)."""
    if isinstance(func, OpOverload):
        packet = f"ember.ops.{func.namespace}.{func.name}"
        if keyword.iskeyword(func.overload):
            # ``random_.from``: an overload named by a keyword is read with getattr, or the code
            # would not compile.
            return f"getattr({packet}, {func.overload!r})"
        return f"{packet}.{func.overload}"
    if isinstance(func, OpOverloadPacket):
        return f"ember.ops.{func._namespace}.{func._name}"
    name = func.__name__
    if getattr(builtins, name, None) is func:
        return name
    if name == "<lambda>":
        raise RuntimeError("Unable to represent lambda")
    module = getattr(func, "__module__", None)
    if module is None:
        raise RuntimeError(f"cannot find module for {func}")
    if _is_ember_object(func):
        public = _ember_public_name(func)
        if public is not None:
            return public
    return f"{module}.{name}"


def _target_name(target: Any) -> str:
    """``target.__name__``, with the ``name.overload`` form PyTorch gives its op overloads."""
    if isinstance(target, OpOverload):
        return f"{target.name}.{target.overload}"
    if isinstance(target, OpOverloadPacket):
        return target._name
    if _is_ember_object(target):
        public = _ember_public_name(target)
        if public is not None:
            return public.rsplit(".", 1)[1]
    return target.__name__


def _type_repr(obj: object) -> str:
    """A short repr for type annotations: ``int``, ``ember.core.tensor.Tensor``, ``list[int]``."""
    if isinstance(obj, type) and not isinstance(obj, types.GenericAlias):
        if obj.__module__ == "builtins":
            return obj.__qualname__
        if _is_ember_object(obj):
            public = _ember_public_name(obj)
            if public is not None:
                return public
        return f"{obj.__module__}.{obj.__qualname__}"
    if obj is ...:
        return "..."
    if isinstance(obj, types.FunctionType):
        return obj.__name__
    return repr(obj)


# -- tensor descriptions: f32[2, 3] ------------------------------------------------------------------

_dtype_abbrs = {
    "uint8": "u8",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
    "bfloat16": "bf16",
    "complex32": "c32",
    "complex64": "c64",
    "complex128": "c128",
    "bool": "b8",
}


def _dtype_abbr(dtype: Any) -> str:
    name = getattr(dtype, "name", str(dtype).split(".")[-1])
    return _dtype_abbrs.get(name, name)


def _shape(shape: Iterable[object]) -> str:
    return f"[{', '.join(str(x) for x in shape)}]"
