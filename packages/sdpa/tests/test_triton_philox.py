"""Triton's ``tl.rand``/``tl.randn`` equal ``ember.core.philox.rand``/``randn`` for the same (seed, offset).

The attention kernels draw their dropout masks with ``tl.rand`` and the reference with ``philox.rand``;
this is the link between them. Runs where the Triton kernels run (CUDA, or the interpreter).
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

from ember.core import philox

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
torch = pytest.importorskip("torch", reason="torch tensors carry the data; it is installed in the 3.11 test session")
if importlib.util.find_spec("triton") is None or not (INTERPRET or torch.cuda.is_available()):
    pytest.skip("needs Triton and either TRITON_INTERPRET=1 or a CUDA device", allow_module_level=True)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DEVICE = "cpu" if INTERPRET else "cuda"


@triton.jit
def _draw(Offsets, Uniform, Normal, seed, n, BLOCK: tl.constexpr):
    index = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = index < n
    offsets = tl.load(Offsets + index, mask=inside, other=0)
    tl.store(Uniform + index, tl.rand(seed, offsets), mask=inside)
    tl.store(Normal + index, tl.randn(seed, offsets), mask=inside)


def _triton_draws(seed: int, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    device_offsets = torch.tensor(offsets, device=DEVICE)
    uniform = torch.full(offsets.shape, float("nan"), device=DEVICE)
    normal = torch.full(offsets.shape, float("nan"), device=DEVICE)
    _draw[(triton.cdiv(offsets.size, 64),)](device_offsets, uniform, normal, seed, offsets.size, BLOCK=64)
    return uniform.cpu().numpy(), normal.cpu().numpy()


def _offsets(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(11)
    if dtype == "int32":
        return np.concatenate([np.arange(100), rng.integers(0, 2**31, 100)]).astype(np.int32)
    spread = rng.integers(0, 2**62, 100, dtype=np.int64)
    return np.concatenate([np.arange(50), 2**32 - 25 + np.arange(50), spread]).astype(np.int64)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("seed", [0, 12345, 2**40 + 7, 2**63 + 5])
def test_rand_and_randn_match_philox_bit_for_bit(seed, dtype):
    offsets = _offsets(dtype)
    uniform, normal = _triton_draws(seed, offsets)
    want_uniform = philox.rand(seed, offsets.astype(np.int64))
    want_normal = philox.randn(seed, offsets.astype(np.int64))
    np.testing.assert_array_equal(uniform.view(np.uint32), want_uniform.view(np.uint32))
    if INTERPRET:
        np.testing.assert_array_equal(normal.view(np.uint32), want_normal.view(np.uint32))
    else:
        # The GPU's log/cos/sqrt (libdevice) may round the last bit differently from NumPy's.
        np.testing.assert_allclose(normal, want_normal, rtol=4e-7, atol=4e-7)
