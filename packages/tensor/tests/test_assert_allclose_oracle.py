"""``ember.testing.assert_allclose`` passes and fails where PyTorch's does."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

CASES = [
    ([1.0, 2.0], [1.0, 2.00001], {}),
    ([1.0, 2.0], [1.0, 2.001], {}),
    ([1.0, 2.0], [1.0, 2.001], {"rtol": 1e-2, "atol": 0.0}),
    ([1, 2], [1, 2], {}),
    ([1, 2], [1, 3], {}),
    ([float("nan")], [float("nan")], {}),
    ([float("nan")], [float("nan")], {"equal_nan": False}),
    ([1.0, 2.0], [1, 2], {}),
]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int64"])
@pytest.mark.parametrize(("actual", "expected", "kwargs"), CASES)
def test_passes_and_fails_with_pytorch(actual, expected, kwargs, dtype):
    if dtype == "int64" and any(isinstance(v, float) and not v.is_integer() for v in actual + expected):
        pytest.skip("non-integral values")
    verdicts = []
    for lib in (ember, torch):
        try:
            with pytest.warns(FutureWarning):
                lib.testing.assert_allclose(lib.tensor(actual, dtype=getattr(lib, dtype)), expected, **kwargs)
            verdicts.append(True)
        except AssertionError:
            verdicts.append(False)
    assert verdicts[0] == verdicts[1]
