"""How ember's functions see a :class:`~ember.fx.proxy.Proxy` while a symbolic trace runs.

PyTorch records ``torch.relu(proxy)`` through ``__torch_function__``, a check that every torch
function makes on every call. Ember's functions have no such protocol, and adding one would put a
test on the eager fast path. Instead the tracer patches, for the length of one trace:

* every public function of ember's function namespaces: the top-level ``ember`` module (the table
  ``ember.core.api.functions``), ``ember.nn.functional``, ``ember.linalg``, and ``ember.special`` and
  ``ember.fft`` where they exist. The patched function records a ``call_function`` node whose target
  is the original function when any argument (nested in lists, tuples, dicts) is a Proxy, and
  otherwise calls the original;
* the globals of the traced function, and of each module's ``forward`` as it is called, that are
  bound to one of those functions (``from ember import relu``), to a function of an autowrap module
  (``math`` by default), or to an autowrap function: what PyTorch's autowrap does for ``math``;
* the ember functions that ``ember.nn``'s classes hold as static methods (``Conv2d`` keeps
  ``F.conv2d``), for traces through those modules;
* ``Tensor``'s methods and operators, so that ``tensor.add(proxy)`` or ``tensor + proxy`` records a
  ``call_method`` node named as PyTorch names it (``tensor + proxy`` is ``add``, ``tensor % proxy`` is
  ``remainder``), as ``__torch_function__`` does for torch's tensor methods.

A :class:`_Patcher` remembers every replacement and puts the originals back when the trace ends,
also when it raises. Outside a trace nothing is patched, so eager calls cost what they did.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import importlib
import inspect
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

from ember.fx.proxy import Proxy, _register_internal_file

_register_internal_file(__file__)

# Modules whose public functions are recorded as call_function when given a Proxy.
_EMBER_FUNCTION_MODULES = ("ember", "ember.nn.functional", "ember.linalg", "ember.special", "ember.fft")

# Tensor operators, by the call_method name PyTorch records when a tensor is on their left and a
# proxy is an argument (`tensor + proxy` is `tensor.add(proxy)`).
_TENSOR_OPERATOR_METHODS = {
    "__add__": "add",
    "__sub__": "sub",
    "__mul__": "mul",
    "__truediv__": "div",
    "__floordiv__": "__floordiv__",
    "__mod__": "remainder",
    "__pow__": "pow",
    "__matmul__": "matmul",
    "__and__": "__and__",
    "__or__": "__or__",
    "__xor__": "__xor__",
    "__lshift__": "__lshift__",
    "__rshift__": "__rshift__",
    "__eq__": "eq",
    "__ne__": "ne",
    "__lt__": "lt",
    "__le__": "le",
    "__gt__": "gt",
    "__ge__": "ge",
    "__iadd__": "add_",
    "__isub__": "sub_",
    "__imul__": "mul_",
    "__itruediv__": "div_",
    "__ipow__": "pow_",
    "__getitem__": "__getitem__",
    "__setitem__": "__setitem__",
}


def _find_proxy(*objects: Any) -> Proxy | None:
    """The first Proxy in ``objects``, looking into tuples, lists, dicts and slices; None if none."""
    stack = list(objects)
    while stack:
        x = stack.pop()
        if isinstance(x, Proxy):
            return x
        if isinstance(x, (tuple, list)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, slice):
            stack.extend((x.start, x.stop, x.step))
    return None


def _find_tracer(orig: Callable, args: tuple, kwargs: dict) -> Any:
    tracers: dict[Any, None] = {}
    stack: list[Any] = [args, kwargs]
    while stack:
        x = stack.pop()
        if isinstance(x, Proxy):
            tracers[x.tracer] = None
        elif isinstance(x, (tuple, list)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, slice):
            stack.extend((x.start, x.stop, x.step))
    if len(tracers) > 1:
        raise RuntimeError(f"Found multiple different tracers {list(tracers)} while trying to trace operations {orig}")
    return next(iter(tracers), None)


def create_wrapped_func(orig_fn: Callable) -> Callable:
    """A leaf function (``ember.fx.wrap``, autowrap): recorded as a call when given a Proxy."""

    @functools.wraps(orig_fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            out = proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
            out.node.meta["is_wrapped"] = True
            return out
        return orig_fn(*args, **kwargs)

    return wrapped


def create_ember_function(orig_fn: Callable, public_name: str) -> Callable:
    """An ember function: recorded as ``call_function`` of ``orig_fn`` when given a Proxy, named
    after its public name (``ember.relu`` gives nodes ``relu``, ``relu_1``...)."""

    @functools.wraps(orig_fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        tracer = _find_tracer(orig_fn, args, kwargs)
        if tracer is None:
            return orig_fn(*args, **kwargs)
        to_str = getattr(tracer.graph, "_target_to_str", None)
        name = to_str(public_name) if to_str is not None else None
        return tracer.create_proxy("call_function", orig_fn, args, kwargs, name=name)

    return wrapped


def create_tensor_method(orig_fn: Callable, method_name: str) -> Callable:
    """A Tensor method: recorded as ``call_method`` when any argument (``self`` included) is a Proxy."""

    @functools.wraps(orig_fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        tracer = _find_tracer(orig_fn, args, kwargs)
        if tracer is None:
            return orig_fn(*args, **kwargs)
        return tracer.create_proxy("call_method", method_name, args, kwargs)

    return wrapped


class _PatchedItem:
    """``namespace[name] = new`` on a dict (module globals), undone by putting the old value back
    or, for a builtin that was shadowed, by deleting the entry again."""

    def __init__(self, namespace: dict[str, Any], name: str, new: Any) -> None:
        self.namespace, self.name, self.new = namespace, name, new
        self.had = name in namespace
        self.old = namespace.get(name)

    def patch(self) -> None:
        self.namespace[self.name] = self.new

    def revert(self) -> None:
        if self.had:
            self.namespace[self.name] = self.old
        else:
            self.namespace.pop(self.name, None)


class _PatchedAttr:
    """``setattr(owner, name, new)`` on a class, undone by restoring what ``owner.__dict__`` held."""

    def __init__(self, owner: type, name: str, new: Any) -> None:
        self.owner, self.name, self.new = owner, name, new
        self.had = name in owner.__dict__
        self.old = owner.__dict__.get(name)

    def patch(self) -> None:
        setattr(self.owner, self.name, self.new)

    def revert(self) -> None:
        if self.had:
            setattr(self.owner, self.name, self.old)
        else:
            delattr(self.owner, self.name)


class _Patcher:
    """Collects replacements made for one trace and undoes all of them, in reverse order, on exit."""

    def __init__(self) -> None:
        self.patches_made: list[_PatchedItem | _PatchedAttr] = []
        self.visited: set[int] = set()
        # The objects this patcher installed, so that nothing is wrapped twice.
        self._installed: set[int] = set()

    def patch(self, frame_dict: dict[str, Any], name: str, new_fn: Callable) -> None:
        """Replace ``frame_dict[name]`` (or shadow the builtin ``name``) with ``new_fn`` until exit."""
        if name not in frame_dict and not hasattr(builtins, name):
            raise KeyError(name)
        if id(frame_dict.get(name)) in self._installed:
            return
        self._record(_PatchedItem(frame_dict, name, new_fn))

    def patch_method(self, cls: type, name: str, new_fn: Callable) -> None:
        """Replace the attribute ``cls.name`` with ``new_fn`` until exit."""
        if id(cls.__dict__.get(name)) in self._installed:
            return
        self._record(_PatchedAttr(cls, name, new_fn))

    def _record(self, patch: _PatchedItem | _PatchedAttr) -> None:
        self._installed.add(id(patch.new))
        self.patches_made.append(patch)
        patch.patch()

    def visit_once(self, thing: object) -> bool:
        """True the first time ``thing`` is seen by this patcher."""
        if id(thing) in self.visited:
            return False
        self.visited.add(id(thing))
        return True

    def revert_all_patches(self) -> list:
        for patch in reversed(self.patches_made):
            patch.revert()
        return self.patches_made

    def reapply_all_patches(self) -> list:
        for patch in self.patches_made:
            patch.patch()
        return self.patches_made

    def __enter__(self) -> _Patcher:
        return self

    def __exit__(self, *exc: object) -> None:
        while self.patches_made:
            self.patches_made.pop().revert()
        self.visited.clear()
        self._installed.clear()


CURRENT_PATCHER: _Patcher | None = None


@contextlib.contextmanager
def new_patcher() -> Iterator[_Patcher]:
    """A fresh patcher that is the current one for the length of the block; all its patches are undone on exit."""
    global CURRENT_PATCHER
    prior = CURRENT_PATCHER
    patcher = _Patcher()
    CURRENT_PATCHER = patcher
    try:
        with patcher:
            yield patcher
    finally:
        CURRENT_PATCHER = prior


@contextlib.contextmanager
def _maybe_revert_all_patches() -> Iterator[None]:
    """Run a block with the current trace's patches undone (for code that must see the originals)."""
    patcher = CURRENT_PATCHER
    if patcher is not None:
        patcher.revert_all_patches()
    try:
        yield
    finally:
        if patcher is not None:
            patcher.reapply_all_patches()


