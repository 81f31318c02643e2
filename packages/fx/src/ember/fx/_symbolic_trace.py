"""Symbolic tracing: run a module's ``forward`` (or a function) on Proxies and record a Graph.

:class:`Tracer` calls the function with one placeholder :class:`~ember.fx.proxy.Proxy` per
parameter. While it runs, the tracer patches:

* ``ember.nn.Module.__call__``, so that calling a submodule goes through :meth:`Tracer.call_module`,
  which records a ``call_module`` node for a leaf module (:meth:`Tracer.is_leaf_module`: the
  modules of ``ember.nn`` but its containers) and traces through any other;
* ``ember.nn.Module.__getattr__``, so that reading a parameter gives a ``get_attr`` node
  (:meth:`Tracer.getattr`);
* ember's functions, Tensor's methods, and the globals bound to ember functions, to ``math``
  functions or to functions registered with :func:`wrap` (see :mod:`ember.fx._patching`: this is
  how ``ember.relu(proxy)`` is recorded without PyTorch's ``__torch_function__``).

Everything is restored when the trace ends, also when it raises.
"""

from __future__ import annotations

import collections
import copy
import functools
import inspect
import math
import time
import warnings
from collections.abc import Callable
from itertools import chain
from types import FunctionType, ModuleType
from typing import Any, ClassVar

import ember.nn as nn
from ember.core.tensor import Tensor
from ember.fx import _patching
from ember.fx._logging import log_traced
from ember.fx._patching import _maybe_revert_all_patches as _maybe_revert_all_patches  # PyTorch's path
from ember.fx._patching import (
    autowrap_check,
    create_wrapped_func,
    new_patcher,
    patch_ember_functions,
    patch_nn_static_functions,
    patch_tensor_methods,
)
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Argument
from ember.fx.proxy import (
    ParameterProxy,
    Proxy,
    Scope,
    ScopeContextManager,
    TraceError,
    TracerBase,
    _register_internal_file,
    base_types,
)

__all__ = [
    "PH",
    "PHBase",
    "PHWithMeta",
    "ProxyableClassMeta",
    "TraceError",
    "Tracer",
    "is_fx_tracing",
    "symbolic_trace",
    "wrap",
]

_register_internal_file(__file__)

_HAS_VARSTUFF = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS

# The originals, captured before any trace patches them (traces may nest).
_orig_module_call: Callable[..., Any] = nn.Module.__call__
_orig_module_getattr: Callable[..., Any] = nn.Module.__getattr__

_is_fx_tracing_flag = False

# Classes made with ProxyableClassMeta: their construction from proxies is recorded.
_proxyable_classes: dict[type, None] = {}


def is_fx_tracing() -> bool:
    """Whether a symbolic trace is running."""
    return _is_fx_tracing_flag


class ProxyableClassMeta(type):
    """A metaclass whose classes' construction is recorded when a trace passes them a Proxy.

    ``Pair(x, y)`` with ``class Pair(metaclass=ProxyableClassMeta)`` becomes a ``call_function``
    node of ``Pair`` while tracing, and the methods called on its result are ``call_method`` nodes.
    An instance made from concrete values is stored on the root as a constant.
    """

    def __init__(cls, name: str, bases: tuple[type, ...], attrs: dict[str, Any]) -> None:
        _proxyable_classes.setdefault(cls)
        super().__init__(name, bases, attrs)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if is_fx_tracing():
            proxy = _patching._find_proxy(args, kwargs)
            if proxy is not None:
                return proxy.tracer.create_proxy("call_function", cls, args, kwargs)
        return super().__call__(*args, **kwargs)


