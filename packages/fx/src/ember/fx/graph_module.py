"""``GraphModule``: a module whose ``forward`` is the Python code generated from a ``Graph``.

``recompile()`` generates the source of ``forward`` from the graph and executes it under a
file name of the form ``<eval_with_key>.N``, with the source registered in ``linecache``, so
tracebacks and debuggers show the generated lines. Each instance gets a class of its own
(``GraphModuleImpl``), because ``forward`` is installed on the class, as in PyTorch.

The module holds only what its graph reads: building it copies the submodules, parameters,
buffers and constants named by ``get_attr``/``call_module`` nodes from ``root``.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import linecache
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ember.core.tensor import Tensor
from ember.fx._graph_pickle import _format_import_block, graph_from_payload, graph_to_payload
from ember.fx._to_folder import write_folder
from ember.fx.graph import Graph, PythonCode
from ember.nn import Module, Parameter

__all__ = ["GraphModule", "reduce_graph_module"]


class _EvalCacheLoader:
    """Keeps generated sources so that ``linecache`` (and so tracebacks) can show their lines."""

    def __init__(self) -> None:
        self.eval_cache: dict[str, str] = {}
        self.next_id = 0

    def cache(self, src: str, globals: dict[str, Any], co_fields: dict[str, Any] | None = None) -> str:
        key = f"<eval_with_key>.{self.next_id}"
        self.next_id += 1
        if co_fields and "co_filename" in co_fields:
            if "co_firstlineno" in co_fields and "co_name" in co_fields:
                key += f" from {co_fields['co_filename']}:{co_fields['co_firstlineno']} in {co_fields['co_name']}"
            else:
                key = co_fields["co_filename"]
        self.eval_cache[key] = src
        globals_copy = {**globals, "__file__": key, "__name__": key, "__loader__": self}
        linecache.lazycache(key, globals_copy)
        return key

    def get_source(self, module_name: str) -> str | None:
        return self.eval_cache.get(module_name)


_loader = _EvalCacheLoader()


def _exec_with_source(src: str, globals: dict[str, Any], co_fields: dict[str, Any] | None = None) -> None:
    key = _loader.cache(src, globals, co_fields)
    exec(compile(src, key, "exec", dont_inherit=True), globals)


def _forward_from_src(src: str, globals: dict[str, Any], co_fields: dict[str, Any] | None = None) -> Callable:
    return _method_from_src("forward", src, globals, co_fields)


def _method_from_src(
    method_name: str, src: str, globals: dict[str, Any], co_fields: dict[str, Any] | None = None
) -> Callable:
    globals_copy = globals.copy()  # the caller's dict stays as it was
    _exec_with_source(src, globals_copy, co_fields)
    return globals_copy.pop(method_name)


# -- copying what the graph reads from the root ---------------------------------------------------


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            # A parent was already installed whole; everything under it came along.
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    # A tensor that is not a parameter is registered as a buffer, so state_dict and .to() see it.
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj: Any, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, Tensor) and not isinstance(from_obj, Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


class _WrappedCall:
    """Calls the module; an error raised in the generated code also prints the generated lines."""

    def __init__(self, cls: type, cls_call: Callable | None) -> None:
        self.cls = cls
        self.cls_call = cls_call

    @staticmethod
    def _generate_error_message(frame_summary: traceback.FrameSummary) -> str:
        lineno = frame_summary.lineno or 0
        line = frame_summary.line or ""
        src_lines = linecache.getlines(frame_summary.filename)
        header = f"Call using an FX-traced Module, line {lineno} of the traced Module's generated forward function:"
        before = "".join(src_lines[lineno - 2 : lineno])
        marker = "~" * len(line) + "~~~ <--- HERE"
        after = "\n".join(src_lines[lineno : lineno + 2])
        return "\n".join([traceback.format_exc(), header, before, marker, after])

    def __call__(self, obj: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            if self.cls_call is not None:
                return self.cls_call(obj, *args, **kwargs)
            return super(self.cls, obj).__call__(*args, **kwargs)
        except Exception as e:
            assert e.__traceback__ is not None
            top = traceback.StackSummary.extract(traceback.walk_tb(e.__traceback__))[-1]
            if "eval_with_key" in top.filename:
                print(_WrappedCall._generate_error_message(top), file=sys.stderr)
                raise e.with_traceback(None)  # noqa: B904  (the generated lines were printed instead)
            raise


class GraphModule(Module):
    """A module generated from a ``Graph``: ``graph``, ``code`` and the ``forward`` compiled from them.

    After editing ``graph`` in place, call ``recompile()``; assigning ``graph`` recompiles by itself.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> GraphModule:
        # A class per instance, since recompile() installs forward on the class.
        for t in cls.__mro__:
            if t.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):  # type: ignore[misc, valid-type]
            pass

        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Module | dict[str, Any], graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)  # type: ignore[arg-type]
        elif isinstance(root, dict):
            targets = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(
                            f"Node {node} referenced target {node.target} but that target was not provided in ``root``!"
                        )
                    targets.append(node.target)
            # Parents before children, so that a child lands inside its installed parent.
            targets.sort(key=lambda t: t.count("."))
            for target in targets:
                _assign_attr(root[target], self, target)
        else:
            raise RuntimeError(f"Unsupported type {root} passed for root!")
        self.graph = graph
        self._tracer_cls = None
        if graph._tracer_cls and "<locals>" not in graph._tracer_cls.__qualname__:
            self._tracer_cls = graph._tracer_cls
        self._tracer_extras: dict[str, Any] = {}
        if graph._tracer_extras:
            self._tracer_extras = graph._tracer_extras
        self.meta: dict[str, Any] = {}
        self._replace_hooks: list[Callable] = []
        self._create_node_hooks: list[Callable] = []
        self._erase_node_hooks: list[Callable] = []
        self._deepcopy_hooks: list[Callable] = []

    # -- the graph and its code ------------------------------------------------------------------

    @property
    def graph(self) -> Graph:
        """The graph this module runs."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of ``forward``."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Call recompile() on the GraphModule")
        return self._code

    def recompile(self) -> PythonCode:
        """Generate ``forward`` again from ``graph`` (needed after editing the graph in place)."""
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        self._lineno_map = python_code._lineno_map
        cls = type(self)
        co_fields = getattr(self._graph, "_co_fields", {})
        cls.forward = _forward_from_src(self._code, python_code.globals, co_fields)
        cls_call = cls.__call__ if "__call__" in vars(cls) else None
        if "_wrapped_call" not in vars(cls):
            cls._wrapped_call = _WrappedCall(cls, cls_call)  # type: ignore[attr-defined]

        def call_wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            return self._wrapped_call(self, *args, **kwargs)

        cls.__call__ = call_wrapped  # type: ignore[method-assign]
        return python_code

    def print_readable(
        self,
        print_output: bool = True,
        include_stride: bool = False,
        include_device: bool = False,
        colored: bool = False,
        *,
        additional_meta: list[str] | None = None,
    ) -> str:
        """The code of this module and its child ``GraphModule``s as a class, with stack-trace comments."""
        return _print_readable(
            self, self._get_name(), print_output, include_stride, include_device, colored, additional_meta
        )

    def __str__(self) -> str:
        reminder = "# To see more debug info, please use `graph_module.print_readable()`"
        return "\n".join([super().__str__(), self._code, reminder])

    # -- submodules ------------------------------------------------------------------------------

    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at the dotted path ``target``, creating empty modules on the way.

        Returns False when something on the path exists and is not a module.
        """
        *prefix, field = target.split(".")
        mod: Module = self
        for item in prefix:
            submod = getattr(mod, item, None)
            if submod is None:
                submod = Module()
                setattr(mod, item, submod)
            if not isinstance(submod, Module):
                return False
            mod = submod
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at ``target``; False when ``target`` names no submodule."""
        *path, name = target.split(".")
        mod: Any = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, name) or not isinstance(getattr(mod, name), Module):
            return False
        delattr(mod, name)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove every submodule that no ``call_module``/``get_attr`` node reaches."""
        used: set[str] = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr") and isinstance(node.target, str):
                used.update(itertools.accumulate(node.target.split("."), lambda x, y: f"{x}.{y}"))
                if node.op == "call_module":
                    try:
                        submod = self.get_submodule(node.target)
                    except AttributeError:
                        continue
                    used.update(f"{node.target}.{name}" for name, _ in submod.named_modules() if name)
        for name in [name for name, _ in self.named_modules() if name not in used and name]:
            self.delete_submodule(name)

    # -- hooks on graph edits (private, as in PyTorch) --------------------------------------------

    def _register_replace_node_hook(self, f: Callable) -> None:
        """``f(old=node, new=name, user=node)`` runs when a use of a node is replaced or a node renamed."""
        if not callable(f):
            raise AssertionError("replace hook must be a callable.")
        self._replace_hooks.append(f)

    def _unregister_replace_node_hook(self, f: Callable) -> None:
        self._replace_hooks.remove(f)

    @contextlib.contextmanager
    def _set_replace_hook(self, f: Callable) -> Iterator[None]:
        self._register_replace_node_hook(f)
        try:
            yield
        finally:
            self._unregister_replace_node_hook(f)

    def _register_create_node_hook(self, f: Callable) -> None:
        """``f(node)`` runs for each node created in this module's graph."""
        if not callable(f):
            raise AssertionError("create_node hook must be a callable.")
        self._create_node_hooks.append(f)

    def _unregister_create_node_hook(self, f: Callable) -> None:
        self._create_node_hooks.remove(f)

    def _register_erase_node_hook(self, f: Callable) -> None:
        """``f(node)`` runs for each node erased from this module's graph."""
        if not callable(f):
            raise AssertionError("erase_node hook must be a callable.")
        self._erase_node_hooks.append(f)

    def _unregister_erase_node_hook(self, f: Callable) -> None:
        self._erase_node_hooks.remove(f)

    def _register_deepcopy_hook(self, f: Callable) -> None:
        """``f(copy)`` runs on each deep copy of this module."""
        if not callable(f):
            raise AssertionError("deepcopy hook must be a callable.")
        self._deepcopy_hooks.append(f)

    def _unregister_deepcopy_hook(self, f: Callable) -> None:
        self._deepcopy_hooks.remove(f)

    # -- copies and serialization ----------------------------------------------------------------

    def __reduce__(self) -> tuple:
        body = self.__dict__.copy()
        python_code = self.recompile()
        del body["_graph"]
        import_block = _format_import_block(python_code.globals)
        payload = graph_to_payload(self._graph, python_code.globals)
        return (reduce_graph_module, (body, import_block, payload))

    def __deepcopy__(self, memo: dict[int, Any]) -> GraphModule:
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        fake_mod = _CodeOnlyModule(copy.deepcopy(self.__dict__, memo))
        GraphModule.__init__(res, fake_mod, fake_mod.__dict__["_graph"])
        for attr in (
            "_state_dict_hooks",
            "_load_state_dict_pre_hooks",
            "_load_state_dict_post_hooks",
            "_replace_hooks",
            "_create_node_hooks",
            "_erase_node_hooks",
            "_deepcopy_hooks",
        ):
            if attr in self.__dict__:
                setattr(res, attr, copy.deepcopy(self.__dict__[attr], memo))
        res.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        for hook in getattr(self, "_deepcopy_hooks", ()):
            hook(res)
        return res

    def __copy__(self) -> GraphModule:
        res = GraphModule(self, self.graph)
        res.meta = getattr(self, "meta", {})
        return res

    def to_folder(self, folder: str | Path, module_name: str = "FxModule") -> None:
        """Write this module as a Python package: ``from <folder> import <module_name>`` rebuilds it."""
        write_folder(self, Path(folder), module_name)


