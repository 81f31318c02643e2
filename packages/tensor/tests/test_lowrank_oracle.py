"""``svd_lowrank``, ``pca_lowrank`` and ``lobpcg`` against PyTorch and float64 references.

The randomized methods draw from Ember's generator (seeded with ``ember.manual_seed``), which is not
PyTorch's, so their results are compared by what the methods promise: singular values and
eigenvalues against NumPy's float64 ones within tolerances, and reconstructions. ``lobpcg`` given the
same starting block ``X`` is deterministic, so there it is compared with PyTorch's run directly.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

import ember  # noqa: E402

RNG = np.random.default_rng(2024)
# A rank-4 matrix with a little noise, and a symmetric matrix with known spectrum.
LOW_RANK = RNG.standard_normal((30, 4)) @ RNG.standard_normal((4, 20)) + 1e-6 * RNG.standard_normal((30, 20))
_Q, _ = np.linalg.qr(RNG.standard_normal((40, 40)))
SPECTRUM = np.linspace(1.0, 50.0, 40)
SYMMETRIC = _Q @ np.diag(SPECTRUM) @ _Q.T
B_DIAG = np.eye(40) + 0.1 * np.diag(RNG.uniform(0, 1, 40))


def _singular_values(a: np.ndarray, k: int) -> np.ndarray:
    return np.linalg.svd(a, compute_uv=False)[:k]


@pytest.mark.parametrize("transpose", [False, True])
def test_svd_lowrank_finds_the_leading_singular_values(transpose):
    a = LOW_RANK.T if transpose else LOW_RANK
    ember.manual_seed(0)
    U, S, V = ember.svd_lowrank(ember.tensor(a), q=6)
    assert (tuple(U.shape), tuple(S.shape), tuple(V.shape)) == ((a.shape[0], 6), (6,), (a.shape[1], 6))
    theirs = torch.svd_lowrank(torch.tensor(a), q=6)
    assert [tuple(t.shape) for t in theirs] == [tuple(t.shape) for t in (U, S, V)]
    np.testing.assert_allclose(S.numpy()[:4], _singular_values(a, 4), rtol=1e-10)
    np.testing.assert_allclose(S.numpy()[:4], theirs[1].numpy()[:4], rtol=1e-10)
    np.testing.assert_allclose((U * S) @ V.mT, a, atol=1e-5)
    np.testing.assert_allclose(U.mT.matmul(U).numpy(), np.eye(6), atol=1e-10)


def test_svd_lowrank_with_a_mean_and_batches():
    mean = LOW_RANK.mean(0, keepdims=True)
    ember.manual_seed(1)
    _, S, _ = ember.svd_lowrank(ember.tensor(LOW_RANK), q=6, M=ember.tensor(mean))
    np.testing.assert_allclose(S.numpy()[:4], _singular_values(LOW_RANK - mean, 4), rtol=1e-8)
    batch = np.stack([LOW_RANK, 3 * LOW_RANK])
    _, S, _ = ember.svd_lowrank(ember.tensor(batch), q=5, niter=3)
    np.testing.assert_allclose(S.numpy()[:, :4], [_singular_values(b, 4) for b in batch], rtol=1e-8)
    assert ember.svd_lowrank(ember.tensor(LOW_RANK.astype(np.float32)))[1].dtype is ember.float32


def test_pca_lowrank_dense_and_sparse():
    centered = LOW_RANK - LOW_RANK.mean(0)
    expected = _singular_values(centered, 4)
    ember.manual_seed(2)
    _, S, _ = ember.pca_lowrank(ember.tensor(LOW_RANK))
    assert tuple(S.shape) == (6,)  # q = min(6, m, n)
    np.testing.assert_allclose(S.numpy()[:4], expected, rtol=1e-8)
    _, S_sparse, _ = ember.pca_lowrank(ember.tensor(LOW_RANK).to_sparse(), q=5)
    _, S_theirs, _ = torch.pca_lowrank(torch.tensor(LOW_RANK).to_sparse(), q=5)
    np.testing.assert_allclose(S_sparse.numpy()[:4], expected, rtol=1e-8)
    np.testing.assert_allclose(S_sparse.numpy()[:4], S_theirs.numpy()[:4], rtol=1e-8)
    _, S_uncentered, _ = ember.pca_lowrank(ember.tensor(LOW_RANK), center=False)
    np.testing.assert_allclose(S_uncentered.numpy()[:4], _singular_values(LOW_RANK, 4), rtol=1e-8)


def test_pca_lowrank_errors_match():
    for kwargs in ({"q": 50}, {"q": -1}, {"niter": -1}):
        with pytest.raises(ValueError) as expected:
            torch.pca_lowrank(torch.tensor(LOW_RANK), **kwargs)
        with pytest.raises(ValueError) as ours:
            ember.pca_lowrank(ember.tensor(LOW_RANK), **kwargs)
        assert str(ours.value) == str(expected.value)


def test_svd_lowrank_differentiates():
    x = ember.tensor(LOW_RANK, requires_grad=True)
    ember.manual_seed(3)
    _, S, _ = ember.svd_lowrank(x, q=4)
    S.sum().backward()
    # d(sum of the top singular values)/dA = U V^T over those values (the matrix has rank 4).
    u, _, vh = np.linalg.svd(LOW_RANK)
    np.testing.assert_allclose(x.grad.numpy(), u[:, :4] @ vh[:4], atol=1e-6)


@pytest.mark.parametrize("method", ["ortho", "basic"])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("generalized", [False, True])
def test_lobpcg_matches_pytorch_from_the_same_start(method, largest, generalized):
    start = RNG.standard_normal((40, 3))
    B = B_DIAG if generalized else None
    ours = ember.lobpcg(
        ember.tensor(SYMMETRIC),
        B=None if B is None else ember.tensor(B),
        X=ember.tensor(start),
        largest=largest,
        method=method,
        niter=4,
    )
    theirs = torch.lobpcg(
        torch.tensor(SYMMETRIC),
        B=None if B is None else torch.tensor(B),
        X=torch.tensor(start.copy()),
        largest=largest,
        method=method,
        niter=4,
    )
    np.testing.assert_allclose(ours[0].numpy(), theirs[0].numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.abs(ours[1].numpy()), np.abs(theirs[1].numpy()), atol=1e-8)


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_converges_to_the_extreme_eigenvalues(largest):
    ember.manual_seed(4)
    E, X = ember.lobpcg(ember.tensor(SYMMETRIC), k=3, largest=largest)
    expected = SPECTRUM[::-1][:3] if largest else SPECTRUM[:3]
    np.testing.assert_allclose(E.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(SYMMETRIC @ X.numpy(), X.numpy() * E.numpy(), atol=1e-5)
    # Generalized: against NumPy's eigenvalues of B^-1/2 A B^-1/2.
    half = np.diag(np.diag(B_DIAG) ** -0.5)
    reference = np.sort(np.linalg.eigvalsh(half @ SYMMETRIC @ half))
    E, _ = ember.lobpcg(ember.tensor(SYMMETRIC), k=2, B=ember.tensor(B_DIAG), largest=largest)
    np.testing.assert_allclose(E.numpy(), reference[::-1][:2] if largest else reference[:2], rtol=1e-6)


def test_lobpcg_batches_tracker_and_errors():
    E, X = ember.lobpcg(ember.tensor(np.stack([SYMMETRIC, 2 * SYMMETRIC])), k=2)
    assert tuple(E.shape) == (2, 2) and tuple(X.shape) == (2, 40, 2)
    np.testing.assert_allclose(E.numpy(), [[50.0, SPECTRUM[-2]], [100.0, 2 * SPECTRUM[-2]]], rtol=1e-6)
    steps = []
    ember.lobpcg(ember.tensor(SYMMETRIC), k=1, tracker=lambda worker: steps.append(worker.ivars["istep"]))
    assert steps == list(range(1, len(steps) + 1))
    with pytest.raises(ValueError) as expected:
        torch.lobpcg(torch.tensor(SYMMETRIC[:5, :5]), k=2)
    with pytest.raises(ValueError) as ours:
        ember.lobpcg(ember.tensor(SYMMETRIC[:5, :5]), k=2)
    assert str(ours.value) == str(expected.value)
    with pytest.raises(NotImplementedError, match="gradients through lobpcg"):
        ember.lobpcg(ember.tensor(SYMMETRIC, requires_grad=True), k=1)
