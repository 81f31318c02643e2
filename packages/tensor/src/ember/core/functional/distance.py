"""``torch.nn.functional.cosine_similarity``."""

from __future__ import annotations

from ember.core.aten.nn.similarity import cosine_similarity

__all__ = ["cosine_similarity"]
