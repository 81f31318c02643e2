"""Ember: the PyTorch 2 stack in readable Python packages. ``import ember as torch``.

Only this meta-package ships ``ember/__init__.py``; the other packages ship their own
sub-packages (``ember.logs``, ``ember.core``, ...). Extending ``__path__`` lets Python find those
wherever they are installed, editable installs included.

The names below are PyTorch's top level: the dtypes, ``Tensor``, ``tensor``, ``device`` and every
function the op families offer (``ember.add``, ``ember.zeros``, ...).
"""

import os as _os
import sys as _sys
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

# NumPy's OpenBLAS keeps its GEMM threads spinning for about 2**28 cycles (a tenth of a second) after
# each product, on the cores where the compiled kernels' pool and the eager kernels' threads run
# next: a compiled GELU MLP's training step ran 10-15% slower for it. 2**20 cycles (a few tenths of a
# millisecond) still catches the next GEMM of a run of them; with 2**22 a CNN's convolution backward,
# 0.8 ms after the classifier's small GEMMs, shared a core with a spinning thread (its compiled
# training step 8.0-11.8 ms, against 7.0-7.4 ms with 2**20). OpenBLAS reads the variable when NumPy
# loads it, so it applies only when ``import ember`` comes first; a value already set is kept.
if "numpy" not in _sys.modules:
    _os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")

import math as _math

