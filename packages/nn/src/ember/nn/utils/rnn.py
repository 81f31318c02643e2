"""Variable-length sequences for the recurrent layers: ``PackedSequence`` and the functions that
pack, pad and unpack, with ``torch.nn.utils.rnn``'s names and layouts.

A packed sequence stores the time steps of a batch one after the other, each holding only the
sequences still running at that step (longest first): ``data`` is ``(sum(lengths), *)`` and
``batch_sizes[t]`` says how many rows step ``t`` has. ``sorted_indices`` maps the packed order to
the caller's batch order (``unsorted_indices`` back), so results come back in the caller's order.
Packing and padding are gathers and concatenations, so gradients flow through them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ember.core import dtypes as D
from ember.core.aten.shape.joining import cat, stack
from ember.core.creation import tensor as make_tensor
from ember.core.tensor import Tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


class _PackedSequenceBase(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceBase):
    """The packed steps of a batch of sequences; build it with ``pack_padded_sequence`` or ``pack_sequence``."""

    def __new__(
        cls, data: Tensor, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
        unsorted_indices: Tensor | None = None,
    ) -> PackedSequence:  # fmt: skip
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PyTorch's legacy form: PackedSequence((data, batch_sizes))
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def double(self) -> PackedSequence:
        return self.to(dtype=D.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=D.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=D.float16)

    def detach(self) -> PackedSequence:
        return type(self)(self.data.detach(), self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation``."""
    if permutation is None:
        return None
    order = np.asarray(permutation.numpy(), dtype=np.int64)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return make_tensor(inverse, dtype=D.int64, device=permutation.device)


def _lengths_array(lengths: Any) -> np.ndarray:
    if isinstance(lengths, Tensor):
        return np.asarray(lengths.numpy(), dtype=np.int64).reshape(-1)
    return np.asarray(list(lengths), dtype=np.int64)


def pack_padded_sequence(
    input: Tensor, lengths: Any, batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """Pack a padded ``(T, B, *)`` (or ``(B, T, *)``) batch whose sequences have ``lengths``."""
    sizes = _lengths_array(lengths)
    if enforce_sorted:
        if np.any(sizes[:-1] < sizes[1:]):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
                "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if "
                "you do not need ONNX exportability."
            )
        sorted_indices = None
        order = np.arange(sizes.size)
    else:
        order = np.argsort(-sizes, kind="stable")
        sorted_indices = make_tensor(order, dtype=D.int64, device=input.device)
    if batch_first:
        input = input.transpose(0, 1)
    if sizes.size != input.shape[1]:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {sizes.size} (batch_size={input.shape[1]})"
        )
    if sizes.size and sizes.min() <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0"
        )
    ordered = sizes[order]
    if ordered.size and ordered[0] > input.shape[0]:
        raise RuntimeError(
            f"Expected sequence length to be larger than or equal to the longest length, got {input.shape[0]} "
            f"and {ordered[0]}"
        )
    steps = int(ordered[0]) if ordered.size else 0
    batch_sizes = np.array([(ordered > t).sum() for t in range(steps)], dtype=np.int64)
    if sorted_indices is not None:
        input = input.index_select(1, sorted_indices)
    data = cat([input[t, : int(batch_sizes[t])] for t in range(steps)], 0)
    return PackedSequence(data, make_tensor(batch_sizes, dtype=D.int64), sorted_indices, None)


def _batch_sizes(sequence: PackedSequence) -> np.ndarray:
    return np.asarray(sequence.batch_sizes.numpy(), dtype=np.int64)


def pad_packed_sequence(
    sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0, total_length: int | None = None
) -> tuple[Tensor, Tensor]:
    """The padded batch ``(T, B, *)`` (or ``(B, T, *)``) and the lengths, in the caller's batch order."""
    batch_sizes = _batch_sizes(sequence)
    steps = batch_sizes.size
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in input, but got "
                f"total_length={total_length} and max sequence length being {steps}"
            )
    else:
        total_length = steps
    batch = int(batch_sizes[0]) if steps else 0
    data = sequence.data
    rows, start = [], 0
    for size in batch_sizes:
        step = data[start : start + int(size)]
        start += int(size)
        if size < batch:
            filler = data.new_full((batch - int(size), *data.shape[1:]), padding_value)
            step = cat([step, filler], 0)
        rows.append(step)
    for _ in range(total_length - steps):
        rows.append(data.new_full((batch, *data.shape[1:]), padding_value))
    padded = stack(rows, 0) if rows else data.new_zeros((0, batch, *data.shape[1:]))
    lengths = np.array([(batch_sizes > i).sum() for i in range(batch)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths[np.asarray(sequence.unsorted_indices.numpy(), dtype=np.int64)]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, make_tensor(lengths, dtype=D.int64)


def pad_sequence(
    sequences: Tensor | Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:  # fmt: skip
    """Stack sequences of different lengths ``(L_i, *)`` into ``(T, B, *)`` (or ``(B, T, *)``), padded."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            filler = s.new_full((missing, *s.shape[1:]), padding_value)
            s = cat([s, filler] if padding_side == "right" else [filler, s], 0)
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """The sequences of a padded batch, each cut to its length."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[: int(n)] for seq, n in zip(padded_sequences.unbind(0), _lengths_array(lengths), strict=True)]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences ``(L_i, *)``, longest first unless ``enforce_sorted=False``."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a packed sequence holds, in the caller's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def pack_like(padded: Tensor, packed: PackedSequence) -> PackedSequence:
    """Pack ``padded`` ``(T, B, *)`` (caller's batch order) with the very layout of ``packed``."""
    if packed.sorted_indices is not None:
        padded = padded.index_select(1, packed.sorted_indices)
    batch_sizes = _batch_sizes(packed)
    data = cat([padded[t, : int(size)] for t, size in enumerate(batch_sizes)], 0)
    return PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
