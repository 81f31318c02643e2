"""``ember.autograd``: reverse-mode differentiation recorded at the dispatcher's autograd level.

Importing this package installs the autograd handler in the dispatcher (``recording.record``),
gives ``Tensor`` its autograd methods, and loads the derivative table (``derivatives/``).
"""

from __future__ import annotations

from ember.autograd import anomaly_mode, forward_ad, functional, graph, profiler, profiler_legacy, profiler_util
from ember.autograd import derivatives as _derivatives  # noqa: F401  (fills the table)
from ember.autograd import tensor_methods as _tensor_methods
from ember.autograd._function_forward_ad import install as _install_function_forward_ad
from ember.autograd.anomaly import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from ember.autograd.describe import describe as _describe
from ember.autograd.function import Function, once_differentiable
from ember.autograd.functional_api import backward, grad
from ember.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from ember.autograd.graph import Node, SavedTensor
from ember.autograd.graph_task import is_checkpoint_valid as _is_checkpoint_valid  # noqa: F401  (PyTorch's name)
from ember.autograd.multithreading import is_multithreading_enabled, set_multithreading_enabled
from ember.autograd.profiler import (
    DeviceType,
    ProfilerActivity,
    ProfilerConfig,
    ProfilerEvent,
    ProfilerState,
    kineto_available,
)
from ember.autograd.recording import record as _record
from ember.autograd.variable import Variable
from ember.core import dispatch as _dispatch
from ember.library.describe import register_describer as _register_describer
from ember.overrides import handle_torch_function, has_torch_function, is_tensor_like  # noqa: F401  (PyTorch re-exports them here)

_tensor_methods.attach()
_dispatch.install_level("autograd", _record)
_register_describer(_describe)
_install_function_forward_ad()  # custom Functions' jvp, where forward AD is installed


def variable(*args, **kwargs):
    """Removed in PyTorch: raises, pointing to ``ember.tensor``."""
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")


__all__ = [
    "DeviceType",
    "Function",
    "GradcheckError",
    "Node",
    "ProfilerActivity",
    "ProfilerConfig",
    "ProfilerEvent",
    "ProfilerState",
    "SavedTensor",
    "Variable",
    "anomaly_mode",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "forward_ad",
    "functional",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "graph",
    "inference_mode",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "is_multithreading_enabled",
    "kineto_available",
    "no_grad",
    "once_differentiable",
    "profiler",
    "profiler_legacy",
    "profiler_util",
    "set_detect_anomaly",
    "set_grad_enabled",
    "set_multithreading_enabled",
    "variable",
]
