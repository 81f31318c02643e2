"""``ember.fx``: the graph IR between capture and code generation (PyTorch's ``torch.fx``)."""

# Symbolic tracing.
from ember.fx import proxy  # noqa: F401  (ember.fx.proxy, as torch.fx.proxy)
from ember.fx._symbolic_trace import PH, Tracer, symbolic_trace, wrap
from ember.fx.proxy import Proxy

__all__ = ["PH", "Proxy", "Tracer", "symbolic_trace", "wrap"]
