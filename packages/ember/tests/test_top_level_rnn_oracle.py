"""The whole-sequence recurrent functions (``ember.lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu``) in both
of ATen's forms, values and gradients against PyTorch's, with the parameters of PyTorch's modules."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

DTYPES = [(torch.float32, 1e-5), (torch.float64, 1e-11)]
NAMES = ["rnn_tanh", "rnn_relu", "gru", "lstm"]


def _module(name: str, bias: bool, bidirectional: bool, proj: int, dtype):
    torch.manual_seed(0)
    if name == "lstm":
        m = torch.nn.LSTM(3, 4, 2, bias=bias, bidirectional=bidirectional, proj_size=proj)
    elif name == "gru":
        m = torch.nn.GRU(3, 4, 2, bias=bias, bidirectional=bidirectional)
    else:
        m = torch.nn.RNN(3, 4, 2, nonlinearity=name[4:], bias=bias, bidirectional=bidirectional)
    return m.to(dtype)


def _ours(t, grad: bool = True):
    return ember.tensor(t.detach().numpy(), requires_grad=grad)


def _theirs(t):
    return t.detach().clone().requires_grad_(True)


def _close(ours, theirs, tol: float) -> None:
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tol, atol=tol)


def _hidden(name, bidirectional, proj, batch, dtype):
    directions = 2 if bidirectional else 1
    g = torch.Generator().manual_seed(1)
    h = torch.randn(2 * directions, batch, proj or 4, generator=g, dtype=dtype)
    if name != "lstm":
        return [h]
    return [h, torch.randn(2 * directions, batch, 4, generator=g, dtype=dtype)]


def _compare(name, ours_args, theirs_args, leaves, tol):
    ours = getattr(ember, name)(*ours_args)
    theirs = getattr(torch, name)(*theirs_args)
    assert len(ours) == len(theirs) == (3 if name == "lstm" else 2)
    for a, t in zip(ours, theirs, strict=True):
        _close(a, t, tol)
    sum((o * o).sum() for o in ours).backward()
    sum((t * t).sum() for t in theirs).backward()
    for a, t in leaves:
        _close(a.grad, t.grad, 100 * tol)


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_padded_form(dtype, tol, name, bidirectional, bias, batch_first):
    params = list(_module(name, bias, bidirectional, 0, dtype)._flat_weights)
    shape = (2, 5, 3) if batch_first else (5, 2, 3)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(2), dtype=dtype)
    hidden = _hidden(name, bidirectional, 0, 2, dtype)
    tp, op = [_theirs(p) for p in params], [_ours(p) for p in params]
    tx, ox = _theirs(x), _ours(x)
    th, oh = [_theirs(h) for h in hidden], [_ours(h) for h in hidden]
    t_hx, o_hx = (th, oh) if name == "lstm" else (th[0], oh[0])
    settings = (bias, 2, 0.0, False, bidirectional, batch_first)
    leaves = list(zip([ox, *oh, *op], [tx, *th, *tp], strict=True))
    _compare(name, (ox, o_hx, op, *settings), (tx, t_hx, tp, *settings), leaves, tol)


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_form(dtype, tol, name, bidirectional):
    params = list(_module(name, True, bidirectional, 0, dtype)._flat_weights)
    batch_sizes = torch.tensor([3, 3, 2, 1])
    data = torch.randn(9, 3, generator=torch.Generator().manual_seed(3), dtype=dtype)
    hidden = _hidden(name, bidirectional, 0, 3, dtype)
    tp, op = [_theirs(p) for p in params], [_ours(p) for p in params]
    td, od = _theirs(data), _ours(data)
    th, oh = [_theirs(h) for h in hidden], [_ours(h) for h in hidden]
    t_hx, o_hx = (th, oh) if name == "lstm" else (th[0], oh[0])
    sizes = ember.tensor(batch_sizes.numpy())
    settings = (True, 2, 0.0, False, bidirectional)
    leaves = list(zip([od, *oh, *op], [td, *th, *tp], strict=True))
    _compare(name, (od, sizes, o_hx, op, *settings), (td, batch_sizes, t_hx, tp, *settings), leaves, tol)


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("packed", [False, True])
def test_lstm_with_projections(bidirectional, packed):
    params = list(_module("lstm", True, bidirectional, 3, torch.float64)._flat_weights)
    hidden = _hidden("lstm", bidirectional, 3, 2, torch.float64)
    tp, op = [_theirs(p) for p in params], [_ours(p) for p in params]
    th, oh = [_theirs(h) for h in hidden], [_ours(h) for h in hidden]
    settings = (True, 2, 0.0, False, bidirectional)
    if packed:
        sizes = torch.tensor([2, 2, 1])
        x = torch.randn(5, 3, dtype=torch.float64)
        tx, ox = _theirs(x), _ours(x)
        ours_args, theirs_args = (ox, ember.tensor(sizes.numpy()), oh, op, *settings), (tx, sizes, th, tp, *settings)
    else:
        x = torch.randn(4, 2, 3, dtype=torch.float64)
        tx, ox = _theirs(x), _ours(x)
        ours_args, theirs_args = (ox, oh, op, *settings, False), (tx, th, tp, *settings, False)
    leaves = list(zip([ox, *oh, *op], [tx, *th, *tp], strict=True))
    _compare("lstm", ours_args, theirs_args, leaves, 1e-11)


def test_keyword_arguments():
    params = list(_module("gru", True, False, 0, torch.float64)._flat_weights)
    x = torch.randn(4, 2, 3, dtype=torch.float64)
    h = torch.randn(2, 2, 4, dtype=torch.float64)
    kwargs = dict(has_biases=True, num_layers=2, dropout=0.0, train=False, bidirectional=False, batch_first=False)
    theirs = torch.gru(input=x, hx=h, params=params, **kwargs)
    ours = ember.gru(input=_ours(x), hx=_ours(h), params=[_ours(p) for p in params], **kwargs)
    for a, t in zip(ours, theirs, strict=True):
        _close(a, t, 1e-11)


def test_dropout_between_layers_in_training():
    params = list(_module("rnn_tanh", True, False, 0, torch.float64)._flat_weights)
    op = [_ours(p, grad=False) for p in params]
    x, h = ember.randn(5, 2, 3, dtype=ember.float64), ember.zeros(2, 2, 4, dtype=ember.float64)
    settings = (True, 2)
    quiet = ember.rnn_tanh(x, h, op, *settings, 0.5, False, False, False)[0]
    again = ember.rnn_tanh(x, h, op, *settings, 0.0, True, False, False)[0]
    _close(quiet, torch.tensor(again.numpy()), 1e-12)  # no dropout outside training or at p=0
    dropped = [ember.rnn_tanh(x, h, op, *settings, 0.5, True, False, False)[0] for _ in range(3)]
    assert any(not np.allclose(d.numpy(), quiet.numpy()) for d in dropped)


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("few_params", "got an incorrect number of RNN parameters"),
        ("lstm_one_state", "lstm expects two hidden states"),
        ("few_hidden", "hidden"),
    ],
)
def test_errors(case, match):
    def call(lib):
        w = [lib.ones(4, 3), lib.ones(4, 4), lib.ones(4), lib.ones(4)]
        x, h = lib.ones(5, 2, 3), lib.ones(1, 2, 4)
        if case == "few_params":
            return lib.rnn_tanh(x, h, w[:3], True, 1, 0.0, False, False, False)
        if case == "lstm_one_state":
            return lib.lstm(x, [h], w, True, 1, 0.0, False, False, False)
        second = [lib.ones(4, 4), lib.ones(4, 4), lib.ones(4), lib.ones(4)]
        return lib.rnn_tanh(x, h, w + second, True, 2, 0.0, False, False, False)

    with pytest.raises(RuntimeError, match=match):
        call(torch)
    with pytest.raises(RuntimeError, match=match):
        call(ember)
