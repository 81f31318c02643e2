"""``ember.func``: composable function transforms (``torch.func``)."""

from ember.func._vmap import vmap
from ember.func.functional_call import functional_call, stack_module_state
from ember.func.functionalize import functionalize
from ember.func.transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp

__all__ = [
    "functional_call",
    "functionalize",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "stack_module_state",
    "vjp",
    "vmap",
]
