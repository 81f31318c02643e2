"""``ember.func``: composable function transforms (``torch.func``)."""

from ember.autograd import view_replay as _view_replay
from ember.autograd.functional_api import grad as _autograd_grad
from ember.func._vmap import vmap
from ember.func.debugging import debug_unwrap, replace_all_batch_norm_modules_
from ember.func.functional_call import functional_call, stack_module_state
from ember.func.functionalize import functionalize
from ember.func.linearize import linearize
from ember.func.rearrange import rearrange
from ember.func.transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp

# vmap alone makes views autograd finds by replaying their view ops; their backward runs the engine.
_view_replay.install_grad(_autograd_grad)

__all__ = [
    "debug_unwrap",
    "functional_call",
    "functionalize",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "rearrange",
    "replace_all_batch_norm_modules_",
    "stack_module_state",
    "vjp",
    "vmap",
]