class PHBase:
    """A placeholder inside ``concrete_args``: this part of the input stays an input."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


class PHWithMeta(PHBase):
    """A placeholder inside ``concrete_args`` whose attributes are copied onto its placeholder node."""

    def __init__(self, ph_key: str | None = None) -> None:
        super().__init__()
        self.ph_key = ph_key


def _transfer_attrs(fr: object, to: object) -> None:
    for attr_name in dir(fr):
        attr_val = getattr(fr, attr_name)
        if not callable(attr_val) and not attr_name.startswith("__") and not hasattr(to, attr_name):
            setattr(to, attr_name, attr_val)


def _assert(condition: Any, message: str = "") -> None:
    """``assert condition, message`` that a trace records as a call (PyTorch's ``torch._assert``)."""
    if not condition:
        raise AssertionError(message)


def _assert_is_none(value: Any, msg: str) -> None:
    if value is not None:
        raise AssertionError(msg)


def _patch_function(fn: FunctionType, nargs: int) -> FunctionType:
    """``fn`` with ``*args``/``**kwargs``/keyword-only parameters turned into ``nargs`` positional ones,
    so that the tracer can pass one proxy for each."""
    co = fn.__code__
    code = co.replace(
        co_argcount=nargs,
        co_posonlyargcount=0,
        co_kwonlyargcount=0,
        co_flags=co.co_flags & ~_HAS_VARSTUFF,
    )
    return FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


class Tracer(TracerBase):
    """Tracer(autowrap_modules=(math,), autowrap_functions=())

    Implements :func:`symbolic_trace`: ``symbolic_trace(m)`` is ``GraphModule(m, Tracer().trace(m))``.
    Subclass it to change what is a leaf module, how module attributes and arguments are
    recorded, or how control flow on proxies is handled.

    Args:
        autowrap_modules: modules whose public functions are recorded as calls (not traced through)
            wherever the traced code's globals refer to them, without :func:`wrap`.
        autowrap_functions: single functions treated the same way.
        param_shapes_constant: give parameters :class:`~ember.fx.proxy.ParameterProxy` proxies, whose
            ``shape``, ``size()``, ``dim()``... are the parameter's, not recorded nodes.
    """

    def __init__(
        self,
        autowrap_modules: tuple[ModuleType, ...] = (math,),
        autowrap_functions: tuple[Callable[..., Any], ...] = (),
        param_shapes_constant: bool = False,
    ) -> None:
        super().__init__()
        self._autowrap_function_ids: set[int] = {
            id(value)
            for name, value in chain.from_iterable(m.__dict__.items() for m in autowrap_modules)
            if not name.startswith("_") and callable(value)
        }
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_search: list[ModuleType] = list(autowrap_modules)
        self._autowrap_functions = tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict[nn.Module, str] | None = None
        self.root_module_name = ""
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.num_calls: dict[str, int] = {}
        self.node_name_to_scope: dict[str, tuple[str, type]] = {}

    # Shared by all tracers, as in PyTorch: the next free suffix per constant-name prefix.
    def __deepcopy__(self, memo: dict[int, Any]) -> Tracer:
        # The autowrap modules are shared, not copied (modules cannot be deep-copied).
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            new.__dict__[k] = copy.copy(v) if k == "_autowrap_search" else copy.deepcopy(v, memo)
        return new

    _qualname_counter: ClassVar[dict[str, int]] = collections.defaultdict(int)

    def get_fresh_qualname(self, prefix: str) -> str:
        """A name ``prefix<i>`` that is not yet an attribute of the root module."""
        qualname = f"{prefix}0"
        if not hasattr(self.root, qualname):
            self._qualname_counter[prefix] = 0
            return qualname
        i = self._qualname_counter[prefix]
        while True:
            qualname = f"{prefix}{i}"
            i += 1
            if not hasattr(self.root, qualname):
                break
        self._qualname_counter[prefix] = i
        return qualname

    def create_arg(self, a: Any) -> Argument:
        """Lower a value into a node argument.

        Parameters, buffers and submodules of the root become ``get_attr`` nodes; a named tuple
        becomes a ``call_function`` node of its type; any other tensor is stored on the root as
        ``_tensor_constant<i>`` and read back with ``get_attr``. The rest as
        :meth:`TracerBase.create_arg`.
        """
        if isinstance(a, nn.Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            for n, p in self.root.named_buffers():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
        elif isinstance(a, nn.Module):
            for n, p in self.root.named_modules():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            args = tuple(self.create_arg(elem) for elem in a)
            return self.create_node("call_function", a.__class__, args, {})
        if type(a) in _proxyable_classes:
            qualname = self.get_fresh_qualname(f"_{a.__class__.__name__}_constant_")
            setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, Tensor):
            qualname = self.tensor_attrs.get(a)
            if not qualname:
                qualname = self.get_fresh_qualname("_tensor_constant")
                self.tensor_attrs[a] = qualname
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        """Whether ``m`` is recorded as one ``call_module`` node rather than traced through.

        By default the modules defined in ``ember.nn`` are leaves, except the containers
        (``Sequential``, ``ModuleList``, ``ModuleDict``), whose contents are traced.
        """
        return type(m).__module__.startswith("ember.nn") and not isinstance(
            m, (nn.Sequential, nn.ModuleList, nn.ModuleDict)
        )

    def path_of_module(self, mod: nn.Module) -> str:
        """The qualified name of ``mod`` in the root's module hierarchy (``"foo.bar"``)."""
        if self.submodule_paths:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(
        self, m: nn.Module, forward: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """A call of submodule ``m``: a ``call_module`` node if it is a leaf, else a trace of ``forward``."""
        module_qualified_name = self.path_of_module(m)
        with ScopeContextManager(self.scope, Scope(module_qualified_name, type(m))) as scope:
            num_calls = self.num_calls.get(module_qualified_name, 0)
            module_key = f"{scope.module_path}@{num_calls}" if num_calls > 0 else scope.module_path
            self.module_stack[module_key] = (module_qualified_name, scope.module_type)
            self.num_calls[module_qualified_name] = num_calls + 1
            try:
                if not self.is_leaf_module(m, module_qualified_name):
                    ret_val = forward(*args, **kwargs)
                else:
                    ret_val = self.create_proxy("call_module", module_qualified_name, args, kwargs)
            finally:
                self.module_stack.pop(module_key, None)
        return ret_val

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Proxy]) -> Any:
        """What reading ``module.attr`` gives during a trace: a (cached) ``get_attr`` proxy for a
        parameter of the root (and for a buffer, with ``proxy_buffer_attributes``), else the value."""

        def proxy_for(collection: Any) -> Proxy | None:
            for n, p in collection:
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        factory = None
                        if self.param_shapes_constant and isinstance(attr_val, nn.Parameter):

                            def factory(node: Any, n: str = n) -> Proxy:
                                return ParameterProxy(self, node, n, attr_val)

                        if "proxy_factory_fn" in inspect.signature(self.create_proxy).parameters:
                            proxy = self.create_proxy("get_attr", n, (), {}, proxy_factory_fn=factory)
                        else:
                            proxy = self.create_proxy("get_attr", n, (), {})
                        parameter_proxy_cache[n] = proxy
                    return parameter_proxy_cache[n]
            return None

        if isinstance(attr_val, nn.Parameter):
            proxy = proxy_for(self.root.named_parameters())
            if proxy is not None:
                return proxy
        if self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            proxy = proxy_for(self.root.named_buffers())
            if proxy is not None:
                return proxy
        return attr_val

    def create_args_for_root(
        self, root_fn: Callable[..., Any], is_module: bool, concrete_args: dict[str, Any] | tuple | None = None
    ) -> tuple[Callable[..., Any], list[Any]]:
        """One ``placeholder`` node per parameter of ``root_fn`` (``*args``/``**kwargs`` included),
        or the specialized value for those named in ``concrete_args``."""
        fn_for_analysis = inspect.unwrap(root_fn)
        co = fn_for_analysis.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        orig_args = list(co.co_varnames)
        names_iter = iter(co.co_varnames)
        args: list[Any] = []
        skip_arg_idx = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip_arg_idx = 1
            next(names_iter)
            args.append(self.root)
        sig = inspect.signature(fn_for_analysis)

        if isinstance(concrete_args, tuple) and concrete_args and co.co_flags & _HAS_VARSTUFF and total_args == 1:
            for i, concrete_arg in enumerate(concrete_args):
                out = self.create_proxy("placeholder", f"input_{i}", (), {})
                if isinstance(concrete_arg, PHBase) and concrete_arg is not PH:
                    _transfer_attrs(fr=concrete_arg, to=out.node)
                args.append(out)
            return root_fn, args

        arg_names = [next(names_iter) for _ in range(skip_arg_idx, total_args)]
        if isinstance(concrete_args, tuple):
            if len(arg_names) != len(concrete_args):
                raise RuntimeError(
                    f"Tracing expected {len(arg_names)} arguments but got {len(concrete_args)} concrete arguments"
                )
            concrete_args = dict(zip(arg_names, concrete_args, strict=True))

        args.extend(self._proxy_placeholder(name, concrete_args, sig, fn_for_analysis) for name in arg_names)
        if co.co_kwonlyargcount > 0 or co.co_flags & _HAS_VARSTUFF:
            if co.co_flags & inspect.CO_VARARGS:
                args.append(self._proxy_placeholder("*" + next(names_iter), concrete_args, sig, fn_for_analysis))
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(self._proxy_placeholder("**" + next(names_iter), concrete_args, sig, fn_for_analysis))
            root_fn = _patch_function(root_fn, len(args))

        from ember.fx import _trace_pytree

        return _trace_pytree.flatten_root_args(self, root_fn, args, orig_args[:total_args])

    def _proxy_placeholder(
        self, name: str, concrete_args: dict[str, Any] | None, sig: inspect.Signature, fn_for_analysis: Callable
    ) -> Any:
        if concrete_args is not None and name in concrete_args:
            from ember.fx import _trace_pytree

            count = 0

            def replace_ph(x: Any) -> Any:
                nonlocal count
                count += 1
                param = sig.parameters[name]
                default = () if param.default is inspect.Parameter.empty else (param.default,)
                out = self.create_proxy("placeholder", f"{name}_{count}", default, {})
                if isinstance(x, PHBase):
                    if x is not PH:
                        _transfer_attrs(fr=x, to=out.node)
                    return out
                # The specialized value is checked when the GraphModule runs.
                if type(x) is bool or (type(x) in base_types and not isinstance(x, Tensor)):
                    message = f"{name} has been specialized to have value {x} but got another value"
                    self.create_proxy("call_function", _assert, (out == x, message), {})
                elif x is None:
                    message = f"{name} has been specialized to have value None but got another value"
                    self.create_proxy("call_function", _assert_is_none, (out, message), {})
                else:
                    warnings.warn(
                        f"Was not able to add assertion to guarantee correct input {name} to specialized function. "
                        "It is up to the user to make sure that your inputs match the inputs you specialized the "
                        "function with.",
                        stacklevel=2,
                    )
                return x

            return _trace_pytree.tree_map(replace_ph, concrete_args[name])
        if name[0] == "*":
            default: tuple[Any, ...] = ()
        else:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
        return self.create_proxy(
            "placeholder", name, default, {}, type_expr=_annotations(fn_for_analysis).get(name, None)
        )

    def trace(self, root: nn.Module | Callable[..., Any], concrete_args: dict[str, Any] | None = None) -> Graph:
        """Trace ``root`` (a module's ``forward``, or a function) and return its :class:`Graph`.

        For a function, ``self.root`` becomes a fresh ``ember.nn.Module`` that holds the constants
        the trace needs. ``concrete_args`` maps parameter names to values to specialize on (the
        graph checks them when it runs); ``PH`` inside a value keeps that part an input.
        """
        global _is_fx_tracing_flag
        old_flag = _is_fx_tracing_flag
        _is_fx_tracing_flag = True
        try:
            if isinstance(root, nn.Module):
                self.root = root
                if not hasattr(type(root), self.traced_func_name):
                    raise AssertionError(
                        f"traced_func_name={self.traced_func_name} doesn't exist in {type(root).__name__}"
                    )
                fn = getattr(type(root), self.traced_func_name)
                self.root_module_name = root._get_name()
                self.submodule_paths = {mod: name for name, mod in root.named_modules()}
            else:
                self.root = nn.Module()
                fn = root

            self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
            if hasattr(fn, "__code__"):
                code = fn.__code__
                self.graph._co_fields = {
                    "co_name": code.co_name,
                    "co_filename": code.co_filename,
                    "co_firstlineno": code.co_firstlineno,
                }

            # Tensors held as plain attributes are read back by their path, not copied as constants.
            self.tensor_attrs: dict[Tensor, str] = {}

            def collect_tensor_attrs(m: nn.Module, prefix_atoms: list[str]) -> None:
                for k, v in m.__dict__.items():
                    if isinstance(v, Tensor):
                        self.tensor_attrs[v] = ".".join([*prefix_atoms, k])
                for k, v in m.named_children():
                    collect_tensor_attrs(v, [*prefix_atoms, k])

            collect_tensor_attrs(self.root, [])

            if not isinstance(fn, FunctionType):
                raise AssertionError(f"Expected FunctionType, got {type(fn)}")
            fn_globals = fn.__globals__  # before create_args_for_root may rebuild fn
            fn, args = self.create_args_for_root(fn, isinstance(root, nn.Module), concrete_args)

            with new_patcher() as patcher:
                self._install_patches(patcher, fn_globals)
                result = fn(*args)
                ann = _annotations(inspect.unwrap(fn))
                self.create_node("output", "output", (self.create_arg(result),), {}, type_expr=ann.get("return"))
            self.submodule_paths = None
        finally:
            _is_fx_tracing_flag = old_flag
        return self.graph

    def _install_patches(self, patcher: _patching._Patcher, fn_globals: dict[str, Any]) -> None:
        parameter_proxy_cache: dict[str, Proxy] = {}  # one get_attr node per parameter
        wrappers = patch_ember_functions(patcher)
        patch_nn_static_functions(patcher, wrappers)
        patch_tensor_methods(patcher)
        for module in self._autowrap_search:
            for name, value in module.__dict__.items():
                if not name.startswith("_") and callable(value) and id(value) in self._autowrap_function_ids:
                    wrappers.setdefault(id(value), create_wrapped_func(value))
        for value in self._autowrap_functions:
            wrappers.setdefault(id(value), create_wrapped_func(value))

        @functools.wraps(_orig_module_getattr)
        def module_getattr_wrapper(mod: nn.Module, attr: str) -> Any:
            attr_val = _orig_module_getattr(mod, attr)
            return self.getattr(attr, attr_val, parameter_proxy_cache)

        @functools.wraps(_orig_module_call)
        def module_call_wrapper(mod: nn.Module, *args: Any, **kwargs: Any) -> Any:
            def forward(*args: Any, **kwargs: Any) -> Any:
                return _orig_module_call(mod, *args, **kwargs)

            autowrap_check(patcher, getattr(getattr(mod, "forward", mod), "__globals__", {}), wrappers)
            return self.call_module(mod, forward, args, kwargs)

        patcher.patch_method(nn.Module, "__getattr__", module_getattr_wrapper)
        patcher.patch_method(nn.Module, "__call__", module_call_wrapper)
        _patch_wrapped_functions(patcher)
        autowrap_check(patcher, fn_globals, wrappers)
        for module in self._autowrap_search:
            autowrap_check(patcher, module.__dict__, wrappers)


