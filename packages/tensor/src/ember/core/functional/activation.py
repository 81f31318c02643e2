"""``torch.nn.functional``'s softmax and log_softmax, with the deprecated implicit ``dim``: when
``dim`` is None it is 0 for 0-, 1- and 3-dimensional inputs and 1 otherwise, with a warning."""

from __future__ import annotations

import warnings

from ember.core.aten.nn.softmax import softmax_call

__all__ = ["log_softmax", "softmax"]


def _get_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``; ``dtype`` casts the input first."""
    if dim is None:
        dim = _get_softmax_dim("softmax", input.ndim, _stacklevel)
    return softmax_call(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``x - logsumexp(x)`` along ``dim``; ``dtype`` casts the input first."""
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.ndim, _stacklevel)
    return softmax_call(input, dim, dtype, log=True)
