"""``SobolEngine``: (scrambled) Sobol' sequences, as ``torch.quasirandom.SobolEngine``.

Point ``i`` of a Sobol' sequence is, per dimension, the XOR of the direction numbers chosen by the
bits of ``i``'s Gray code; walking the sequence in Gray-code order changes one bit per step, so each
new point is the previous one XOR a single direction number, the one indexed by the lowest zero bit
of the step's counter (Antonov and Saleev). The state is therefore one ``MAXBIT``-bit integer per
dimension (``quasi``); a draw of ``n`` points is a cumulative XOR along the steps, done here for all
the steps at once. The unscrambled points are PyTorch's exactly (same table, same order).

Scrambling (Owen's linear matrix scramble with a digital shift) multiplies each dimension's
direction numbers, as vectors of binary digits from the most significant, by a random lower
triangular matrix with a unit diagonal, and starts the walk from a random ``shift``. The random bits
come from Ember's generator, drawn in the shapes PyTorch draws them, so a seed gives the same points
on every run but not PyTorch's points (its CPU generator is a Mersenne Twister). A scrambled
sequence keeps the net property: the first ``2**m`` points put exactly one point in each interval
``[k / 2**m, (k + 1) / 2**m)`` of every coordinate.
"""

from __future__ import annotations

import numpy as np

from ember.core import functions as _f
from ember.core.generator import Generator
from ember.core.promotion import get_default_dtype
from ember.core.tensor import Tensor, from_array
from ember.quasirandom.directions import MAXBIT, MAXDIM, initial_state

_SCALE = 2.0**-MAXBIT


def _lowest_zero_bits(start: int, n: int) -> np.ndarray:
    """For each counter ``start .. start + n - 1``, the index of its lowest zero bit."""
    counters = np.arange(start, start + n, dtype=np.int64)
    lowest_one_of_complement = ~counters & (counters + 1)  # the lowest zero bit, alone
    return np.log2(lowest_one_of_complement).astype(np.int64)


class SobolEngine:
    """An engine that draws the points of a Sobol' sequence of ``dimension`` coordinates in [0, 1),
    optionally scrambled (``scramble=True``; ``seed`` makes the scrambling reproducible).

    Direction numbers are those of S. Joe and F. Y. Kuo, search criterion D(6), for up to 21201
    dimensions (https://web.maths.unsw.edu.au/~fkuo/sobol/).

    Example::

        >>> engine = ember.quasirandom.SobolEngine(dimension=2)
        >>> engine.draw(4)
        tensor([[0.0000, 0.0000],
                [0.5000, 0.5000],
                [0.7500, 0.2500],
                [0.2500, 0.7500]])
    """

    MAXBIT = MAXBIT
    MAXDIM = MAXDIM

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None) -> None:
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        self._state = initial_state(dimension)
        if scramble:
            self._shift = self._scrambled()
        else:
            self._shift = np.zeros(dimension, dtype=np.int64)
        self._quasi = self._shift.copy()
        # The first point of the walk is the shift itself, converted once in the default dtype.
        self._first_point = _f["div"](from_array(self._shift.copy()), 2**self.MAXBIT).reshape(1, -1)
        self.num_generated = 0

    # PyTorch's state attributes, as int64 tensors that share memory with the engine's arrays.
    @property
    def sobolstate(self) -> Tensor:
        return from_array(self._state)

    @property
    def shift(self) -> Tensor:
        return from_array(self._shift)

    @property
    def quasi(self) -> Tensor:
        return from_array(self._quasi)

    def _scrambled(self) -> np.ndarray:
        """Scramble the direction numbers in place; return the random shift."""
        generator = None
        if self.seed is not None:
            generator = Generator()
            generator.manual_seed(self.seed)
        shift_bits = _f["randint"](2, (self.dimension, self.MAXBIT), generator=generator).numpy()
        shift = shift_bits @ (np.int64(1) << np.arange(self.MAXBIT, dtype=np.int64))
        matrices = _f["randint"](2, (self.dimension, self.MAXBIT, self.MAXBIT), generator=generator).numpy()
        matrices = np.tril(matrices)
        matrices[:, np.arange(self.MAXBIT), np.arange(self.MAXBIT)] = 1
        # digits[d, j, p]: binary digit p (from the most significant) of direction number j.
        significance = np.arange(self.MAXBIT - 1, -1, -1, dtype=np.int64)
        digits = (self._state[:, :, None] >> significance) & 1
        scrambled = np.matmul(digits, matrices.transpose(0, 2, 1)) & 1  # L @ digits, per number
        self._state = scrambled @ (np.int64(1) << significance)
        return shift

    def _walk(self, n: int, start: int) -> np.ndarray:
        """The next ``n`` states of the walk (``(n, dimension)`` int64), counters from ``start``;
        the engine's state moves to the last of them."""
        if n <= 0:
            return np.zeros((0, self.dimension), dtype=np.int64)
        steps = self._state[:, _lowest_zero_bits(start, n)].T  # (n, dimension)
        points = np.bitwise_xor.accumulate(steps, axis=0) ^ self._quasi
        self._quasi[:] = points[-1]
        return points

    def draw(self, n: int = 1, out: Tensor | None = None, dtype=None) -> Tensor:
        """The next ``n`` points, an ``(n, dimension)`` tensor (dtype: the default dtype unless given)."""
        if dtype is None:
            dtype = get_default_dtype()
        walked_rows = n - 1 if self.num_generated == 0 else n
        if walked_rows < 0:  # PyTorch's error for the walk's negative length
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {walked_rows}: [{walked_rows}, {self.dimension}]"
            )
        if self.num_generated == 0:
            rest = self._to_points(self._walk(n - 1, 0), dtype)
            result = _f["cat"]((self._first_point.to(dtype), rest), dim=-2) if n > 1 else self._first_point.to(dtype)
        else:
            result = self._to_points(self._walk(n, self.num_generated - 1), dtype)
        self.num_generated += n
        if out is not None:
            if tuple(out.shape) != tuple(result.shape):
                raise RuntimeError(
                    f"SobolEngine.draw: out has shape {tuple(out.shape)}, but the points need "
                    f"{tuple(result.shape)} (Ember cannot resize a tensor in place)"
                )
            out.copy_(result)
            return out
        return result

    def _to_points(self, walked: np.ndarray, dtype) -> Tensor:
        # As PyTorch: the integers converted to the result's dtype, then scaled by 2**-MAXBIT.
        values = from_array(np.ascontiguousarray(walked)).to(dtype)
        return values * _SCALE

    def draw_base2(self, m: int, out: Tensor | None = None, dtype=None) -> Tensor:
        """The next ``2**m`` points; the total drawn must stay a power of 2 (the net property)."""
        n = 2**m
        total_n = self.num_generated + n
        if total_n & (total_n - 1) != 0:
            raise ValueError(
                "The balance properties of Sobol' points require "
                f"n to be a power of 2. {self.num_generated} points have been "
                f"previously generated, then: n={self.num_generated}+2**{m}={total_n}. "
                "If you still want to do this, please use "
                "'SobolEngine.draw()' instead."
            )
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> SobolEngine:
        """Back to the first point."""
        self._quasi[:] = self._shift
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> SobolEngine:
        """Skip ``n`` points, as drawing them would."""
        if self.num_generated == 0:
            self._walk(n - 1, 0)
        else:
            self._walk(n, self.num_generated - 1)
        self.num_generated += n
        return self

    def __repr__(self) -> str:
        parts = [f"dimension={self.dimension}"]
        if self.scramble:
            parts.append("scramble=True")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(parts)})"
