"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``.

Their entries are ordinary registrations under the names '0', '1', ... (or the dict keys), so a
container's parameters, state dict keys and printing come from ``Module`` itself. Deleting from a
list renumbers the rest, as PyTorch does, so that keys stay '0'..'n-1'.
"""

from __future__ import annotations

import operator
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain, islice
from typing import Any

from ember.core.tensor import Tensor
from ember.nn.modules.module import Module, _addindent
from ember.nn.modules.module_state import tensor_type_name
from ember.nn.parameter import Parameter

__all__ = ["Container", "ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]


def _index(idx: int, size: int, kind: str) -> int:
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size


class Container(Module):
    """Deprecated: a module holding the modules given as keyword arguments (subclass ``Module`` instead)."""

    def __init__(self, **kwargs: Any) -> None:
        warnings.warn(
            "`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. Subclass "
            "that instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


class Sequential(Module):
    """Modules run one after another, each on the previous one's output."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        return self._modules[key]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        setattr(self, key, module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for key in keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(self), "Sequential")]]:
            delattr(self, key)
        self._renumber()

    def _renumber(self) -> None:
        self.__dict__["_modules"] = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        result = Sequential()
        for module in chain(self, other):
            result.append(module)
        return result

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        for module in list(other):
            self.append(module)
        return self

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        modules = list(self._modules.values())
        modules.insert(index, module)
        self.__dict__["_modules"] = OrderedDict((str(i), m) for i, m in enumerate(modules))
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        for layer in sequential:
            self.append(layer)
        return self

    def pop(self, key: int | slice) -> Module:
        value = self[key]
        del self[key]
        return value

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered so that ``parameters()`` and ``state_dict()`` see them."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self += modules

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx: int | slice) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(_index(idx, len(self), "ModuleList")))
        self.__dict__["_modules"] = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        combined = ModuleList()
        for i, module in enumerate(chain(self, other)):
            combined.add_module(str(i), module)
        return combined

    def insert(self, index: int, module: Module) -> None:
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key: int | slice) -> Module:
        value = self[key]
        del self[key]
        return value

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self

    def __repr__(self) -> str:
        # Runs of identical entries print once, as "(2-5): 4 x Linear(...)".
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        blocks: list[list] = []
        for i, text in enumerate(reprs):
            if blocks and blocks[-1][2] == text:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, text])
        lines = []
        for start, end, text in blocks:
            line = f"({start}): {text}" if start == end else f"({start}-{end}): {end - start + 1} x {text}"
            lines.append(_addindent(line, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class ModuleDict(Module):
    """An ordered dict of modules, registered under their keys."""

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        value = self[key]
        del self[key]
        return value

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules: Any) -> None:
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleDict.update should be called with an iterable of key/value pairs, but got "
                + type(modules).__name__
            )
        if isinstance(modules, Mapping):
            for key, module in modules.items():
                self[key] = module
            return
        for j, pair in enumerate(modules):
            if not isinstance(pair, Iterable) or isinstance(pair, (str, bytes)):
                raise TypeError(
                    f"ModuleDict update sequence element #{j} should be Iterable; is " + type(pair).__name__
                )
            if len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length {len(pair)}; 2 is required")
            self[pair[0]] = pair[1]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


def _describe_entry(value: Any, legacy_type: bool = False) -> str:
    # ParameterList names the dtype, ParameterDict the legacy tensor type, as PyTorch's two do.
    if isinstance(value, Tensor):
        size = "x".join(str(n) for n in value.shape)
        device = f" ({value.device})" if value.device.type not in ("cpu", "meta") else ""
        kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
        dtype = tensor_type_name(value) if legacy_type else value.dtype
        return f"{kind} containing: [{dtype} of size {size}{device}]"
    return "Object of type: " + type(value).__name__


class ParameterList(Module):
    """A list of parameters; plain tensors put in become Parameters."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(len(self))[idx]:
                out.append(self[i])
            return out
        return getattr(self, str(_index(idx, len(self), "ParameterList")))

    def __setitem__(self, idx: int, param: Any) -> None:
        idx = _index(idx, len(self), "ParameterList")
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(idx), param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable[Any]) -> ParameterList:
        return self.extend(parameters)

    def append(self, value: Any) -> ParameterList:
        new_idx = len(self)
        self._size += 1
        # Registered through setattr so that a Parameter lands in _parameters and anything else in __dict__.
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, str(new_idx), value)
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): " + _describe_entry(p) for k, p in enumerate(self))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters; plain tensors put in become Parameters."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        k = next(islice(reversed(list(self._keys)), 1))
        value = self[k]
        del self[k]
        return k, value

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default  # noqa: SIM401  (this is get itself)

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        if not isinstance(parameters, Iterable):
            raise TypeError(
                "ParametersDict.update should be called with an iterable of key/value pairs, but got "
                + type(parameters).__name__
            )
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = list(parameters)
        for j, pair in enumerate(pairs):
            if not isinstance(pair, Iterable):
                raise TypeError(
                    f"ParameterDict update sequence element #{j} should be Iterable; is " + type(pair).__name__
                )
            if len(pair) != 2:
                raise ValueError(f"ParameterDict update sequence element #{j} has length {len(pair)}; 2 is required")
            self[pair[0]] = pair[1]

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): " + _describe_entry(p, legacy_type=True) for k, p in self.items())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")
