"""``assert_allclose``: the comparison PyTorch had before ``assert_close``, kept for old test suites.

It differs from ``assert_close`` in its defaults: NaNs compare equal, dtypes and strides are not
checked, non-tensors become tensors of ``actual``'s dtype, and the tolerances come from a coarser
per-dtype table (the larger of the two inputs' entries; 0 for dtypes not in it, so integers must be
equal).
"""

from __future__ import annotations

import warnings
from typing import Any

from ember.core import dtypes as D
from ember.core.creation import tensor
from ember.core.tensor import Tensor
from ember.testing._comparison import assert_close

__all__ = ["assert_allclose"]

_PRECISIONS = {D.float16: (1e-3, 1e-3), D.float32: (1e-4, 1e-5), D.float64: (1e-5, 1e-8)}


def assert_allclose(
    actual: Any,
    expected: Any,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = True,
    msg: str = "",
) -> None:
    warnings.warn(
        "ember.testing.assert_allclose() is deprecated, as torch.testing.assert_allclose() is since 1.12; "
        "use ember.testing.assert_close() instead.",
        FutureWarning,
        stacklevel=2,
    )
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        pairs = [_PRECISIONS.get(t.dtype, (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(
        actual,
        expected,
        rtol=rtol,
        atol=atol,
        equal_nan=equal_nan,
        check_device=True,
        check_dtype=False,
        check_stride=False,
        msg=msg or None,
    )
