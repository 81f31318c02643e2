"""Recurrent layers: ``RNN``, ``LSTM`` and ``GRU``, multi-layer, bidirectional, batch-first.

Each layer and direction projects the whole input sequence at once (one matrix product), then
steps through time with the hidden-to-hidden product only. Parameter names, shapes, gate orders
(LSTM: input, forget, cell, output; GRU: reset, update, new) and initialization are PyTorch's, so
state dicts load across.

A ``PackedSequence`` input runs padded in the caller's batch order, with each sequence's state held
still past its own length (so the reverse direction starts at each sequence's own end); the output
is packed back in the input's layout and the final states are those at each sequence's end.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ember.core.creation import tensor as make_tensor
from ember.nn import functional as F
from ember.nn import init
from ember.nn._ops import ops
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.nn.utils.rnn import PackedSequence, pack_like, pad_packed_sequence

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class RNNBase(Module):
    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an element being zeroed"
            )
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        factory = {"device": device, "dtype": dtype}
        directions = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names: list[str] = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else real_hidden * directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for kind, shape in shapes:
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(ops.empty(shape, **factory)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def flatten_parameters(self) -> None:
        """Weights are used where they are: nothing to flatten."""

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list]:
        per_layer = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional else 1))
        weights = self._flat_weights
        return [weights[i : i + per_layer] for i in range(0, len(weights), per_layer)]

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # -- running ------------------------------------------------------------------------------

    def _layer_weights(self, layer: int, direction: int):
        suffix = "_reverse" if direction == 1 else ""
        get = lambda kind: getattr(self, f"{kind}_l{layer}{suffix}", None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    def _prepare(self, input, hx, names: str):
        if isinstance(input, PackedSequence):
            padded, lengths = pad_packed_sequence(input)
            if padded.shape[-1] != self.input_size:
                raise RuntimeError(
                    f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {padded.shape[-1]}"
                )
            return padded, True, np.asarray(lengths.numpy(), dtype=np.int64)
        if not isinstance(input, ops.Tensor):
            raise TypeError(f"{type(self).__name__}: expected input to be a Tensor, got {type(input).__name__}")
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        batched = input.dim() == 3
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.shape[-1]}"
            )
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        return input, batched, None

    def _run(self, input, initial: list, cell, lengths=None):
        """``input`` (T, N, H_in); ``initial`` holds one state tuple per layer and direction; ``lengths``,
        each sequence's length for a packed input."""
        directions = 2 if self.bidirectional else 1
        finals = []
        layer_input = input
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                state = initial[layer * directions + direction]
                w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_weights(layer, direction)
                projected = F.linear(layer_input, w_ih, b_ih)
                steps = range(projected.shape[0] - 1, -1, -1) if direction == 1 else range(projected.shape[0])
                seq = [None] * projected.shape[0]
                for t in steps:
                    new = cell(projected[t], state, w_hh, b_hh, w_hr)
                    if lengths is not None and (lengths <= t).any():
                        running = make_tensor((t < lengths)[:, None], device=input.device)
                        new = tuple(ops.where(running, a, b) for a, b in zip(new, state, strict=True))
                    state = new
                    seq[t] = state[0]
                finals.append(state)
                outputs.append(ops.stack(seq) if seq else projected.new_empty((0, *state[0].shape)))
            layer_input = outputs[0] if directions == 1 else ops.cat(outputs, dim=2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, training=True)
        return layer_input, finals

    def _initial_hidden(self, input, hx, batched: bool):
        """The RNN's or GRU's h_0 as (layers * directions, N, H): zeros, or ``hx`` checked."""
        directions = 2 if self.bidirectional else 1
        expected = (self.num_layers * directions, input.shape[1], self.hidden_size)
        if hx is None:
            return ops.zeros(expected, dtype=input.dtype, device=input.device)
        if batched and hx.dim() != 3:
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
        if not batched and hx.dim() != 2:
            raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
        if not batched:
            hx = hx.unsqueeze(1)
        self._check_hidden(hx, expected, "Expected hidden")
        return hx

    def _check_hidden(self, hx, expected: tuple, message: str) -> None:
        if tuple(hx.shape) != expected:
            raise RuntimeError(f"{message} size {tuple(expected)}, got {list(hx.shape)}")


class RNN(RNNBase):
    """Elman RNN: h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu)."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, *args, **kwargs)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else s + f", nonlinearity={self.nonlinearity}"

    def forward(self, input, hx=None):
        packed = input
        input, batched, lengths = self._prepare(input, hx, "RNN")
        hx = self._initial_hidden(input, hx, batched)
        act = ops.tanh if self.mode == "RNN_TANH" else ops.relu

        def cell(x_proj, state, w_hh, b_hh, _):
            return (act(x_proj + F.linear(state[0], w_hh, b_hh)),)

        output, finals = self._run(input, [(hx[i],) for i in range(hx.shape[0])], cell, lengths)
        h_n = ops.stack([s[0] for s in finals])
        return _finish(self, output, batched, packed), (h_n if batched else h_n.squeeze(1))


class GRU(RNNBase):
    """Gated recurrent unit; gates reset, update, new in that order."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        packed = input
        input, batched, lengths = self._prepare(input, hx, "GRU")
        hx = self._initial_hidden(input, hx, batched)

        def cell(x_proj, state, w_hh, b_hh, _):
            h = state[0]
            h_proj = F.linear(h, w_hh, b_hh)
            x_r, x_z, x_n = x_proj.chunk(3, dim=-1)
            h_r, h_z, h_n = h_proj.chunk(3, dim=-1)
            r = ops.sigmoid(x_r + h_r)
            z = ops.sigmoid(x_z + h_z)
            n = ops.tanh(x_n + r * h_n)
            return ((1 - z) * n + z * h,)

        output, finals = self._run(input, [(hx[i],) for i in range(hx.shape[0])], cell, lengths)
        h_n = ops.stack([s[0] for s in finals])
        return _finish(self, output, batched, packed), (h_n if batched else h_n.squeeze(1))