class _CodeOnlyModule(Module):
    """A module holding a copied ``__dict__``; the root a ``GraphModule`` is rebuilt from."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__()
        self.__dict__ = body


def reduce_graph_module(body: dict[str, Any], import_block: str, payload: Any = None) -> Module:
    """Rebuild a pickled ``GraphModule`` from its state, its globals' imports and its graph."""
    namespace: dict[str, Any] = {}
    exec(import_block, namespace)
    graph = graph_from_payload(payload, namespace)
    com = _CodeOnlyModule(body)
    gm = GraphModule(com, graph, class_name=body.get("_graphmodule_cls_name", "GraphModule"))
    for k, v in body.items():
        if not hasattr(gm, k):
            setattr(gm, k, v)
    return gm


def _addindent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    # Blank lines stay empty, as PyTorch's module printing does.
    return first + "\n" + "\n".join(num_spaces * " " + line if line.strip() else "" for line in lines)


def _print_readable(
    module: GraphModule,
    module_name: str,
    print_output: bool = True,
    include_stride: bool = False,
    include_device: bool = False,
    colored: bool = False,
    additional_meta: list[str] | None = None,
) -> str:
    graph = module.graph
    if not isinstance(graph, Graph):
        raise AssertionError("print_readable must be used on a module with a graph")
    code = graph.python_code(
        root_module="self",
        verbose=True,
        include_stride=include_stride,
        include_device=include_device,
        colored=colored,
        additional_meta=additional_meta,
    ).src
    module_code = _addindent(f"class {module_name}(ember.nn.Module):\n" + code.lstrip("\n"), 4)
    sub_codes = [""]
    for name, child in module.named_children():
        if isinstance(child, GraphModule):
            sub_codes.append(
                _print_readable(child, name, False, include_stride, include_device, colored, additional_meta)
            )
    output = module_code + _addindent("\n".join(sub_codes), 4)
    if print_output:
        print(output)
    return output