from ember import (
    autograd,  # noqa: F401  (installs the autograd level of the dispatcher)
    fft,  # noqa: F401  (torch.fft's place)
    linalg,  # noqa: F401  (torch.linalg's place)
    logs,  # noqa: F401  (reads EMBER_LOGS)
    sdpa,  # noqa: F401  (registers the attention ops, aten::_scaled_dot_product_flash_attention_for_cpu, ...)
    sparse,  # noqa: F401  (torch.sparse's place)
    special,  # noqa: F401  (torch.special's place)
)
from ember._cuda_fallback import install_finder as _install_cuda_fallback
from ember.autograd import (  # noqa: F401
    _providers,
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.autograd.anomaly import (  # noqa: F401
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
)
from ember.backends.settings import (  # noqa: F401
    are_deterministic_algorithms_enabled,
    get_deterministic_debug_mode,
    get_float32_matmul_precision,
    is_deterministic_algorithms_warn_only_enabled,
    set_deterministic_debug_mode,
    set_float32_matmul_precision,
    use_deterministic_algorithms,
)
from ember.core import *  # noqa: F403
from ember.core import functions as _functions
from ember.core.devices import autoload_backends as _autoload_backends
from ember.core.dtypes import ALIASES as _ALIASES
from ember.core.dtypes import ALL as _ALL_DTYPES
from ember.core.dtypes import EXTRA as _EXTRA_DTYPES
from ember.core.function_protocol import DisableTorchFunction, DisableTorchFunctionSubclass  # noqa: F401

globals().update(_functions)
globals().update({d.name: d for d in _ALL_DTYPES + _EXTRA_DTYPES})
globals().update(_ALIASES)
_autoload_backends()
_install_cuda_fallback()  # `import ember.cuda` works without the ember-cuda package

# Imported on first use, as their start-up cost is their own: ``ember.distributed``, ``ember.func``, ``ember.fx``, ``ember.library``,
# ``ember.nn``, ``ember.optim``, ``ember.utils``, ``ember.accelerator``, ``ember.hub``, ``ember.onnx``, ``ember.testing``; ``ember.cuda`` is the ember-cuda package or, without it,
# ``ember._cuda_fallback``.
_LAZY_SUBPACKAGES = (
    "_C",
    "_dynamo",
    "_inductor",
    "accelerator",
    "amp",
    "compiler",
    "cpu",
    "cuda",
    "distributed",
    "distributions",
    "dynamo",
    "func",
    "functional",
    "fx",
    "hub",
    "inductor",
    "library",
    "masked",
    "multiprocessing",
    "nn",
    "onnx",
    "optim",
    "overrides",
    "profiler",
    "quasirandom",
    "serialization",
    "signal",
    "storage",
    "testing",
    "utils",
    "version",
)
# Top-level names that live in a lazily imported package: name -> module.
_LAZY_ATTRIBUTES = {
    name: "ember.amp.autocast_mode"
    for name in (
        "autocast",
        "autocast_decrement_nesting",
        "autocast_increment_nesting",
        "clear_autocast_cache",
        "get_autocast_dtype",
        "is_autocast_cache_enabled",
        "is_autocast_enabled",
        "set_autocast_cache_enabled",
        "set_autocast_dtype",
        "set_autocast_enabled",
    )
}
# PyTorch's runtime housekeeping, symbolic-number functions, error types, streams and events, futures,
# op tags and schemas, and control-flow functions.
_LAZY_ATTRIBUTES.update(
    dict.fromkeys(
        (
            "classproperty",
            "get_autocast_cpu_dtype",
            "get_autocast_gpu_dtype",
            "get_file_path",
            "has_lapack",
            "has_openmp",
            "has_spectral",
            "init_num_threads",
            "is_autocast_cpu_enabled",
            "is_warn_always_enabled",
            "prepare_multiprocessing_environment",
            "set_autocast_cpu_dtype",
            "set_autocast_cpu_enabled",
            "set_autocast_gpu_dtype",
            "set_flush_denormal",
            "set_warn_always",
            "thread_safe_generator",
        ),
        "ember._housekeeping",
    )
)
_LAZY_ATTRIBUTES.update(
    dict.fromkeys(
        ("sym_constrain_range", "sym_constrain_range_for_size", "sym_fresh_size", "sym_sqrt", "sym_sum"),
        "ember._sym_functions",
    )
)
_LAZY_ATTRIBUTES.update(dict.fromkeys(("AcceleratorError", "FatalError", "OutOfMemoryError"), "ember._errors"))
_LAZY_ATTRIBUTES.update(dict.fromkeys(("Event", "Stream"), "ember._streams"))
_LAZY_ATTRIBUTES["Future"] = "ember.futures"
_LAZY_ATTRIBUTES.update(dict.fromkeys(("Argument", "FunctionSchema", "Tag", "parse_schema"), "ember._op_schema"))
_LAZY_ATTRIBUTES.update(dict.fromkeys(("cond", "while_loop"), "ember._control_flow"))
_LAZY_SUBPACKAGES += ("futures", "torch_version", "types")
_LAZY_ATTRIBUTES["vmap"] = "ember.func"
_LAZY_ATTRIBUTES["poisson"] = _LAZY_ATTRIBUTES["binomial"] = "ember._sampling"
_LAZY_ATTRIBUTES["GradScaler"] = "ember.amp"
# torch.<name> forms of nn.functional's functions (ember._nn_functions.NAMES; listed here so that
# `import ember` does not import ember.nn).
_LAZY_ATTRIBUTES.update(
    dict.fromkeys(
        (
            "adaptive_avg_pool1d",
            "adaptive_max_pool1d",
            "alpha_dropout",
            "alpha_dropout_",
            "avg_pool1d",
            "bilinear",
            "celu",
            "celu_",
            "channel_shuffle",
            "conv3d",
            "conv_transpose1d",
            "conv_transpose3d",
            "cosine_embedding_loss",
            "ctc_loss",
            "gru_cell",
            "hinge_embedding_loss",
            "lstm_cell",
            "margin_ranking_loss",
            "poisson_nll_loss",
            "rnn_relu_cell",
            "rnn_tanh_cell",
            "triplet_margin_loss",
            "feature_alpha_dropout",
            "feature_alpha_dropout_",
            "hardshrink",
            "max_pool1d",
            "max_pool1d_with_indices",
            "max_pool3d",
            "native_channel_shuffle",
            "pairwise_distance",
            "pdist",
            "pixel_shuffle",
            "pixel_unshuffle",
            "prelu",
            "rrelu",
            "rrelu_",
            "selu",
            "selu_",
            "threshold",
            "threshold_",
        ),
        "ember._nn_functions",
    )
)
# ATen's top-level neural-network functions: batch-norm pieces, the generic convolution, grid
# sampling, embedding bags and whole-sequence RNNs (ember._nn_batch_norm, _nn_aten_forms, _nn_recurrent).
_LAZY_ATTRIBUTES.update(
    {
        **dict.fromkeys(
            (
                "batch_norm_backward_elemt",
                "batch_norm_backward_reduce",
                "batch_norm_elemt",
                "batch_norm_gather_stats",
                "batch_norm_gather_stats_with_counts",
                "batch_norm_stats",
                "batch_norm_update_stats",
                "instance_norm",
                "native_batch_norm",
                "native_norm",
                "norm_except_dim",
            ),
            "ember._nn_batch_norm",
        ),
        **dict.fromkeys(
            (
                "affine_grid_generator",
                "conv_tbc",
                "convolution",
                "embedding_bag",
                "feature_dropout",
                "feature_dropout_",
                "grid_sampler",
                "grid_sampler_2d",
                "grid_sampler_3d",
            ),
            "ember._nn_aten_forms",
        ),
        **dict.fromkeys(("gru", "lstm", "rnn_relu", "rnn_tanh"), "ember._nn_recurrent"),
    }
)

# PyTorch's constants.
pi, e, inf, nan = _math.pi, _math.e, _math.inf, _math.nan
newaxis = None


def _functionalize_on_first_use(func, *, remove: str = "mutations"):
    # ember.func.functionalize is the fx package's; importing ember.fx registers it in place of this.
    from ember._subclasses.functionalize import functionalize

    return functionalize(func, remove=remove)


if _providers.functionalize_implementation() is None:
    _providers.register_functionalize(_functionalize_on_first_use)


def compile(
    model=None,
    *,
    fullgraph=False,
    dynamic=None,
    backend="inductor",
    mode=None,
    options=None,
    disable=False,
):  # no annotations: `bool` here is ember.bool, the dtype
    """Compile a function or a Module with graph capture (``ember.dynamo``, imported on first use).

    Usable as ``ember.compile(fn)``, ``@ember.compile`` and ``@ember.compile(backend="eager")``; see
    ``ember.dynamo.eval_frame.compile``.
    """
    from ember.dynamo.eval_frame import compile as _compile

    return _compile(
        model,
        fullgraph=fullgraph,
        dynamic=dynamic,
        backend=backend,
        mode=mode,
        options=options,
        disable=disable,
    )


def get_device_module(device=None):
    """The module of a device type (``ember.cpu``, ``ember.cuda``): of ``device`` (a device, a string
    such as ``"cuda:0"``, or None for the current accelerator, else the CPU)."""
    import importlib

    from ember.core.devices import to_device

    if device is None:
        from ember import accelerator

        current = accelerator.current_accelerator()
        kind = current.type if current is not None else "cpu"
    else:
        kind = to_device(device).type
    if kind not in ("cpu", "cuda"):
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'ember.{kind}'.")
    return importlib.import_module(f"ember.{kind}")


def __getattr__(name: str):
    if name in _LAZY_SUBPACKAGES:
        import importlib

        module = importlib.import_module(f"ember.{name}")
        if name == "utils":
            # A namespace shared by several packages, so it has no __init__ to import its parts:
            # import them here, so that `ember.utils.data.DataLoader` works after `import ember`.
            import pkgutil

            for part in pkgutil.iter_modules(module.__path__):
                importlib.import_module(f"ember.utils.{part.name}")
        return module
    if name in _LAZY_ATTRIBUTES:
        import importlib

        return getattr(importlib.import_module(_LAZY_ATTRIBUTES[name]), name)
    raise AttributeError(f"module 'ember' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_SUBPACKAGES) | set(_LAZY_ATTRIBUTES))


from ember.torch_version import __version__ as __version__  # noqa: E402  (a TorchVersion: compares as a version)
