"""``ember.fx``: the graph IR between capture and code generation (PyTorch's ``torch.fx``)."""

# The graph IR.
from ember.fx.graph import Graph, PythonCode
from ember.fx.graph_module import GraphModule
from ember.fx.interpreter import Interpreter, Transformer
from ember.fx.node import Node, has_side_effect, map_arg

# Symbolic tracing.
from ember.fx import proxy  # noqa: F401  (ember.fx.proxy, as torch.fx.proxy)  # isort: skip
from ember.fx._symbolic_trace import PH, ProxyableClassMeta, Tracer, symbolic_trace, wrap  # isort: skip
from ember.fx.proxy import Proxy  # isort: skip

# Rewriting.
from ember.fx.subgraph_rewriter import replace_pattern  # isort: skip

# Functionalization: ember.func.functionalize, offered to the autograd package (imported on first use).
from ember.fx import _functionalize_provider  # noqa: F401  # isort: skip

__all__ = [
    "Graph",
    "GraphModule",
    "Interpreter",
    "Node",
    "PythonCode",
    "Transformer",
    "has_side_effect",
    "map_arg",
]
__all__ += ["PH", "Proxy", "ProxyableClassMeta", "Tracer", "symbolic_trace", "wrap"]  # symbolic tracing
__all__ += ["replace_pattern"]  # rewriting
