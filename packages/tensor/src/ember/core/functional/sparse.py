"""``torch.nn.functional``'s embedding (``padding_idx`` checks and ``max_norm``'s in-place renorm)
and one_hot."""

from __future__ import annotations

from ember.core.aten.nn import embedding as E

__all__ = ["embedding", "one_hot"]


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """The rows of ``weight`` that ``input`` names; ``max_norm`` first rescales those rows in place."""
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.size(0), "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.size(0), "Padding_idx must be within num_embeddings"
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        E.embedding_renorm_(weight, input.contiguous(), max_norm, norm_type)
    return E.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def one_hot(tensor, num_classes=-1):
    """int64 one-hot rows for the class indices in ``tensor``; ``num_classes=-1`` infers max + 1."""
    if isinstance(num_classes, bool) or not isinstance(num_classes, int):
        raise TypeError(f"one_hot(): argument 'num_classes' must be int, not {type(num_classes).__name__}")
    return E.one_hot_op(tensor, num_classes)
