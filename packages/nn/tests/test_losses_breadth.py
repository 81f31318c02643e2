"""The losses added to ``ember.nn`` against PyTorch's: values and gradients in float32 and float64,
every reduction, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

from breadth_oracle import check_layer  # noqa: E402

import ember  # noqa: E402


def _inputs(*makers):
    return lambda rng: [make(rng) for make in makers]


def _normal(*shape):
    return lambda rng: rng.standard_normal(shape)


def _signs(*shape):
    return lambda rng: np.where(rng.random(shape) < 0.5, -1.0, 1.0)


def _positive(*shape):
    return lambda rng: rng.random(shape) + 0.1


def _classes(high, *shape):
    return lambda rng: rng.integers(0, high, shape)


def _multilabel(rng):
    target = np.full((4, 5), -1)
    for row in range(4):
        labels = rng.permutation(5)[: row + 1]
        target[row, : len(labels)] = labels
    target[0, 2] = 3  # a label after the -1 that ends the row: ignored
    return target


LOSSES = [
    ("PoissonNLLLoss", lambda nn: nn.PoissonNLLLoss(), _inputs(_normal(4, 3), _positive(4, 3))),
    ("PoissonNLLLoss-full", lambda nn: nn.PoissonNLLLoss(log_input=False, full=True, reduction="sum"),
     _inputs(_positive(4, 3), lambda rng: rng.integers(0, 5, (4, 3)).astype(float))),
    ("GaussianNLLLoss", lambda nn: nn.GaussianNLLLoss(), _inputs(_normal(4, 3), _normal(4, 3), _positive(4, 3))),
    ("GaussianNLLLoss-full-var-per-row", lambda nn: nn.GaussianNLLLoss(full=True, reduction="none"),
     _inputs(_normal(4, 3), _normal(4, 3), _positive(4, 1))),
    ("HingeEmbeddingLoss", lambda nn: nn.HingeEmbeddingLoss(margin=0.5), _inputs(_normal(4, 3), _signs(4, 3))),
    ("HingeEmbeddingLoss-none", lambda nn: nn.HingeEmbeddingLoss(reduction="none"), _inputs(_normal(5), _signs(5))),
    ("MultiLabelMarginLoss", lambda nn: nn.MultiLabelMarginLoss(), _inputs(_normal(4, 5), _multilabel)),
    ("MultiLabelMarginLoss-none", lambda nn: nn.MultiLabelMarginLoss(reduction="none"),
     _inputs(_normal(4, 5), _multilabel)),
    ("SoftMarginLoss", lambda nn: nn.SoftMarginLoss(), _inputs(_normal(4, 3), _signs(4, 3))),
    ("MultiLabelSoftMarginLoss", lambda nn: nn.MultiLabelSoftMarginLoss(reduction="sum"),
     _inputs(_normal(4, 3), lambda rng: (rng.random((4, 3)) < 0.5).astype(float))),
    ("CosineEmbeddingLoss", lambda nn: nn.CosineEmbeddingLoss(margin=0.2),
     _inputs(_normal(5, 3), _normal(5, 3), _signs(5))),
    ("CosineEmbeddingLoss-1d", lambda nn: nn.CosineEmbeddingLoss(reduction="none"),
     _inputs(_normal(3), _normal(3), lambda rng: np.array(-1.0))),
    ("MarginRankingLoss", lambda nn: nn.MarginRankingLoss(margin=0.3), _inputs(_normal(6), _normal(6), _signs(6))),
    ("MultiMarginLoss", lambda nn: nn.MultiMarginLoss(), _inputs(_normal(4, 5), _classes(5, 4))),
    ("MultiMarginLoss-p2", lambda nn: nn.MultiMarginLoss(p=2, margin=0.7, reduction="none"),
     _inputs(_normal(4, 5), _classes(5, 4))),
    ("MultiMarginLoss-1d", lambda nn: nn.MultiMarginLoss(reduction="sum"), _inputs(_normal(5), _classes(5, 1))),
    ("TripletMarginLoss", lambda nn: nn.TripletMarginLoss(margin=1.5), _inputs(_normal(4, 3), _normal(4, 3), _normal(4, 3))),
    ("TripletMarginLoss-p1-swap", lambda nn: nn.TripletMarginLoss(p=1, swap=True, reduction="none"),
     _inputs(_normal(4, 3), _normal(4, 3), _normal(4, 3))),
    ("TripletMarginWithDistanceLoss", lambda nn: nn.TripletMarginWithDistanceLoss(swap=True),
     _inputs(_normal(4, 3), _normal(4, 3), _normal(4, 3))),
    ("NLLLoss2d", lambda nn: nn.NLLLoss2d(), _inputs(_normal(2, 3, 2, 2), _classes(3, 2, 2, 2))),
]  # fmt: skip


@pytest.mark.filterwarnings("ignore:`NLLLoss2d` has been deprecated")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,build,inputs", LOSSES, ids=[spec[0] for spec in LOSSES])
def test_loss_matches_torch(name, build, inputs, dtype):
    # Gradients of the inputs, not of the targets (PyTorch refuses or ignores several of those).
    inputs_of = {"GaussianNLLLoss": (0, 2), "CosineEmbeddingLoss": (0, 1), "MarginRankingLoss": (0, 1),
                 "TripletMarginLoss": (0, 1, 2), "TripletMarginWithDistanceLoss": (0, 1, 2)}  # fmt: skip
    check_layer(build, inputs, dtype, grads=inputs_of.get(name.split("-")[0], (0,)))


def test_triplet_with_a_custom_distance_matches_torch():
    def build(nn):
        lib = torch if nn is torch.nn else ember
        return nn.TripletMarginWithDistanceLoss(
            distance_function=lambda a, b: 1 - lib.nn.functional.cosine_similarity(a, b), margin=0.5
        )

    check_layer(build, _inputs(_normal(4, 3), _normal(4, 3), _normal(4, 3)), "float64", grads=(0, 1, 2))


def _ctc_inputs(rng):
    log_probs = np.log(rng.dirichlet(np.ones(5), size=(12, 3)))
    targets = rng.integers(1, 5, (3, 4))
    targets[1, 1] = targets[1, 0]  # a repeated label needs a blank between its two frames
    return [log_probs, targets]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_matches_torch(reduction, dtype):
    def call(module, log_probs, targets):
        lib = torch if isinstance(module, torch.nn.Module) else ember
        return module(log_probs, targets, lib.tensor([12, 10, 7]), lib.tensor([4, 3, 2]))

    tol = (1e-4, 1e-5) if dtype == "float32" else None
    check_layer(lambda nn: nn.CTCLoss(blank=0, reduction=reduction), _ctc_inputs, dtype, call=call, tol=tol, grads=(0,))


def test_ctc_loss_with_concatenated_targets_unbatched_and_impossible_alignments():
    rng = np.random.default_rng(0)
    log_probs, targets = _ctc_inputs(rng)
    flat = np.concatenate([targets[0, :4], targets[1, :3], targets[2, :2]])
    results = []
    for lib in (torch, ember):
        F = lib.nn.functional
        x = lib.tensor(log_probs, requires_grad=True)
        concatenated = F.ctc_loss(x, lib.tensor(flat), [12, 10, 7], [4, 3, 2])
        unbatched = F.ctc_loss(x[:, 0], lib.tensor(targets[0]), lib.tensor(12), lib.tensor(4))
        impossible = F.ctc_loss(x[:5, :1], lib.tensor([[1] * 6]), [5], [6], reduction="none")
        zeroed = F.ctc_loss(x[:5, :1], lib.tensor([[1] * 6]), [5], [6], zero_infinity=True)
        (concatenated + unbatched + zeroed).backward()
        results.append([concatenated, unbatched, impossible, zeroed, x.grad])
    for theirs, ours in zip(*results, strict=True):
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_loss_errors_match_torch():
    cases = [
        (lambda lib: lib.nn.MultiMarginLoss(p=3), ValueError),
        (lambda lib: lib.nn.TripletMarginLoss(margin=0), ValueError),
        (lambda lib: lib.nn.functional.gaussian_nll_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(3, 3)), ValueError),
        (lambda lib: lib.nn.functional.gaussian_nll_loss(lib.ones(2), lib.ones(2), -lib.ones(2)), ValueError),
        (lambda lib: lib.nn.functional.poisson_nll_loss(lib.ones(2), lib.ones(2), reduction="avg"), ValueError),
        (lambda lib: lib.nn.functional.margin_ranking_loss(lib.ones(2), lib.ones(2), lib.ones(2, 1)), RuntimeError),
        (lambda lib: lib.nn.functional.cosine_embedding_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(2, 2)),
         RuntimeError),
        (lambda lib: lib.nn.functional.triplet_margin_loss(lib.ones(2, 3), lib.ones(3), lib.ones(2, 3)), RuntimeError),
        (lambda lib: lib.nn.functional.hinge_embedding_loss(lib.ones(2), lib.ones(2), reduction="avg"), ValueError),
    ]  # fmt: skip
    for fn, error in cases:
        with pytest.raises(error) as theirs:
            fn(torch)
        with pytest.raises(error) as ours:
            fn(ember)
        assert str(ours.value) == str(theirs.value).replace("torch.", "ember.")


LINEAR_CE = [
    ("LinearCrossEntropyLoss", lambda nn: nn.LinearCrossEntropyLoss(4, 5, bias=True, label_smoothing=0.1),
     _inputs(_normal(3, 4), _classes(5, 3))),
    ("LinearCrossEntropyLoss-k-dim", lambda nn: nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), reduction="sum"),
     _inputs(_normal(3, 4), _classes(5, 3, 2))),
    ("LinearCrossEntropyLoss-ignore", lambda nn: nn.LinearCrossEntropyLoss(4, 5, ignore_index=1, reduction="none"),
     _inputs(_normal(6, 4), _classes(5, 6))),
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,build,inputs", LINEAR_CE, ids=[spec[0] for spec in LINEAR_CE])
def test_linear_cross_entropy_matches_torch(name, build, inputs, dtype):
    check_layer(build, inputs, dtype, grads=(0,))
