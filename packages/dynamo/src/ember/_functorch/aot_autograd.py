"""``torch._functorch.aot_autograd``'s names, from ``ember.aot``."""

from ember.aot.aot_autograd import (
    aot_function,
    aot_module,
    aot_module_simplified,
    make_boxed_compiler,
    make_boxed_func,
)

__all__ = ["aot_function", "aot_module", "aot_module_simplified", "make_boxed_compiler", "make_boxed_func"]
