"""The ``torch.<name>`` forms of functions PyTorch also offers in ``torch.nn.functional``
(``ember.pixel_shuffle``, ``ember.selu``, ``ember.max_pool1d``, ...), with the top-level signatures.

They live in ember-nn, which the core cannot import; ``ember`` reaches them here on first use.
"""

from __future__ import annotations

import ember.nn.functional as F
from ember.core.tensor import Tensor

# Same signature at the top level as in nn.functional (the top-level ones have no ``inplace``).
SAME = (
    "adaptive_avg_pool1d",
    "alpha_dropout",
    "avg_pool1d",
    "bilinear",
    "celu",
    "channel_shuffle",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose3d",
    "feature_alpha_dropout",
    "hardshrink",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool3d",
    "native_channel_shuffle",
    "pairwise_distance",
    "pdist",
    "pixel_shuffle",
    "pixel_unshuffle",
    "prelu",
    "rrelu",
    "selu",
    "threshold",
)
globals().update({name: getattr(F, name) for name in SAME})


def adaptive_max_pool1d(input: Tensor, output_size) -> tuple[Tensor, Tensor]:
    """The pooled values and their indices (the top-level form always returns both)."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def selu_(input: Tensor) -> Tensor:
    return F.selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return F.celu(input, alpha, inplace=True)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    return F.rrelu(input, lower, upper, training, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return F.threshold(input, threshold, value, inplace=True)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return F.feature_alpha_dropout(input, p, train, inplace=True)


# -- losses: the top-level forms take the reduction as ATen's enum (0 none, 1 mean, 2 sum) ----------

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(reduction: int) -> str:
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(f"reduction must be an int (0: none, 1: mean, 2: sum), got {type(reduction).__name__}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, reduction: int = 1) -> Tensor:
    return F.cosine_embedding_loss(input1, input2, target, margin=margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin: float = 1.0, reduction: int = 1) -> Tensor:
    return F.hinge_embedding_loss(input, target, margin=margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, reduction: int = 1) -> Tensor:
    return F.margin_ranking_loss(input1, input2, target, margin=margin, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input: bool, full: bool, eps: float, reduction: int) -> Tensor:
    return F.poisson_nll_loss(input, target, log_input=log_input, full=full, eps=eps, reduction=_reduction(reduction))


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: int = 1,
) -> Tensor:
    return F.triplet_margin_loss(
        anchor, positive, negative, margin=margin, p=p, eps=eps, swap=swap, reduction=_reduction(reduction)
    )


def ctc_loss(
    log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction: int = 1, zero_infinity: bool = False
) -> Tensor:
    return F.ctc_loss(
        log_probs, targets, input_lengths, target_lengths, blank=blank, reduction=_reduction(reduction),
        zero_infinity=zero_infinity,
    )  # fmt: skip


# -- one step of the recurrent cells (what nn.RNNCell/LSTMCell/GRUCell compute) ----------------------


def _gates(input, hx, w_ih, w_hh, b_ih, b_hh) -> tuple[Tensor, Tensor]:
    gi = F.linear(input, w_ih, b_ih)
    gh = F.linear(hx, w_hh, b_hh)
    return gi, gh


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).relu()


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> tuple[Tensor, Tensor]:
    """``hx`` is ``(h, c)``; returns the next ``(h, c)``. Gates in PyTorch's order: input, forget, cell, output."""
    h, c = hx
    gi, gh = _gates(input, h, w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = (gi + gh).chunk(4, -1)
    c_next = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c_next.tanh(), c_next


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:
    """Gates in PyTorch's order: reset, update, new; the reset gate scales the hidden part of ``new``."""
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return (1 - z) * n + z * hx


NAMES = (
    *SAME,
    "cosine_embedding_loss",
    "ctc_loss",
    "gru_cell",
    "hinge_embedding_loss",
    "lstm_cell",
    "margin_ranking_loss",
    "poisson_nll_loss",
    "rnn_relu_cell",
    "rnn_tanh_cell",
    "triplet_margin_loss",
    "adaptive_max_pool1d",
    "selu_",
    "celu_",
    "rrelu_",
    "threshold_",
    "alpha_dropout_",
    "feature_alpha_dropout_",
)
