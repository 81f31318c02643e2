"""The ``mpi`` backend: every collective of a group on one MPI communicator, through ``mpi4py``.

Each collective starts MPI's non-blocking form (``Iallreduce``, ``Ialltoallv``, ...) on the tensors'
memory (NumPy views of the storage, no copy when the tensor is contiguous) and returns a ``Work``
whose ``finish`` writes results back where a copy was needed.

Dtypes MPI cannot reduce: ``float16`` and ``bfloat16`` are reduced in ``float32`` (one rounding, at
the end: more exact than a reduction in half precision, as in PyTorch's CPU backends, and the same on
every rank); ``bool`` reduces as bytes with the logical ops (``SUM``/``MAX``/``BOR`` are "or",
``PRODUCT``/``MIN``/``BAND`` are "and", ``BXOR`` is "xor"). Moving data (broadcast, gather, ...)
never converts: 2-byte floats travel as ``uint16`` and ``bool`` as ``uint8``.
``AVG`` is a sum divided by the group's size (truncated toward zero for integers), ``PREMUL_SUM`` a sum
of inputs scaled first.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import numpy as np

from ember.core import dtypes as D
from ember.core.tensor import Tensor
from ember.distributed._mpi_init import mpi
from ember.distributed._types import RedOpType, ReduceOp, red_op_type
from ember.distributed._work import CompletedWork, Work

__all__ = ["MPIBackend"]

_HALF = (D.float16, D.bfloat16)
_MOVE_AS = {2: np.uint16}


def _array(tensor: Tensor) -> np.ndarray:
    if tensor.device.type != "cpu":
        raise RuntimeError(f"the mpi backend works on cpu tensors, got a tensor on {tensor.device}")
    return tensor._require_data("communicate the data")


def _movable(array: np.ndarray) -> np.ndarray:
    """A view MPI can move bit for bit: ``bfloat16``/``float16`` as ``uint16``, ``bool`` as ``uint8``."""
    if array.dtype == np.bool_:
        return array.view(np.uint8)
    if array.dtype.kind == "V" or array.dtype.name == "bfloat16" or array.dtype == np.float16:
        return array.view(np.uint16)
    return array


def _contiguous(array: np.ndarray) -> tuple[np.ndarray, bool]:
    """The array itself when C-contiguous, else a contiguous copy (then results must be copied back)."""
    if array.flags.c_contiguous:
        return array, False
    return np.ascontiguousarray(array), True


class MPIBackend:
    """The collectives of one group over ``comm`` (an ``mpi4py`` intracommunicator)."""

    def __init__(self, comm: Any, timeout: timedelta) -> None:
        self.comm = comm
        self.timeout = timeout
        self.MPI = mpi()

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return self.comm.Get_size()

    def name(self) -> str:
        return "mpi"

    def _work(self, requests: list[Any], finish: Any = None) -> Work:
        return Work(requests, finish or (lambda: []), self.timeout)

    # -- reductions -----------------------------------------------------------------------

    def _reduction_buffer(self, tensor: Tensor, op: RedOpType | ReduceOp) -> tuple[np.ndarray, Any, Any]:
        """(the buffer MPI reduces, the MPI op, a function writing the result back into ``tensor``)."""
        kind = red_op_type(op)
        array = _array(tensor)
        dtype = tensor.dtype
        MPI = self.MPI
        if dtype.is_complex and kind not in (RedOpType.SUM, RedOpType.AVG, RedOpType.PRODUCT, RedOpType.PREMUL_SUM):
            raise ValueError(f"all_reduce does not support {kind.name} on complex tensors")
        if dtype.is_floating_point and kind in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR):
            raise RuntimeError(f"the bitwise reduction {kind.name} is not supported on {dtype} tensors")
        if kind is RedOpType.UNUSED:
            raise ValueError("ReduceOp.UNUSED is not a reduction")
        if dtype is D.bool_:
            mpi_op = {
                RedOpType.SUM: MPI.LOR, RedOpType.MAX: MPI.LOR, RedOpType.BOR: MPI.LOR, RedOpType.AVG: MPI.LOR,
                RedOpType.PRODUCT: MPI.LAND, RedOpType.MIN: MPI.LAND, RedOpType.BAND: MPI.LAND,
                RedOpType.BXOR: MPI.LXOR, RedOpType.PREMUL_SUM: MPI.LOR,
            }[kind]  # fmt: skip
            buffer = array.astype(np.uint8)
            return buffer, mpi_op, lambda result: array.__setitem__(..., result.astype(np.bool_))
        mpi_op = {
            RedOpType.SUM: MPI.SUM, RedOpType.AVG: MPI.SUM, RedOpType.PREMUL_SUM: MPI.SUM,
            RedOpType.PRODUCT: MPI.PROD, RedOpType.MIN: MPI.MIN, RedOpType.MAX: MPI.MAX,
            RedOpType.BAND: MPI.BAND, RedOpType.BOR: MPI.BOR, RedOpType.BXOR: MPI.BXOR,
        }[kind]  # fmt: skip
        if dtype in _HALF:
            buffer, copied = array.astype(np.float32), True
        else:
            buffer, copied = _contiguous(array)
        if kind is RedOpType.PREMUL_SUM:
            factor = op.factor if isinstance(op, ReduceOp) else 1
            if isinstance(factor, Tensor):
                factor = factor.item()
            if not copied:
                buffer, copied = buffer.copy(), True  # the input is scaled, not the caller's tensor in place
            np.multiply(buffer, factor, out=buffer, casting="unsafe")
        size = self.size()

        def write_back(result: np.ndarray) -> None:
            if kind is RedOpType.AVG:
                if result.dtype.kind in "iu":
                    result = np.trunc(result / size).astype(result.dtype)
                else:
                    result = result / size
            if copied or kind is RedOpType.AVG:
                array[...] = result.astype(array.dtype, copy=False)

        return buffer, mpi_op, write_back

    def all_reduce(self, tensor: Tensor, op: Any) -> Work:
        buffer, mpi_op, write_back = self._reduction_buffer(tensor, op)
        request = self.comm.Iallreduce(self.MPI.IN_PLACE, buffer, mpi_op)
        return self._work([request], lambda: (write_back(buffer), [tensor])[1])

    def reduce(self, tensor: Tensor, root: int, op: Any) -> Work:
        buffer, mpi_op, write_back = self._reduction_buffer(tensor, op)
        if self.rank() == root:
            request = self.comm.Ireduce(self.MPI.IN_PLACE, buffer, mpi_op, root)
            return self._work([request], lambda: (write_back(buffer), [tensor])[1])
        request = self.comm.Ireduce(buffer, None, mpi_op, root)
        return self._work([request], lambda: [tensor])

    def reduce_scatter_tensor(self, output: Tensor, input: Tensor, op: Any) -> Work:
        in_buffer, mpi_op, _ = self._reduction_buffer(input, op)
        out_buffer, _, write_back = self._reduction_buffer(output, _output_op(op))
        if out_buffer.size * self.size() != in_buffer.size:
            raise ValueError(
                f"reduce_scatter_tensor: the input has {in_buffer.size} elements, which is not "
                f"{self.size()} x the output's {out_buffer.size}"
            )
        request = self.comm.Ireduce_scatter_block(in_buffer.reshape(-1), out_buffer.reshape(-1), mpi_op)
        return self._work([request], lambda: (write_back(out_buffer), [output])[1])

    def reduce_scatter(self, output: Tensor, inputs: Sequence[Tensor], op: Any) -> Work:
        flat = [self._reduction_buffer(t, op)[0].reshape(-1) for t in inputs]
        out_buffer, mpi_op, write_back = self._reduction_buffer(output, _output_op(op))
        counts = [f.size for f in flat]
        if counts[self.rank()] != out_buffer.size:
            raise ValueError("reduce_scatter: the output must have as many elements as this rank's input")
        send = np.concatenate(flat) if flat else np.empty(0, out_buffer.dtype)
        request = self.comm.Ireduce_scatter(send, out_buffer.reshape(-1), counts, mpi_op)
        return self._work([request], lambda: (write_back(out_buffer), [output])[1])

    # -- moving data -----------------------------------------------------------------------

    def broadcast(self, tensor: Tensor, root: int) -> Work:
        array = _movable(_array(tensor))
        buffer, copied = _contiguous(array)
        request = self.comm.Ibcast(buffer, root)

        def finish() -> list[Tensor]:
            if copied:
                array[...] = buffer
            return [tensor]

        return self._work([request], finish)

    def all_gather_into_tensor(self, output: Tensor, input: Tensor) -> Work:
        out = _movable(_array(output))
        send, _ = _contiguous(_movable(_array(input)))
        if send.size * self.size() != out.size:
            raise ValueError(
                f"all_gather_into_tensor: the output has {out.size} elements, not {self.size()} x the input's {send.size}"
            )
        recv, copied = _contiguous(out)
        request = self.comm.Iallgather(send.reshape(-1), recv.reshape(-1))

        def finish() -> list[Tensor]:
            if copied:
                out[...] = recv
            return [output]

        return self._work([request], finish)

    def all_gather(self, outputs: Sequence[Tensor], input: Tensor) -> Work:
        send, _ = _contiguous(_movable(_array(input)))
        targets = [_movable(_array(t)) for t in outputs]
        counts = [t.size for t in targets]
        if counts[self.rank()] != send.size:
            raise ValueError("all_gather: this rank's output tensor must have as many elements as its input")
        recv = np.empty(sum(counts), dtype=send.dtype)
        request = self.comm.Iallgatherv(send.reshape(-1), [recv, counts])

        def finish() -> list[Tensor]:
            start = 0
            for target, count in zip(targets, counts, strict=True):
                target[...] = recv[start : start + count].reshape(target.shape)
                start += count
            return list(outputs)

        return self._work([request], finish)

    def gather(self, outputs: Sequence[Tensor] | None, input: Tensor, root: int) -> Work:
        send, _ = _contiguous(_movable(_array(input)))
        if self.rank() != root:
            return self._work([self.comm.Igather(send.reshape(-1), None, root)])
        targets = [_movable(_array(t)) for t in outputs or []]
        recv = np.empty(send.size * self.size(), dtype=send.dtype)
        request = self.comm.Igather(send.reshape(-1), recv, root)

        def finish() -> list[Tensor]:
            for target, chunk in zip(targets, np.split(recv, self.size()), strict=True):
                target[...] = chunk.reshape(target.shape)
            return list(outputs or [])

        return self._work([request], finish)

    def scatter(self, output: Tensor, inputs: Sequence[Tensor] | None, root: int) -> Work:
        out = _movable(_array(output))
        recv, copied = _contiguous(out)
        send = None
        if self.rank() == root:
            send = np.concatenate([_movable(_array(t)).reshape(-1) for t in inputs or []])
        request = self.comm.Iscatter(send, recv.reshape(-1), root)

        def finish() -> list[Tensor]:
            if copied:
                out[...] = recv
            return [output]

        return self._work([request], finish)

    def all_to_all_single(
        self, output: Tensor, input: Tensor, output_split_sizes: list[int] | None, input_split_sizes: list[int] | None
    ) -> Work:
        out = _movable(_array(output))
        send, _ = _contiguous(_movable(_array(input)))
        size = self.size()
        if not output_split_sizes and not input_split_sizes:
            if send.size != out.size or send.size % size:
                raise ValueError(
                    f"all_to_all_single: input and output must have the same number of elements, divisible by the "
                    f"group's size {size} (got {send.size} and {out.size})"
                )
            recv, copied = _contiguous(out)
            request = self.comm.Ialltoall(send.reshape(-1), recv.reshape(-1))
        else:
            in_row = int(np.prod(send.shape[1:], dtype=np.int64)) if send.ndim else 1
            out_row = int(np.prod(out.shape[1:], dtype=np.int64)) if out.ndim else 1
            in_splits = input_split_sizes or [send.shape[0] // size] * size
            out_splits = output_split_sizes or [out.shape[0] // size] * size
            if len(in_splits) != size or len(out_splits) != size:
                raise ValueError(f"all_to_all_single: split sizes need one entry per rank ({size})")
            if sum(in_splits) != send.shape[0] or sum(out_splits) != out.shape[0]:
                raise ValueError("all_to_all_single: split sizes must add up to the tensors' first dimension")
            send_counts = [s * in_row for s in in_splits]
            recv_counts = [s * out_row for s in out_splits]
            recv, copied = _contiguous(out)
            request = self.comm.Ialltoallv(
                [send.reshape(-1), (send_counts, _displacements(send_counts))],
                [recv.reshape(-1), (recv_counts, _displacements(recv_counts))],
            )

        def finish() -> list[Tensor]:
            if copied:
                out[...] = recv
            return [output]

        return self._work([request], finish)

    def all_to_all(self, outputs: Sequence[Tensor], inputs: Sequence[Tensor]) -> Work:
        sources = [_contiguous(_movable(_array(t)))[0].reshape(-1) for t in inputs]
        targets = [_movable(_array(t)) for t in outputs]
        send = np.concatenate(sources) if sources else np.empty(0, np.uint8)
        send_counts = [s.size for s in sources]
        recv_counts = [t.size for t in targets]
        recv = np.empty(sum(recv_counts), dtype=send.dtype)
        request = self.comm.Ialltoallv(
            [send, (send_counts, _displacements(send_counts))], [recv, (recv_counts, _displacements(recv_counts))]
        )

        def finish() -> list[Tensor]:
            start = 0
            for target, count in zip(targets, recv_counts, strict=True):
                target[...] = recv[start : start + count].reshape(target.shape)
                start += count
            return list(outputs)

        return self._work([request], finish)

    def barrier(self) -> Work:
        return self._work([self.comm.Ibarrier()])

    # -- point to point ----------------------------------------------------------------------

    def send(self, tensor: Tensor, dst: int, tag: int) -> Work:
        buffer, _ = _contiguous(_movable(_array(tensor)))
        return self._work([self.comm.Isend(buffer, dst, tag)])

    def recv(self, tensor: Tensor, src: int | None, tag: int) -> Work:
        out = _movable(_array(tensor))
        buffer, copied = _contiguous(out)
        MPI = self.MPI
        status = MPI.Status()
        request = self.comm.Irecv(buffer, MPI.ANY_SOURCE if src is None else src, MPI.ANY_TAG if tag < 0 else tag)
        work = _RecvWork([request], lambda: [], self.timeout, status)

        def finish() -> list[Tensor]:
            if copied:
                out[...] = buffer
            return [tensor]

        work._finish = finish
        return work


class _RecvWork(Work):
    """A receive: ``source_rank()`` tells who sent (for a receive from any source)."""

    def __init__(self, requests: list[Any], finish: Any, timeout: timedelta, status: Any) -> None:
        super().__init__(requests, finish, timeout)
        self._status = status

    def _poll(self) -> bool:
        return self._requests[0].Test(self._status)

    def source_rank(self) -> int:
        return self._status.Get_source()


def _output_op(op: Any) -> RedOpType:
    """The op that finishes a reduction's output: a pre-multiplied sum is a plain sum by then."""
    kind = red_op_type(op)
    return RedOpType.SUM if kind is RedOpType.PREMUL_SUM else kind


def _displacements(counts: list[int]) -> list[int]:
    out, total = [], 0
    for count in counts:
        out.append(total)
        total += count
    return out


def empty_work() -> Work:
    return CompletedWork()