def ember_function_modules() -> list[types.ModuleType]:
    """The imported modules of ember's function namespaces (importing ember.nn.functional and
    ember.linalg, which every user program may reach)."""
    modules = []
    for name in _EMBER_FUNCTION_MODULES:
        module = sys.modules.get(name)
        if module is None and name in ("ember.nn.functional", "ember.linalg"):
            module = importlib.import_module(name)
        if module is not None:
            modules.append(module)
    return modules


def _public_functions(module: types.ModuleType) -> Iterator[tuple[str, Callable]]:
    if module.__name__ == "ember":
        from ember.core.api import functions

        for name in functions:
            value = module.__dict__.get(name)
            if value is not None:
                yield name, value
        return
    for name, value in list(module.__dict__.items()):
        if not name.startswith("_") and isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
            yield name, value


def patch_ember_functions(patcher: _Patcher) -> dict[int, Callable]:
    """Patch ember's function namespaces; returns ``id(original) -> wrapper`` for patching globals."""
    wrappers: dict[int, Callable] = {}
    for module in ember_function_modules():
        for name, fn in _public_functions(module):
            wrapper = wrappers.get(id(fn))
            if wrapper is None:
                wrapper = wrappers[id(fn)] = create_ember_function(fn, name)
            patcher.patch(module.__dict__, name, wrapper)
    return wrappers