class LSTM(RNNBase):
    """Long short-term memory; gates input, forget, cell, output in that order; optional projection."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        packed = input
        input, batched, lengths = self._prepare(input, hx, "LSTM")
        directions = 2 if self.bidirectional else 1
        batch = input.shape[1]
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        h_shape = (self.num_layers * directions, batch, real_hidden)
        c_shape = (self.num_layers * directions, batch, self.hidden_size)
        if hx is None:
            h0 = ops.zeros(h_shape, dtype=input.dtype, device=input.device)
            c0 = ops.zeros(c_shape, dtype=input.dtype, device=input.device)
        else:
            if not isinstance(hx, tuple | list) or len(hx) != 2:
                raise RuntimeError("LSTM: hx must be a tuple of (h_0, c_0)")
            h0, c0 = hx
            if batched and (h0.dim() != 3 or c0.dim() != 3):
                raise RuntimeError(
                    f"For batched 3-D input, hx and cx should also be 3-D but got ({h0.dim()}-D, {c0.dim()}-D) tensors"
                )
            if not batched:
                if h0.dim() != 2 or c0.dim() != 2:
                    raise RuntimeError(
                        f"For unbatched 2-D input, hx and cx should also be 2-D but got ({h0.dim()}-D, {c0.dim()}-D) tensors"
                    )
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
            self._check_hidden(h0, h_shape, "Expected hidden[0]")
            self._check_hidden(c0, c_shape, "Expected hidden[1]")

        def cell(x_proj, state, w_hh, b_hh, w_hr):
            h, c = state
            gates = x_proj + F.linear(h, w_hh, b_hh)
            i, f, g, o = gates.chunk(4, dim=-1)
            c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
            h = ops.sigmoid(o) * ops.tanh(c)
            if w_hr is not None:
                h = F.linear(h, w_hr)
            return h, c

        initial = [(h0[i], c0[i]) for i in range(h0.shape[0])]
        output, finals = self._run(input, initial, cell, lengths)
        h_n = ops.stack([s[0] for s in finals])
        c_n = ops.stack([s[1] for s in finals])
        if not batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return _finish(self, output, batched, packed), (h_n, c_n)


def _finish(module: RNNBase, output, batched: bool, packed=None):
    if isinstance(packed, PackedSequence):
        return pack_like(output, packed)
    if not batched:
        return output.squeeze(1)
    return output.transpose(0, 1) if module.batch_first else output


class RNNCellBase(Module):
    """One step of a recurrent layer: ``weight_ih`` ``(gates * hidden, input)``, ``weight_hh``
    ``(gates * hidden, hidden)`` and their biases, initialized uniform in ``±1/sqrt(hidden)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(ops.empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(ops.empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(ops.empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(ops.empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, input, hx, name: str):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for h in hx if isinstance(hx, tuple) else (hx,):
            if h is not None and h.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {h.dim()}D instead")
        return input.dim() == 2

    def _check_sizes(self, input, hidden, name: str) -> None:
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {self.input_size}")
        if hidden is None:
            return
        if input.shape[0] != hidden.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match {name} batch size {hidden.shape[0]}")
        if hidden.shape[1] != self.hidden_size:
            raise RuntimeError(
                f"{name} has inconsistent hidden_size: got {hidden.shape[1]}, expected {self.hidden_size}"
            )

    def _zeros(self, input):
        return ops.zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)


class RNNCell(RNNCellBase):
    """``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (or relu)."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", device=None,
        dtype=None,
    ) -> None:  # fmt: skip
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        batched = self._batched(input, hx, "RNNCell")
        if not batched:
            input = input.unsqueeze(0)
        hx = self._zeros(input) if hx is None else (hx if batched else hx.unsqueeze(0))
        self._check_sizes(input, hx, "hidden0")
        pre = F.linear(input, self.weight_ih, self.bias_ih) + F.linear(hx, self.weight_hh, self.bias_hh)
        if self.nonlinearity == "tanh":
            out = ops.tanh(pre)
        elif self.nonlinearity == "relu":
            out = ops.relu(pre)
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; gates input, forget, cell, output; returns ``(h', c')``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        batched = self._batched(input, hx, "LSTMCell")
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            h, c = self._zeros(input), self._zeros(input)
        else:
            h, c = hx if batched else (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        self._check_sizes(input, h, "hidden0")
        self._check_sizes(input, c, "hidden1")
        gates = F.linear(input, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh)
        i, f, g, o = gates.chunk(4, dim=1)
        c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
        h = ops.sigmoid(o) * ops.tanh(c)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step; gates reset, update, new."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        batched = self._batched(input, hx, "GRUCell")
        if not batched:
            input = input.unsqueeze(0)
        h = self._zeros(input) if hx is None else (hx if batched else hx.unsqueeze(0))
        self._check_sizes(input, h, "hidden0")
        x_r, x_z, x_n = F.linear(input, self.weight_ih, self.bias_ih).chunk(3, dim=1)
        h_r, h_z, h_n = F.linear(h, self.weight_hh, self.bias_hh).chunk(3, dim=1)
        r = ops.sigmoid(x_r + h_r)
        z = ops.sigmoid(x_z + h_z)
        n = ops.tanh(x_n + r * h_n)
        out = (1 - z) * n + z * h
        return out if batched else out.squeeze(0)
