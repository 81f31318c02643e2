"""Whole-sequence recurrent networks at the top level, in ATen's two forms: ``lstm``, ``gru``,
``rnn_tanh`` and ``rnn_relu`` over a padded ``(T, N, H)`` input (``batch_first`` for ``(N, T, H)``),
or over packed data with its ``batch_sizes`` (what ``nn.utils.rnn.PackedSequence`` holds).

``params`` is the flat list ``nn.LSTM._flat_weights`` gives: per layer and direction ``w_ih, w_hh``,
then ``b_ih, b_hh`` with ``has_biases``, then an LSTM's projection ``w_hr`` (projections are known by
the hidden state being narrower than the cell state, as ATen knows them). Each step is the top-level
cell function (``lstm_cell``, ...), so everything differentiates.

One loop serves both forms. At step ``t`` only the first ``batch_sizes[t]`` sequences are present (all
of them in the padded form); the step updates those rows and leaves the others' states alone. Going
forwards, the left-out rows have ended and keep their last state; going backwards they have not
started and keep their initial state: in both cases what the layer's final state must be.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import ember
from ember.core.tensor import Tensor

__all__ = ["gru", "lstm", "rnn_relu", "rnn_tanh"]

State = tuple[Tensor, ...]


def _steps(x: Tensor, batch_sizes: list[int] | None) -> list[Tensor]:
    """The inputs of each time step: rows of the packed data, or slices of the ``(T, N, H)`` input."""
    if batch_sizes is None:
        return list(x.unbind(0))
    out, start = [], 0
    for size in batch_sizes:
        out.append(x[start : start + size])
        start += size
    return out


def _run_direction(steps: list[Tensor], state: State, cell: Callable, weights: list, reverse: bool):
    """One layer in one direction: the outputs of each step (in time order) and the final state."""
    outputs: list[Tensor | None] = [None] * len(steps)
    order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
    for t in order:
        size = steps[t].shape[0]
        present = tuple(s[:size] for s in state)
        new = cell(steps[t], present, *weights)
        if size != state[0].shape[0]:
            new = tuple(ember.cat([a, s[size:]]) for a, s in zip(new, state, strict=True))
        state = new
        outputs[t] = state[0][:size]
    return outputs, state


def _stack(
    input: Tensor,
    batch_sizes: list[int] | None,
    hidden: State,
    params: Sequence[Tensor],
    has_biases: bool,
    num_layers: int,
    dropout: float,
    train: bool,
    bidirectional: bool,
    cell: Callable,
    projections: bool = False,
) -> tuple[Tensor, State]:
    """Run the stacked layers; ``hidden`` holds the initial states ``(layers * directions, N, H)``.
    Returns the last layer's output (padded ``(T, N, H')`` or packed) and the final states."""
    directions = 2 if bidirectional else 1
    per_layer = 2 + 2 * bool(has_biases) + int(projections)
    if len(params) != per_layer * num_layers * directions:
        raise RuntimeError("got an incorrect number of RNN parameters")
    for h in hidden:
        if h.dim() != 3 or h.shape[0] != num_layers * directions:
            raise RuntimeError(
                f"Expected hidden states of shape (num_layers * num_directions, batch, hidden) with "
                f"{num_layers * directions} layers and directions, got {list(h.shape)}"
            )
    finals: list[State] = []
    layer_input = input
    for layer in range(num_layers):
        steps = _steps(layer_input, batch_sizes)
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            weights = list(params[index * per_layer : (index + 1) * per_layer])
            w_ih, w_hh = weights[0], weights[1]
            b_ih, b_hh = (weights[2], weights[3]) if has_biases else (None, None)
            w_hr = weights[-1] if projections else None
            state = tuple(h[index] for h in hidden)
            seq, state = _run_direction(steps, state, cell, [w_ih, w_hh, b_ih, b_hh, w_hr], direction == 1)
            finals.append(state)
            outputs.append(seq)
        per_step = outputs[0] if directions == 1 else [ember.cat(pair, -1) for pair in zip(*outputs, strict=True)]
        if batch_sizes is None:
            layer_input = ember.stack(per_step) if per_step else input.new_empty((0, input.shape[1], 0))
        else:
            layer_input = ember.cat(per_step)
        if dropout and train and layer < num_layers - 1:
            layer_input = ember.dropout(layer_input, dropout, True)
    final = tuple(ember.stack([s[i] for s in finals]) for i in range(len(hidden)))
    return layer_input, final


def _check_batch_sizes(data: Tensor, batch_sizes: Tensor) -> list[int]:
    if batch_sizes.dtype != ember.int64:
        raise RuntimeError(f"expected scalar type Long but found {batch_sizes.dtype}")
    if batch_sizes.dim() != 1:
        raise RuntimeError(f"batch_sizes must be 1-D, got {batch_sizes.dim()}-D")
    sizes = [int(s) for s in batch_sizes.tolist()]
    if any(s <= 0 for s in sizes) or any(a < b for a, b in itertools.pairwise(sizes)):
        raise RuntimeError(f"batch_sizes must be positive and non-increasing, got {sizes}")
    if sum(sizes) != data.shape[0]:
        raise RuntimeError(f"batch_sizes sum to {sum(sizes)}, but the packed data has {data.shape[0]} rows")
    return sizes


def _padded_input(input: Tensor, batch_first: bool) -> Tensor:
    if input.dim() != 3:
        raise RuntimeError(f"expected a 3-D input (sequence, batch, features), got {input.dim()}-D")
    return input.transpose(0, 1) if batch_first else input


_INPUT_FORM = ("input", "hx", "params", "has_biases", "num_layers", "dropout", "train", "bidirectional", "batch_first")
_DATA_FORM = ("data", "batch_sizes", "hx", "params", "has_biases", "num_layers", "dropout", "train", "bidirectional")


def _bind(name: str, args: tuple, kwargs: dict) -> dict:
    """The arguments by name, in the padded form or (with ``data``/``batch_sizes``, or a list of
    parameters fourth) the packed form; ``batch_sizes`` is None in the padded form."""
    packed = "data" in kwargs or "batch_sizes" in kwargs or (len(args) > 3 and isinstance(args[3], list | tuple))
    names = _DATA_FORM if packed else _INPUT_FORM
    if len(args) > len(names):
        raise TypeError(f"{name}() takes {len(names)} arguments ({len(args)} given)")
    bound = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
        if key in bound:
            raise TypeError(f"{name}() got multiple values for argument '{key}'")
        bound[key] = value
    missing = [n for n in names if n not in bound]
    if missing:
        raise TypeError(f"{name}() missing required arguments: {', '.join(missing)}")
    if packed:
        bound["input"] = bound.pop("data")
        bound["batch_first"] = False
    else:
        bound["batch_sizes"] = None
    return bound


def _prepare(a: dict) -> tuple[Tensor, list[int] | None]:
    """The input as ``_stack`` takes it, and the packed form's batch sizes."""
    if a["batch_sizes"] is not None:
        return a["input"], _check_batch_sizes(a["input"], a["batch_sizes"])
    return _padded_input(a["input"], a["batch_first"]), None


