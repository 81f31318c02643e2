"""The top-level losses (reduction as ATen's enum) and recurrent-cell steps against PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

RNG = np.random.default_rng(0)


def _pair(*shape, positive: bool = False):
    a = RNG.standard_normal(shape).astype(np.float64)
    if positive:
        a = np.abs(a) + 0.1
    return ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _sign(n):
    a = RNG.choice([-1.0, 1.0], n)
    return ember.tensor(a), torch.tensor(a)


def _check(ours, theirs, inputs):
    ours_out = ours if isinstance(ours, tuple) else (ours,)
    theirs_out = theirs if isinstance(theirs, tuple) else (theirs,)
    for a, b in zip(ours_out, theirs_out, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    sum(o.sum() for o in ours_out).backward()
    sum(t.sum() for t in theirs_out).backward()
    for a, b in inputs:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_losses(reduction):
    (x1, t1), (x2, t2) = _pair(5, 4), _pair(5, 4)
    ys, yt = _sign(5)
    _check(
        ember.cosine_embedding_loss(x1, x2, ys, 0.1, reduction),
        torch.cosine_embedding_loss(t1, t2, yt, 0.1, reduction),
        [(x1, t1), (x2, t2)],
    )
    (a, b) = _pair(6)
    ys, yt = _sign(6)
    _check(
        ember.hinge_embedding_loss(a, ys, 0.5, reduction), torch.hinge_embedding_loss(b, yt, 0.5, reduction), [(a, b)]
    )
    (a1, b1), (a2, b2) = _pair(6), _pair(6)
    _check(
        ember.margin_ranking_loss(a1, a2, ys, 0.2, reduction),
        torch.margin_ranking_loss(b1, b2, yt, 0.2, reduction),
        [(a1, b1), (a2, b2)],
    )
    (p, q), (tp, tq) = _pair(6), _pair(6, positive=True)
    _check(
        ember.poisson_nll_loss(p, tp.detach(), True, True, 1e-8, reduction),
        torch.poisson_nll_loss(q, tq.detach(), True, True, 1e-8, reduction),
        [(p, q)],
    )
    (a, b), (c, d), (e, f) = _pair(4, 3), _pair(4, 3), _pair(4, 3)
    _check(
        ember.triplet_margin_loss(a, c, e, 1.0, 2, 1e-6, True, reduction),
        torch.triplet_margin_loss(b, d, f, 1.0, 2, 1e-6, True, reduction),
        [(a, b), (c, d), (e, f)],
    )


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_ctc_loss(reduction):
    logits = RNG.standard_normal((7, 2, 5))
    lp_e = ember.tensor(logits, requires_grad=True)
    lp_t = torch.tensor(logits, requires_grad=True)
    targets = np.array([[1, 2, 2], [3, 1, 0]])
    args_e = (ember.tensor(targets), ember.tensor([7, 6]), ember.tensor([3, 2]))
    args_t = (torch.tensor(targets), torch.tensor([7, 6]), torch.tensor([3, 2]))
    ours = ember.ctc_loss(lp_e.log_softmax(-1), *args_e, 0, reduction, False)
    theirs = torch.ctc_loss(lp_t.log_softmax(-1), *args_t, 0, reduction, False)
    _check(ours, theirs, [(lp_e, lp_t)])


def test_reduction_must_be_the_enum():
    x = ember.ones(3)
    with pytest.raises(TypeError):
        ember.hinge_embedding_loss(x, x, 1.0, "mean")
    with pytest.raises(ValueError):
        ember.hinge_embedding_loss(x, x, 1.0, 3)


@pytest.mark.parametrize("cell", ["rnn_tanh_cell", "rnn_relu_cell", "gru_cell", "lstm_cell"])
@pytest.mark.parametrize("bias", [True, False])
def test_cells(cell, bias):
    gates = {"rnn_tanh_cell": 1, "rnn_relu_cell": 1, "gru_cell": 3, "lstm_cell": 4}[cell]
    (x, xt), (h, ht) = _pair(3, 5), _pair(3, 4)
    (w_ih, w_iht), (w_hh, w_hht) = _pair(gates * 4, 5), _pair(gates * 4, 4)
    inputs = [(x, xt), (h, ht), (w_ih, w_iht), (w_hh, w_hht)]
    biases_e, biases_t = [], []
    if bias:
        (b1, b1t), (b2, b2t) = _pair(gates * 4), _pair(gates * 4)
        biases_e, biases_t = [b1, b2], [b1t, b2t]
        inputs += [(b1, b1t), (b2, b2t)]
    if cell == "lstm_cell":
        (c, ct) = _pair(3, 4)
        inputs.append((c, ct))
        ours = ember.lstm_cell(x, (h, c), w_ih, w_hh, *biases_e)
        theirs = torch.lstm_cell(xt, (ht, ct), w_iht, w_hht, *biases_t)
    else:
        ours = getattr(ember, cell)(x, h, w_ih, w_hh, *biases_e)
        theirs = getattr(torch, cell)(xt, ht, w_iht, w_hht, *biases_t)
    _check(ours, theirs, inputs)
