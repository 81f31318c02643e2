"""``ember.backends.cuda``: ``is_built()``, the cuBLAS flags under ``matmul`` and the SDPA backend flags.

``matmul.allow_tf32`` reads and writes the float32 matmul precision of ``ember.backends.settings``
(True means "high"), as PyTorch links the two; the reduced-precision-reduction flags are stored
only. Unknown attribute names raise ``AttributeError`` on reading and on writing, as in PyTorch, so
that a misspelt flag does not pass silently.

The ``enable_*_sdp``/``*_sdp_enabled`` pairs read and write the flags of ``ember.sdpa.backends``, the
ones ``ember.nn.attention.sdpa_kernel`` sets and ``F.scaled_dot_product_attention`` obeys on every
device (as PyTorch's do, despite the module's name).
"""

from __future__ import annotations

import contextlib
import warnings

from ember.backends import settings
from ember.sdpa import backends as _sdpa
from ember.sdpa.backends import SDPBackend

__all__ = [
    "cudnn_sdp_enabled",
    "enable_cudnn_sdp",
    "enable_flash_sdp",
    "enable_math_sdp",
    "enable_mem_efficient_sdp",
    "flash_sdp_enabled",
    "is_built",
    "is_flash_attention_available",
    "math_sdp_enabled",
    "matmul",
    "mem_efficient_sdp_enabled",
    "sdp_kernel",
]


def is_built() -> bool:
    """Whether this Ember can run CUDA kernels; False without the ember-cuda package."""
    import ember

    return bool(ember.cuda.is_available())


class _Matmul:
    _FLAGS = ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict.fromkeys(self._FLAGS, True))

    def __getattr__(self, name: str):
        if name == "allow_tf32":
            return settings.get_float32_matmul_precision() != "highest"
        if name in self._FLAGS:
            return self._values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value) -> None:
        if name == "allow_tf32":
            if not isinstance(value, bool):
                raise RuntimeError(f"set_allow_tf32_cublas expects a bool, but got {type(value).__name__}")
            settings.set_float32_matmul_precision("high" if value else "highest")
        elif name in self._FLAGS:
            # PyTorch also takes a (bool, bool) pair here, whose second value has no CPU meaning.
            if not isinstance(value, bool):
                raise TypeError(f"{name} expects a bool or a tuple/list of bools, but got {type(value)}")
            self._values[name] = value
        else:
            raise AttributeError(f"Unknown attribute {name}")


matmul = _Matmul()


# -- scaled_dot_product_attention backends --------------------------------------------------------


def flash_sdp_enabled() -> bool:
    """Whether ``F.scaled_dot_product_attention`` may run the flash kernel."""
    return _sdpa.is_enabled(SDPBackend.FLASH_ATTENTION)


def enable_flash_sdp(enabled: bool) -> None:
    _sdpa.set_enabled(SDPBackend.FLASH_ATTENTION, enabled)


def mem_efficient_sdp_enabled() -> bool:
    """Whether ``F.scaled_dot_product_attention`` may run the memory-efficient (masked, dropout) kernel."""
    return _sdpa.is_enabled(SDPBackend.EFFICIENT_ATTENTION)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdpa.set_enabled(SDPBackend.EFFICIENT_ATTENTION, enabled)


def math_sdp_enabled() -> bool:
    """Whether ``F.scaled_dot_product_attention`` may run the composite of core ops."""
    return _sdpa.is_enabled(SDPBackend.MATH)


def enable_math_sdp(enabled: bool) -> None:
    _sdpa.set_enabled(SDPBackend.MATH, enabled)


def cudnn_sdp_enabled() -> bool:
    """The cuDNN flag; Ember has no cuDNN attention, so the backend never runs whatever its value."""
    return _sdpa.is_enabled(SDPBackend.CUDNN_ATTENTION)


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdpa.set_enabled(SDPBackend.CUDNN_ATTENTION, enabled)


def is_flash_attention_available() -> bool:
    """Whether a flash kernel is there: the CPU one always is."""
    return True


@contextlib.contextmanager
def sdp_kernel(
    enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True, enable_cudnn: bool = True
):
    """The deprecated form of ``ember.nn.attention.sdpa_kernel``: enable the backends whose flag is True."""
    warnings.warn(
        "`ember.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will be removed. "
        "Please see `ember.nn.attention.sdpa_kernel()` for the new context manager, with updated signature.",
        FutureWarning,
        stacklevel=3,
    )
    from ember.nn.attention import sdpa_kernel

    chosen = [
        b
        for b, on in (
            (SDPBackend.CUDNN_ATTENTION, enable_cudnn),
            (SDPBackend.FLASH_ATTENTION, enable_flash),
            (SDPBackend.EFFICIENT_ATTENTION, enable_mem_efficient),
            (SDPBackend.MATH, enable_math),
        )
        if on
    ]
    with sdpa_kernel(chosen):
        yield {}
