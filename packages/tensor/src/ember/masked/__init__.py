"""``ember.masked``: reductions and normalizations that skip masked-out elements, as ``torch.masked``.

Strided tensors only; ``MaskedTensor``, ``masked_tensor``, ``as_masked_tensor`` and
``is_masked_tensor`` are not built yet, and sparse inputs raise ``NotImplementedError``.
"""

from ember.masked._ops import (
    amax,
    amin,
    argmax,
    argmin,
    cumprod,
    cumsum,
    log_softmax,
    logaddexp,
    logsumexp,
    mean,
    median,
    norm,
    normalize,
    prod,
    softmax,
    softmin,
    std,
    sum,
    var,
)

__all__ = [
    "amax",
    "amin",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "log_softmax",
    "logaddexp",
    "logsumexp",
    "mean",
    "median",
    "norm",
    "normalize",
    "prod",
    "softmax",
    "softmin",
    "std",
    "sum",
    "var",
]