def _finish(a: dict, out: Tensor) -> Tensor:
    return out.transpose(0, 1) if a["batch_sizes"] is None and a["batch_first"] else out


def _simple_rnn(name: str, args: tuple, kwargs: dict, cell: Callable) -> tuple[Tensor, Tensor]:
    a = _bind(name, args, kwargs)
    x, sizes = _prepare(a)
    settings = (a["params"], a["has_biases"], a["num_layers"], a["dropout"], a["train"], a["bidirectional"])
    out, (h,) = _stack(x, sizes, (a["hx"],), *settings, cell)
    return _finish(a, out), h


def _tanh_cell(x, state, w_ih, w_hh, b_ih, b_hh, _):
    return (ember.rnn_tanh_cell(x, state[0], w_ih, w_hh, b_ih, b_hh),)


def _relu_cell(x, state, w_ih, w_hh, b_ih, b_hh, _):
    return (ember.rnn_relu_cell(x, state[0], w_ih, w_hh, b_ih, b_hh),)


def _gru_cell(x, state, w_ih, w_hh, b_ih, b_hh, _):
    return (ember.gru_cell(x, state[0], w_ih, w_hh, b_ih, b_hh),)


def _lstm_cell(x, state, w_ih, w_hh, b_ih, b_hh, w_hr):
    h, c = state
    if w_hr is None:
        return ember.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)
    # With a projection, the cell's output is projected before it feeds back: h = (o * tanh(c)) @ w_hr^T.
    from ember.nn.functional import linear

    gates = linear(x, w_ih, b_ih) + linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return linear(o.sigmoid() * c.tanh(), w_hr), c


def rnn_tanh(*args, **kwargs) -> tuple[Tensor, Tensor]:
    """``rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)``
    or ``rnn_tanh(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)``:
    ``(output, h_n)`` of an Elman network with tanh."""
    return _simple_rnn("rnn_tanh", args, kwargs, _tanh_cell)


def rnn_relu(*args, **kwargs) -> tuple[Tensor, Tensor]:
    """``rnn_tanh``'s two forms with ReLU."""
    return _simple_rnn("rnn_relu", args, kwargs, _relu_cell)


def gru(*args, **kwargs) -> tuple[Tensor, Tensor]:
    """``rnn_tanh``'s two forms for gated recurrent units: ``(output, h_n)``."""
    return _simple_rnn("gru", args, kwargs, _gru_cell)


def lstm(*args, **kwargs) -> tuple[Tensor, Tensor, Tensor]:
    """``lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)`` or
    ``lstm(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)``, with
    ``hx`` the pair ``(h_0, c_0)``: ``(output, h_n, c_n)``."""
    a = _bind("lstm", args, kwargs)
    hx = a["hx"]
    if isinstance(hx, Tensor) or len(hx) != 2:
        raise RuntimeError("lstm expects two hidden states")
    h0, c0 = hx
    x, sizes = _prepare(a)
    settings = (a["params"], a["has_biases"], a["num_layers"], a["dropout"], a["train"], a["bidirectional"])
    projections = h0.shape[-1] != c0.shape[-1]
    out, (h, c) = _stack(x, sizes, (h0, c0), *settings, _lstm_cell, projections)
    return _finish(a, out), h, c