def patch_tensor_methods(patcher: _Patcher) -> None:
    """Make Tensor's methods and operators record ``call_method`` when given a Proxy."""
    from ember.core.tensor import Tensor

    for name in dir(Tensor):
        if name.startswith("_") and name not in _TENSOR_OPERATOR_METHODS:
            continue
        raw = inspect.getattr_static(Tensor, name)
        if not isinstance(raw, (types.FunctionType, types.BuiltinFunctionType)):
            continue  # properties, static and class methods
        owner = next(klass for klass in Tensor.__mro__ if name in klass.__dict__)
        if owner is object:
            continue
        patcher.patch_method(Tensor, name, create_tensor_method(raw, _TENSOR_OPERATOR_METHODS.get(name, name)))


def patch_nn_static_functions(patcher: _Patcher, wrappers: dict[int, Callable]) -> None:
    """Patch ember functions that ember.nn's classes hold as static methods (``Conv2d._functional``
    is ``staticmethod(F.conv2d)``, bound when the class was made), for traces through those modules."""
    import ember.nn

    for cls in list(vars(ember.nn).values()):
        if not (isinstance(cls, type) and issubclass(cls, ember.nn.Module)):
            continue
        for name, raw in list(vars(cls).items()):
            if isinstance(raw, staticmethod) and id(raw.__func__) in wrappers:
                patcher.patch_method(cls, name, staticmethod(wrappers[id(raw.__func__)]))


def autowrap_check(patcher: _Patcher, frame_dict: dict[str, Any], wrappers: dict[int, Callable]) -> None:
    """Patch the globals in ``frame_dict`` bound to a function with a wrapper in ``wrappers``."""
    if not patcher.visit_once(frame_dict):
        return
    for name, value in list(frame_dict.items()):
        if not name.startswith("_") and callable(value) and id(value) in wrappers:
            patcher.patch(frame_dict, name, wrappers[id(value)])
