"""Ember's code generator: FX graphs of core ops to fused C++ kernels on their own thread pool (the ``inductor`` backend).

``ember.compile(fn)`` uses it by default; ``compile_fx(gm, example_inputs)`` is the backend itself
and ``compile_fx_inner`` compiles one functional graph. See the package README for what is built.
"""

from ember.inductor import config
from ember.inductor.compile_fx import compile_fx, compile_fx_inner

__all__ = ["compile_fx", "compile_fx_inner", "config"]