# (id of a module's globals, function name) -> those globals: the functions registered with wrap().
_wrapped_fns_to_patch: dict[tuple[int, str], dict[str, Any]] = {}


def _patch_wrapped_functions(patcher: _patching._Patcher) -> None:
    import builtins

    for (_, name), frame_dict in list(_wrapped_fns_to_patch.items()):
        orig_fn = getattr(builtins, name) if name not in frame_dict and hasattr(builtins, name) else frame_dict[name]
        patcher.patch(frame_dict, name, create_wrapped_func(orig_fn))


def wrap(fn_or_name: str | Callable[..., Any]) -> Any:
    """Make a module-level function a leaf of symbolic tracing: calls of it that get a Proxy are
    recorded as one ``call_function`` node instead of being traced through.

    Call it at the top level of the module that defines (or imports) the function, with the
    function or its name; it also works as a decorator::

        @ember.fx.wrap
        def norm_len(x):
            return len(x)
    """
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or string name")
    fn_name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is None or caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(caller.f_globals), fn_name)] = caller.f_globals
    return fn_or_name


def _annotations(fn: Callable[..., Any]) -> dict[str, Any]:
    """``fn``'s annotations as objects: a module written with ``from __future__ import annotations``
    holds them as strings, which would print as names the generated code does not have."""
    try:
        return inspect.get_annotations(fn, eval_str=True)
    except Exception:  # an annotation naming what its module cannot resolve: keep them as written
        return inspect.get_annotations(fn)


def symbolic_trace(root: nn.Module | Callable[..., Any], concrete_args: dict[str, Any] | None = None) -> GraphModule:
    """Record the operations of ``root`` (a module or a function) on Proxies as a :class:`GraphModule`.

    ``concrete_args`` specializes some inputs, to remove control flow or data structures; the
    GraphModule asserts that later calls pass the same values. Use :data:`PH` for the parts of a
    structured input that stay inputs::

        def f(x, flag):
            return x + 1 if flag else x

        gm = ember.fx.symbolic_trace(f, concrete_args={"flag": True})
    """
    started = time.perf_counter()
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, nn.Module) else root.__name__
    gm = GraphModule(tracer.root, graph, name)
    log_traced("symbolic_trace", name, gm, started)
    return gm
