"""Matrix decompositions: the batch joins the leading batch dims the op already handles.

``_linalg_svd`` factors every matrix of ``(*, m, n)`` on its own, so a batch at dim 0 is one more
leading dim. Without ``compute_uv`` its U and Vh are empty 1-dim tensors, which carry no batch: each
lane gets an empty one.
"""

from __future__ import annotations

from ember.func._vmap.common import aten
from ember.func._vmap.table import register


def _linalg_svd(call):
    if call.args[0].ndim - 1 < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    U, S, Vh = call.op(*call.args, **call.kwargs)
    if U.ndim == 1:
        U, Vh = U.new_empty((call.size, 0)), Vh.new_empty((call.size, 0))
    return U, S, Vh


register(_linalg_svd, aten._linalg_svd.default)
