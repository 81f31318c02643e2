"""``ember.nn.attention``: attention front ends, as ``torch.nn.attention``.

``SDPBackend`` names the backends of ``F.scaled_dot_product_attention``, ``sdpa_kernel`` limits (and optionally orders) the ones a block of
code may use, and ``explain`` says which one a call would run and why each one before it was passed
over. The flags and rules themselves live in ``ember.sdpa.backends``. FlexAttention is the
submodule ``ember.nn.attention.flex_attention``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ember.sdpa import backends as _backends
from ember.sdpa.backends import SDPBackend

__all__ = ["WARN_FOR_UNFUSED_KERNELS", "SDPBackend", "explain", "sdpa_kernel"]

# PyTorch's switch for warnings about unfused kernels; Ember says why through ``explain`` and
# ``EMBER_LOGS=sdpa`` instead, so this only exists for code that sets it.
WARN_FOR_UNFUSED_KERNELS = False

_SETTABLE = (
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.MATH,
    SDPBackend.CUDNN_ATTENTION,
    SDPBackend.OVERRIDEABLE,
)


def _cur_sdpa_kernel_backends(with_priority: bool = False) -> list[SDPBackend]:
    """The enabled backends, in priority order when ``with_priority``."""
    order = _backends.priority_order() if with_priority else list(_SETTABLE)
    extra = [b for b in _SETTABLE if b not in order]
    return [b for b in (*order, *extra) if _backends.is_enabled(b)]


@contextlib.contextmanager
def sdpa_kernel(backends: list[SDPBackend] | SDPBackend, set_priority: bool = False) -> Iterator[dict]:
    """Run the block (or the decorated function) with only ``backends`` enabled.

    With ``set_priority=True`` the list order is also the order in which they are tried. The flags
    and the order in force before are restored on exit, however the block exits.
    """
    if not isinstance(backends, list | SDPBackend):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    for b in backends:
        if not isinstance(b, SDPBackend) or b is SDPBackend.ERROR:
            raise AssertionError(f"sdpa_kernel: {b!r} is not a backend that can be enabled")
    saved = _backends.state()
    try:
        for b in _SETTABLE:
            _backends.set_enabled(b, b in backends)
        if set_priority:
            _backends.set_priority_order(backends)
        yield {}
    finally:
        _backends.restore(saved)


def explain(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale=None,
    enable_gqa: bool = False,
) -> tuple[SDPBackend, dict[SDPBackend, list[str]]]:
    """The backend ``F.scaled_dot_product_attention`` would run on these arguments, and why not the others.

    Returns ``(backend, rejected)``: ``backend`` is ``SDPBackend.ERROR`` when none can run; ``rejected``
    maps each backend tried before it, in priority order, to its reasons (reasons read like
    "attn_mask has dtype int64; it must be bool or the query's float32").
    """
    return _backends.explain(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


from ember.nn.attention import flex_attention as flex_attention  # noqa: E402  (after the names it may use)
