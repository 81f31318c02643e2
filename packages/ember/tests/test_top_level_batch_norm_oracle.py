"""The top-level batch-norm pieces and normalization functions against PyTorch's.

PyTorch runs the synchronized-batch-norm steps (``batch_norm_stats``, ``..._gather_stats``,
``..._backward_reduce``, ``..._backward_elemt``, ``batch_norm_elemt``) only on CUDA, and its CPU build
is the oracle here. So those are held to what the steps together must give on one machine: the
statistics of a batch split into groups and gathered equal PyTorch's batch norm statistics of the whole
batch, and the backward steps give PyTorch's batch-norm gradients.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

DTYPES = [("float32", 1e-5), ("float64", 1e-12)]


def _pair(a: np.ndarray, grad: bool = False):
    return ember.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _close(ours, theirs, tol: float) -> None:
    assert ours.shape == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tol, atol=tol)


def _data(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 2)])
def test_batch_norm_stats_are_the_batch_norm_statistics(dtype, tol, shape):
    rng = np.random.default_rng(0)
    x, tx = _pair(_data(rng, shape, dtype), grad=True)
    mean, invstd = ember.batch_norm_stats(x, 1e-5)
    dims = (0, *range(2, len(shape)))
    tvar, tmean = torch.var_mean(tx, dims, correction=0)
    _close(mean, tmean, tol)
    _close(invstd, (tvar + 1e-5).rsqrt(), tol)
    # The same statistics PyTorch's batch norm saves for backward.
    _, smean, sinv = torch.native_batch_norm(tx, None, None, None, None, True, 0.1, 1e-5)
    _close(mean, smean, tol)
    _close(invstd, sinv, tol)
    (mean.sum() + invstd.sum()).backward()
    (tmean.sum() + (tvar + 1e-5).rsqrt().sum()).backward()
    _close(x.grad, tx.grad, 10 * tol)


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
def test_batch_norm_elemt_is_batch_norm_with_given_statistics(dtype, tol):
    rng = np.random.default_rng(1)
    x, tx = _pair(_data(rng, (4, 3, 5), dtype), grad=True)
    w, tw = _pair(_data(rng, (3,), dtype), grad=True)
    b, tb = _pair(_data(rng, (3,), dtype), grad=True)
    mean, tmean = _pair(_data(rng, (3,), dtype))
    var = np.abs(_data(rng, (3,), dtype)) + 0.5
    rv, trv = _pair(var)
    out = ember.batch_norm_elemt(x, w, b, mean, (rv + 1e-5).rsqrt(), 1e-5)
    expected = torch.batch_norm(tx, tw, tb, tmean, trv, False, 0.1, 1e-5, False)
    _close(out, expected, tol)
    out.sum().backward()
    expected.sum().backward()
    for ours, theirs in ((x, tx), (w, tw), (b, tb)):
        _close(ours.grad, theirs.grad, 10 * tol)
    # Without weight and bias: the normalized input.
    plain = ember.batch_norm_elemt(x, None, None, mean, (rv + 1e-5).rsqrt(), 1e-5)
    _close(plain, torch.batch_norm(tx, None, None, tmean, trv, False, 0.1, 1e-5, False), tol)


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
@pytest.mark.parametrize("with_counts", [True, False])
def test_gathered_group_statistics_are_the_whole_batchs(dtype, tol, with_counts):
    rng = np.random.default_rng(2)
    sizes = [3, 5, 2] if with_counts else [4, 4, 4]
    groups = [_data(rng, (n, 3, 2), dtype) for n in sizes]
    whole = np.concatenate(groups)
    stats = [ember.batch_norm_stats(ember.tensor(g), 1e-5) for g in groups]
    means = ember.stack([m for m, _ in stats])
    invstds = ember.stack([s for _, s in stats])
    running = _data(rng, (3,), dtype), np.abs(_data(rng, (3,), dtype)) + 0.5
    rm, trm = _pair(running[0].copy())
    rv, trv = _pair(running[1].copy())
    x = ember.tensor(groups[0])
    if with_counts:
        counts = ember.tensor(np.array(sizes, dtype=dtype) * 2)  # elements per channel: rows times 2
        mean, invstd = ember.batch_norm_gather_stats_with_counts(x, means, invstds, rm, rv, 0.1, 1e-5, counts)
    else:
        mean, invstd = ember.batch_norm_gather_stats(x, means, invstds, rm, rv, 0.1, 1e-5, 8)
    tx = torch.tensor(whole)
    tvar, tmean = torch.var_mean(tx, (0, 2), correction=0)
    _close(mean, tmean, 10 * tol)
    _close(invstd, (tvar + 1e-5).rsqrt(), 10 * tol)
    # The running statistics move as PyTorch's batch norm moves them over the whole batch.
    torch.batch_norm_update_stats(tx, trm, trv, 0.1)
    _close(rm, trm, 10 * tol)
    _close(rv, trv, 10 * tol)
    # Without running statistics, only the gathered ones.
    again = ember.batch_norm_gather_stats(x, means, invstds, None, None, 0.1, 1e-5, 8)
    assert again[0].shape == (3,)


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
def test_backward_reduce_and_elemt_give_batch_norms_gradients(dtype, tol):
    rng = np.random.default_rng(3)
    x_np = _data(rng, (5, 3, 4), dtype)
    tx = torch.tensor(x_np, requires_grad=True)
    tw = torch.tensor(_data(rng, (3,), dtype), requires_grad=True)
    tb = torch.tensor(_data(rng, (3,), dtype), requires_grad=True)
    grad_np = _data(rng, (5, 3, 4), dtype)
    torch.batch_norm(tx, tw, tb, None, None, True, 0.1, 1e-5, False).backward(torch.tensor(grad_np))

    x, dy, w = ember.tensor(x_np), ember.tensor(grad_np), ember.tensor(tw.detach().numpy())
    mean, invstd = ember.batch_norm_stats(x, 1e-5)
    sum_dy, sum_dy_xmu, grad_w, grad_b = ember.batch_norm_backward_reduce(dy, x, mean, invstd, w, True, True, True)
    _close(grad_w, tw.grad, 10 * tol)
    _close(grad_b, tb.grad, 10 * tol)
    count = ember.tensor(np.array([20], dtype=np.int32))
    grad_x = ember.batch_norm_backward_elemt(dy, x, mean, invstd, w, sum_dy, sum_dy_xmu, count)
    _close(grad_x, tx.grad, 10 * tol)
    # Only what is asked for; the others are None.
    sums = ember.batch_norm_backward_reduce(dy, x, mean, invstd, w, True, False, False)
    assert sums[2] is None and sums[3] is None and sums[0] is not None
    grads = ember.batch_norm_backward_reduce(dy, x, mean, invstd, w, False, True, True)
    assert grads[0] is None and grads[1] is None
    _close(grads[2], tw.grad, 10 * tol)


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
def test_synchronized_steps_differentiate_as_batch_norm(dtype, tol):
    # Forward as SyncBatchNorm takes it (stats per group, gathered, applied per group), differentiated
    # end to end: the gradients are those of PyTorch's batch norm over the whole batch.
    rng = np.random.default_rng(11)
    sizes = [2, 3, 1]
    whole = _data(rng, (6, 3, 4), dtype)
    x, tx = _pair(whole, grad=True)
    w, tw = _pair(_data(rng, (3,), dtype), grad=True)
    b, tb = _pair(_data(rng, (3,), dtype), grad=True)
    groups = x.split(sizes)
    stats = [ember.batch_norm_stats(g, 1e-5) for g in groups]
    counts = ember.tensor(np.array(sizes, dtype=dtype) * 4)
    mean, invstd = ember.batch_norm_gather_stats_with_counts(
        x, ember.stack([m for m, _ in stats]), ember.stack([s for _, s in stats]), None, None, 0.1, 1e-5, counts
    )
    out = ember.cat([ember.batch_norm_elemt(g, w, b, mean, invstd, 1e-5) for g in groups])
    expected = torch.batch_norm(tx, tw, tb, None, None, True, 0.1, 1e-5, False)
    _close(out, expected, 10 * tol)
    g = _data(rng, (6, 3, 4), dtype)
    (out * ember.tensor(g)).sum().backward()
    (expected * torch.tensor(g)).sum().backward()
    for a, t in ((x, tx), (w, tw), (b, tb)):
        _close(a.grad, t.grad, 1e3 * tol)


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
@pytest.mark.parametrize("running", [True, False])
def test_batch_norm_update_stats(dtype, tol, running):
    rng = np.random.default_rng(4)
    x, tx = _pair(_data(rng, (4, 3, 5), dtype))
    stats = (_data(rng, (3,), dtype), np.abs(_data(rng, (3,), dtype)) + 0.5)
    rm, trm = _pair(stats[0].copy()) if running else (None, None)
    rv, trv = _pair(stats[1].copy()) if running else (None, None)
    ours = ember.batch_norm_update_stats(x, rm, rv, 0.3)
    theirs = torch.batch_norm_update_stats(tx, trm, trv, 0.3)
    for a, b in zip(ours, theirs, strict=True):
        _close(a, b, tol)
    if running:
        _close(rm, trm, tol)
        _close(rv, trv, tol)


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("running", [True, False])
def test_native_batch_norm(dtype, tol, training, running):
    if not training and not running:
        pytest.skip("covered by the error test (PyTorch's CPU kernel crashes there)")
    rng = np.random.default_rng(5)
    x, tx = _pair(_data(rng, (4, 3, 5), dtype), grad=True)
    w, tw = _pair(_data(rng, (3,), dtype), grad=True)
    b, tb = _pair(_data(rng, (3,), dtype), grad=True)
    stats = (_data(rng, (3,), dtype), np.abs(_data(rng, (3,), dtype)) + 0.5)
    rm, trm = _pair(stats[0].copy()) if running else (None, None)
    rv, trv = _pair(stats[1].copy()) if running else (None, None)
    ours = ember.native_batch_norm(x, w, b, rm, rv, training, 0.2, 1e-5)
    theirs = torch.native_batch_norm(tx, tw, tb, trm, trv, training, 0.2, 1e-5)
    for a, t in zip(ours, theirs, strict=True):
        _close(a, t, tol)
    if running:
        _close(rm, trm, tol)
        _close(rv, trv, tol)
    ours[0].pow(2).sum().backward()
    theirs[0].pow(2).sum().backward()
    for a, t in ((x, tx), (w, tw), (b, tb)):
        _close(a.grad, t.grad, 100 * tol)


def test_native_batch_norm_in_evaluation_needs_running_statistics():
    with pytest.raises(RuntimeError, match="running_mean"):
        ember.native_batch_norm(ember.randn(4, 3), None, None, None, None, False, 0.1, 1e-5)


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
@pytest.mark.parametrize("use_input_stats", [True, False])
def test_instance_norm(dtype, tol, use_input_stats):
    rng = np.random.default_rng(6)
    x, tx = _pair(_data(rng, (2, 3, 5), dtype), grad=True)
    w, tw = _pair(_data(rng, (3,), dtype), grad=True)
    b, tb = _pair(_data(rng, (3,), dtype), grad=True)
    rm, trm = _pair(_data(rng, (3,), dtype))
    rv, trv = _pair(np.abs(_data(rng, (3,), dtype)) + 0.5)
    ours = ember.instance_norm(x, w, b, rm, rv, use_input_stats, 0.1, 1e-5, False)
    theirs = torch.instance_norm(tx, tw, tb, trm, trv, use_input_stats, 0.1, 1e-5, False)
    _close(ours, theirs, tol)
    _close(rm, trm, tol)
    _close(rv, trv, tol)
    ours.pow(2).sum().backward()
    theirs.pow(2).sum().backward()
    for a, t in ((x, tx), (w, tw), (b, tb)):
        _close(a.grad, t.grad, 100 * tol)
    # One spatial element is allowed at the top level (nn.functional refuses it in training).
    one = _data(rng, (2, 3, 1), dtype)
    _close(
        ember.instance_norm(ember.tensor(one), None, None, None, None, True, 0.1, 1e-5, False),
        torch.instance_norm(torch.tensor(one), None, None, None, None, True, 0.1, 1e-5, False),
        1e-4,
    )


def test_instance_norm_without_input_statistics_needs_running_ones():
    with pytest.raises(RuntimeError, match="running_mean and running_var to be defined"):
        ember.instance_norm(ember.randn(2, 3, 4), None, None, None, None, False, 0.1, 1e-5, False)
    with pytest.raises(RuntimeError, match="running_mean and running_var to be defined"):
        torch.instance_norm(torch.randn(2, 3, 4), None, None, None, None, False, 0.1, 1e-5, False)


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2])
@pytest.mark.parametrize("pow", [2, 3, 1])
def test_norm_except_dim(dtype, tol, dim, pow):
    rng = np.random.default_rng(7)
    v, tv = _pair(_data(rng, (4, 3, 5), dtype), grad=True)
    ours, theirs = ember.norm_except_dim(v, pow, dim), torch.norm_except_dim(tv, pow, dim)
    _close(ours, theirs, tol)
    ours.sum().backward()
    theirs.sum().backward()
    _close(v.grad, tv.grad, 10 * tol)


def test_norm_except_dim_defaults_and_errors():
    a = np.random.default_rng(8).standard_normal((3, 4))
    _close(ember.norm_except_dim(ember.tensor(a)), torch.norm_except_dim(torch.tensor(a)), 1e-12)
    with pytest.raises(IndexError):
        torch.norm_except_dim(torch.tensor(a), 2, 2)
    with pytest.raises(IndexError):
        ember.norm_except_dim(ember.tensor(a), 2, 2)


@pytest.mark.parametrize("p", [2, 1, 3.5])
def test_native_norm_of_a_sparse_tensor(p):
    a = np.random.default_rng(9).standard_normal((4, 3))
    a[a < 0] = 0
    ours = ember.native_norm(ember.tensor(a).to_sparse(), p)
    theirs = torch.native_norm(torch.tensor(a).to_sparse(), p)
    _close(ours, theirs, 1e-12)
    full = ember.native_norm(ember.tensor(a).to_sparse(), p, [0, 1], False, None)
    _close(full, torch.native_norm(torch.tensor(a).to_sparse(), p, [0, 1], False, None), 1e-12)


def test_native_norm_of_a_sparse_tensor_reduces_fully():
    with pytest.raises(RuntimeError, match="only supports full reductions"):
        torch.native_norm(torch.randn(4, 3).to_sparse(), 2, [0], False, None)
    with pytest.raises(RuntimeError, match="only supports full reductions"):
        ember.native_norm(ember.randn(4, 3).to_sparse(), 2, [0], False, None)


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
def test_native_norm_of_a_dense_tensor_is_the_vector_norm(dtype, tol):
    # PyTorch's kernel is sparse only; ours takes dense tensors as torch.linalg.vector_norm does.
    a, ta = _pair(_data(np.random.default_rng(10), (4, 3), dtype), grad=True)
    _close(ember.native_norm(a), torch.linalg.vector_norm(ta), tol)
    ours = ember.native_norm(a, 3, [1], True, None)
    theirs = torch.linalg.vector_norm(ta, 3, [1], True)
    _close(ours, theirs, tol)
    ours.sum().backward()
    theirs.sum().backward()
    _close(a.grad, ta.grad, 10 * tol)
