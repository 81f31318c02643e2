"""``F.dropout``: ``torch.nn.functional.dropout``'s signature over the ``dropout``/``dropout_`` ops."""

from __future__ import annotations

from ember.core.aten.random.dropout import dropout_inplace, dropout_op

__all__ = ["dropout"]


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero each element with probability ``p`` while ``training`` and scale the others by ``1 / (1 - p)``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    op = dropout_inplace if inplace else dropout_op
    return op(input, float(p), bool(training))
