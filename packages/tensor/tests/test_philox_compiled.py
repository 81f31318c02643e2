"""The compiled Philox kernel against the NumPy rounds, bit for bit, and the switch that forces NumPy."""

import os
import subprocess
import sys

import numpy as np
import pytest

from ember.core import philox, threads

pytestmark = pytest.mark.skipif(philox._compiled is None, reason="ember.core._philox was not built")

SEEDS = [0, 1, 0xFFFFFFFF, 1 << 32, (1 << 32) + 12345, 0xDEADBEEFCAFEF00D, (1 << 64) - 1, -1]


def _numpy(seed, offsets):
    return philox._randint4x_numpy(seed, np.asarray(offsets).astype(np.uint64))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("start", [0, 7, (1 << 32) - 5, (1 << 40) + 3, (1 << 64) - 9])
@pytest.mark.parametrize("n", [0, 1, 3, 17, 1001])
def test_compiled_equals_numpy(seed, start, n):
    offsets = (np.uint64(start) + np.arange(n, dtype=np.uint64)).astype(np.uint64)
    for a, b in zip(philox.randint4x(seed, offsets), _numpy(seed, offsets), strict=True):
        assert a.dtype == np.uint32 and a.shape == (n,)
        np.testing.assert_array_equal(a, b)


@pytest.fixture(params=[1, 3], ids=["1-thread", "3-threads"])
def thread_count(request):
    before = threads.get_num_threads()
    threads.set_num_threads(request.param)
    yield request.param
    threads.set_num_threads(before)


def test_compiled_equals_numpy_large_and_parallel(thread_count):
    # Large enough to be split over Ember's threads; int64 offsets crossing 2**32, 2-D, non-contiguous.
    offsets = (np.int64((1 << 32) - 100_000) + np.arange(300_000, dtype=np.int64)).reshape(600, 500)[:, ::2]
    seed = 0x123456789A
    got, want = philox.randint4x(seed, offsets), _numpy(seed, offsets)
    for a, b in zip(got, want, strict=True):
        assert a.shape == offsets.shape
        np.testing.assert_array_equal(a, b)


def test_scattered_offsets():
    rng = np.random.default_rng(0)
    offsets = rng.integers(0, 1 << 63, size=4097, dtype=np.int64)
    for a, b in zip(philox.randint4x(77, offsets), _numpy(77, offsets), strict=True):
        np.testing.assert_array_equal(a, b)


def test_environment_variable_forces_numpy():
    code = "from ember.core import philox; print(philox._compiled is None)"
    env = dict(os.environ, EMBER_PHILOX_NUMPY="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("start", [0, 7, (1 << 32) - 5, (1 << 64) - 9])
@pytest.mark.parametrize("n", [0, 1, 3, 17, 1001, 200_003])
def test_fused_rand_equals_numpy(seed, start, n, thread_count):
    offsets = np.uint64(start) + np.arange(n, dtype=np.uint64)
    want = philox.uint_to_uniform(_numpy(seed, offsets)[0])
    got = philox.rand_range(seed, start, n)
    assert got.dtype == np.float32 and got.shape == (n,)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
