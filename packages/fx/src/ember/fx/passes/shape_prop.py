"""``ShapeProp``: run a graph on example inputs and record what each node produced (``torch.fx.passes.shape_prop``).

Each node that produces a tensor, or a list, tuple or dict holding tensors, gets
``node.meta["tensor_meta"]``: a :class:`TensorMetadata`, or the same container of them. Every node
gets ``node.meta["type"]``, the type of its value.

With a fake mode (given, or found by ``ember._guards.detect_fake_mode`` among the active mode and
the inputs), the graph runs on fake tensors: the inputs and the module's parameters and buffers are
converted, so no data is computed, and the module itself is left as it was.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

from ember.core import memory_formats
from ember.core.layout import is_contiguous
from ember.core.tensor import Tensor
from ember.fx.graph_module import GraphModule
from ember.fx.interpreter import Interpreter
from ember.fx.node import Node, map_aggregate

__all__ = ["ShapeProp", "TensorMetadata"]


class TensorMetadata(NamedTuple):
    """What ``ShapeProp`` records about one tensor."""

    shape: Any  # ember.Size
    dtype: Any  # ember.dtype
    requires_grad: bool
    stride: tuple[int, ...]
    # contiguous_format, channels_last or channels_last_3d when the strides are that
    # format's; None otherwise.
    memory_format: Any
    is_quantized: bool
    qparams: dict[str, Any]


def _memory_format(t: Tensor) -> Any:
    shape, stride = tuple(t.shape), tuple(t.stride())
    if is_contiguous(shape, stride):
        return memory_formats.contiguous_format
    for name in ("channels_last", "channels_last_3d"):
        if memory_formats.is_contiguous_as(shape, stride, name):
            return getattr(memory_formats, name)
    return None


def _extract_tensor_metadata(result: Tensor, include_contiguity: bool = True) -> TensorMetadata:
    """The :class:`TensorMetadata` of ``result``."""
    memory_format = _memory_format(result) if include_contiguity else None
    return TensorMetadata(
        result.shape, result.dtype, result.requires_grad, tuple(result.stride()), memory_format, False, {}
    )


def _detect_fake_mode() -> Any:
    from ember._guards import detect_fake_mode

    return detect_fake_mode()


def _deepcopy_to_fake(module: GraphModule, fake_mode: Any) -> GraphModule:
    """A copy of ``module`` whose parameters and buffers are ``fake_mode``'s fakes of the originals."""
    memo: dict[int, Any] = {}
    for t in (*module.parameters(), *module.buffers()):
        memo[id(t)] = fake_mode.from_tensor(t)
    return copy.deepcopy(module, memo)


class ShapeProp(Interpreter):
    """Runs a ``GraphModule`` node by node and records each node's tensor metadata and type.

    Example::

        gm = ember.fx.symbolic_trace(model)
        ShapeProp(gm).propagate(ember.randn(50, 1000))
        for node in gm.graph.nodes:
            print(node.name, node.meta["tensor_meta"].dtype, node.meta["tensor_meta"].shape)
    """

    def __init__(self, gm: GraphModule, fake_mode: Any = None) -> None:
        super().__init__(gm)
        if fake_mode is None:
            fake_mode = _detect_fake_mode()
        if fake_mode is not None:
            from ember._subclasses.fake_tensor import FakeTensorMode

            if not isinstance(fake_mode, FakeTensorMode):
                raise TypeError(f"ShapeProp: fake_mode must be a FakeTensorMode, got {type(fake_mode).__name__}")
            # The graph runs on a fake copy of the module, so that the real module's state is not
            # converted, while the metadata is written onto the real graph's nodes.
            self.fake_module: GraphModule | None = _deepcopy_to_fake(self.module, fake_mode)  # type: ignore[arg-type]
        else:
            self.fake_module = None
        self.fake_mode = fake_mode
        self.real_module = self.module

    def run_node(self, n: Node) -> Any:
        try:
            if self.fake_module is not None:
                self.module = self.fake_module
            try:
                if self.fake_mode is not None:
                    with self.fake_mode:
                        result = super().run_node(n)
                else:
                    result = super().run_node(n)
            finally:
                self.module = self.real_module
        except Exception as e:
            raise RuntimeError(f"ShapeProp error for: node={n.format_node()} with meta={n.meta}") from e

        found_tensor = False

        def extract(obj: Any) -> Any:
            nonlocal found_tensor
            if isinstance(obj, Tensor):
                found_tensor = True
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found_tensor:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run the module on ``args`` (converted to fakes under a fake mode), recording each node's
        metadata; returns what the module returns."""
        if self.fake_mode is not None:
            args = tuple(self.fake_mode.from_tensor(t) if isinstance(t, Tensor) else t for t in args)
        return super().run(*args)
