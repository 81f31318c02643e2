"""Intra-op threads (``ember.core.threads``): blocks cover the range once, errors come back, the
thread count is settable as PyTorch's is, and a forked child gets a pool of its own."""

from __future__ import annotations

import multiprocessing
import os

import numpy as np
import pytest

import ember
from ember.core import threads


@pytest.fixture
def two_threads():
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(before)


@pytest.mark.parametrize("size", [0, 1, threads.GRAIN - 1, threads.GRAIN, 3 * threads.GRAIN + 17])
def test_blocks_cover_the_range_once(size, two_threads):
    seen = np.zeros(size, np.int64)

    def work(start, stop):
        seen[start:stop] += 1

    threads.parallel_blocks(size, work)
    assert (seen == 1).all()


def test_an_error_in_a_block_is_raised_once_the_other_threads_are_done(two_threads):
    size = 4 * threads.GRAIN
    done = np.zeros(size, bool)

    def work(start, stop):
        done[start:stop] = True
        if start == 0:
            raise ValueError("block 0")

    with pytest.raises(ValueError, match="block 0"):
        threads.parallel_blocks(size, work)
    assert done[size // 2 :].all()  # the worker's share, finished before the error came back


def test_set_num_threads_checks_its_argument():
    with pytest.raises(RuntimeError, match="positive"):
        ember.set_num_threads(0)
    with pytest.raises(TypeError):
        ember.set_num_threads(1.5)


def test_one_thread_gives_the_same_bits(two_threads):
    x = ember.randn(3 * threads.GRAIN)
    g = ember.randn(3 * threads.GRAIN)
    many = (ember.nn.functional.gelu(x), ember.ops.aten.gelu_backward(g, x))
    ember.set_num_threads(1)
    one = (ember.nn.functional.gelu(x), ember.ops.aten.gelu_backward(g, x))
    for a, b in zip(many, one, strict=True):
        assert np.array_equal(a.numpy(), b.numpy())


def _gelu_in_child(queue) -> None:
    x = ember.ones(3 * threads.GRAIN)
    queue.put(float(ember.nn.functional.gelu(x).sum()))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_runs_parallel_kernels(two_threads):
    ember.nn.functional.gelu(ember.ones(3 * threads.GRAIN))  # the parent's pool exists before the fork
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_gelu_in_child, args=(queue,))
    child.start()
    value = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert value == pytest.approx(3 * threads.GRAIN * 0.8413447, rel=1e-4)


def test_set_num_threads_sets_numpys_openblas_threads():
    blas = threads.openblas_threads()
    if blas is None:
        pytest.skip("NumPy does not use OpenBLAS here (or not on Linux)")
    before = threads.get_num_threads()
    try:
        threads.set_num_threads(1)
        assert blas[1]() == 1
    finally:
        threads.set_num_threads(before)
