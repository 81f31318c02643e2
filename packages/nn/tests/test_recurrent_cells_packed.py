"""RNN/LSTM/GRU cells, and the recurrent layers on packed sequences, against PyTorch; the packing
functions of ``nn.utils.rnn``."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

from breadth_oracle import check_layer  # noqa: E402

import ember  # noqa: E402


def _x(*shapes):
    return lambda rng: [rng.standard_normal(shape) for shape in shapes]


CELLS = [
    ("RNNCell", lambda nn: nn.RNNCell(4, 3), _x((5, 4), (5, 3))),
    ("RNNCell-relu-nobias-nohx", lambda nn: nn.RNNCell(4, 3, bias=False, nonlinearity="relu"), _x((5, 4))),
    ("RNNCell-unbatched", lambda nn: nn.RNNCell(4, 3), _x((4,), (3,))),
    ("GRUCell", lambda nn: nn.GRUCell(4, 3), _x((5, 4), (5, 3))),
    ("GRUCell-unbatched-nohx", lambda nn: nn.GRUCell(4, 3, bias=False), _x((4,))),
    ("LSTMCell-nohx", lambda nn: nn.LSTMCell(4, 3), _x((5, 4))),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,build,inputs", CELLS, ids=[c[0] for c in CELLS])
def test_cell_matches_torch(name, build, inputs, dtype):
    check_layer(build, inputs, dtype)


@pytest.mark.parametrize("batched", [True, False])
def test_lstm_cell_with_state_matches_torch(batched):
    shape = (5,) if batched else ()

    def call(module, x, h, c):
        return module(x, (h, c))

    check_layer(lambda nn: nn.LSTMCell(4, 3), _x((*shape, 4), (*shape, 3), (*shape, 3)), "float64", call=call)


LENGTHS = [5, 2, 4]


def _packed_call(batch_first: bool):
    def call(module, x, h=None):
        lib = torch if isinstance(module, torch.nn.Module) else ember
        packed = lib.nn.utils.rnn.pack_padded_sequence(x, LENGTHS, batch_first=batch_first, enforce_sorted=False)
        out, state = module(packed) if h is None else module(packed, h)
        padded, lengths = lib.nn.utils.rnn.pad_packed_sequence(out, batch_first=batch_first, padding_value=-1.0)
        assert lengths.tolist() == LENGTHS
        return padded, state

    return call


PACKED = [
    ("RNN", lambda nn: nn.RNN(3, 4, num_layers=2), False),
    ("GRU-bidirectional", lambda nn: nn.GRU(3, 4, bidirectional=True), False),
    ("LSTM-bidirectional-batch-first", lambda nn: nn.LSTM(3, 4, batch_first=True, bidirectional=True), True),
    ("LSTM-proj-two-layers", lambda nn: nn.LSTM(3, 4, num_layers=2, proj_size=2), False),
]


@pytest.mark.parametrize("name,build,batch_first", PACKED, ids=[p[0] for p in PACKED])
def test_recurrent_layer_on_a_packed_sequence_matches_torch(name, build, batch_first):
    shape = (3, 5, 3) if batch_first else (5, 3, 3)
    check_layer(build, _x(shape), "float64", call=_packed_call(batch_first))


def test_packed_gru_with_initial_state_matches_torch():
    check_layer(lambda nn: nn.GRU(3, 4), _x((5, 3, 3), (1, 3, 4)), "float64", call=_packed_call(False))


def test_packing_functions_match_torch():
    rng = np.random.default_rng(0)
    seqs = [rng.standard_normal((n, 2)) for n in (3, 5, 1)]
    results = []
    for lib in (torch, ember):
        U = lib.nn.utils.rnn
        tensors = [lib.tensor(s, requires_grad=True) for s in seqs]
        padded = U.pad_sequence(tensors, batch_first=True, padding_value=7.0)
        left = U.pad_sequence(tensors, padding_side="left")
        packed = U.pack_sequence(tensors, enforce_sorted=False)
        unpacked = U.unpack_sequence(packed)
        unpadded = U.unpad_sequence(padded, lib.tensor([3, 5, 1]), batch_first=True)
        again, lengths = U.pad_packed_sequence(packed, total_length=6)
        (packed.data * lib.arange(packed.data.numel()).reshape(packed.data.shape)).sum().backward()
        results.append(
            [padded, left, packed.data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices, again,
             lengths, *unpacked, *unpadded, *(t.grad for t in tensors)]
        )  # fmt: skip
    for theirs, ours in zip(*results, strict=True):
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)


def test_packing_errors_match_torch():
    cases = [
        (lambda U, lib: U.pack_padded_sequence(lib.ones(4, 2), [1, 3]), RuntimeError),
        (lambda U, lib: U.pack_padded_sequence(lib.ones(4, 2), [3, 0], enforce_sorted=False), RuntimeError),
        (lambda U, lib: U.pad_packed_sequence(U.pack_sequence([lib.ones(3)]), total_length=2), ValueError),
        (lambda U, lib: lib.nn.RNNCell(2, 3)(lib.ones(1, 1, 2)), ValueError),
    ]
    for fn, error in cases:
        with pytest.raises(error) as theirs:
            fn(torch.nn.utils.rnn, torch)
        with pytest.raises(error) as ours:
            fn(ember.nn.utils.rnn, ember)
        assert str(ours.value) == str(theirs.value)


def test_lstm_on_a_sorted_packed_sequence_matches_torch():
    def call(module, x):
        lib = torch if isinstance(module, torch.nn.Module) else ember
        packed = lib.nn.utils.rnn.pack_padded_sequence(x, [4, 4, 2], enforce_sorted=True)
        assert packed.sorted_indices is None
        out, (h, c) = module(packed)
        return out.data, h, c

    check_layer(lambda nn: nn.LSTM(3, 2, bidirectional=True), _x((4, 3, 3)), "float64", call=call)
