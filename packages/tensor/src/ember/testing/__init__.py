"""``ember.testing``: ``assert_close`` and ``make_tensor``, as ``torch.testing`` offers them."""

from ember.testing._comparison import assert_close
from ember.testing._creation import make_tensor
from ember.testing._legacy import assert_allclose

__all__ = ["assert_allclose", "assert_close", "make_tensor"]
