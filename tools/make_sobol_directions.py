"""Write ``ember/quasirandom/sobol_directions.bin``: the Sobol' direction numbers of Joe and Kuo.

The table is S. Joe and F. Y. Kuo's ``new-joe-kuo-6.21201`` (https://web.maths.unsw.edu.au/~fkuo/sobol/),
the one PyTorch's ``SobolEngine`` uses: for each dimension after the first, a primitive polynomial
over GF(2) of degree ``s`` and ``s`` initial direction integers ``m_1 .. m_s`` (``m_k`` odd, below
``2**k``). Dimension ``j`` (from 1) takes the ``j``-th primitive polynomial in order of degree,
then of value; this script enumerates them itself. The initial integers are read back from the
oracle, PyTorch (its initialized state holds them shifted into the top bits), and every dimension's
remaining direction numbers are checked against the recurrence, so the file is the table exactly.

    python tools/make_sobol_directions.py     # needs torch

File format (zlib-compressed): b"SOBOLJK1", the dimension count N as uint32 (little-endian), N - 1
polynomials as uint32 (bit i is the coefficient of x**i), then a bit stream (numpy packbits, big
bit order) holding, dimension by dimension and k = 1 .. s, ``m_k >> 1`` in ``k - 1`` bits.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

MAXBIT = 30
MAXDIM = 21201
TARGET = Path(__file__).resolve().parent.parent / "packages/tensor/src/ember/quasirandom/sobol_directions.bin"


def _mulmod(a: int, b: int, poly: int, degree: int) -> int:
    result = 0
    while b:
        if b & 1:
            result ^= a
        b >>= 1
        a <<= 1
        if (a >> degree) & 1:
            a ^= poly
    return result


def _powmod(exponent: int, poly: int, degree: int) -> int:
    result, base = 1, 2 if degree > 1 else 1  # x mod (x + 1) is 1
    while exponent:
        if exponent & 1:
            result = _mulmod(result, base, poly, degree)
        base = _mulmod(base, base, poly, degree)
        exponent >>= 1
    return result


def _prime_factors(n: int) -> list[int]:
    factors, q = [], 2
    while q * q <= n:
        if n % q == 0:
            factors.append(q)
            while n % q == 0:
                n //= q
        q += 1
    return factors + ([n] if n > 1 else [])


def primitive_polynomials(count: int) -> list[int]:
    """The first ``count`` primitive polynomials over GF(2), by degree then value: x has order 2**s - 1."""
    found: list[int] = []
    degree = 1
    while len(found) < count:
        order = (1 << degree) - 1
        factors = _prime_factors(order)
        for poly in range((1 << degree) | 1, 1 << (degree + 1), 2):
            if _powmod(order, poly, degree) == 1 and all(_powmod(order // q, poly, degree) != 1 for q in factors):
                found.append(poly)
                if len(found) == count:
                    break
        degree += 1
    return found


def main() -> None:
    import torch

    state = torch.zeros(MAXDIM, MAXBIT, dtype=torch.long)
    torch._sobol_engine_initialize_state_(state, MAXDIM)
    m = state.numpy() >> (MAXBIT - 1 - np.arange(MAXBIT))
    polys = primitive_polynomials(MAXDIM - 1)
    bits: list[np.ndarray] = []
    for d in range(1, MAXDIM):
        poly = polys[d - 1]
        s = poly.bit_length() - 1
        column = [int(v) for v in m[d]]
        for k in range(s, MAXBIT):  # the recurrence of Bratley and Fox, checked on the whole row
            value = column[k - s] ^ (column[k - s] << s)
            for i in range(1, s):
                if (poly >> (s - i)) & 1:
                    value ^= column[k - i] << i
            assert value == column[k], f"dimension {d}: the initial numbers do not follow the polynomial"
        for k in range(1, s + 1):
            width = k - 1
            if width:
                bits.append((column[k - 1] >> 1) >> np.arange(width - 1, -1, -1) & 1)
    stream = np.packbits(np.concatenate(bits).astype(np.uint8))
    payload = b"SOBOLJK1" + np.uint32(MAXDIM).tobytes() + np.asarray(polys, dtype="<u4").tobytes() + stream.tobytes()
    TARGET.write_bytes(zlib.compress(payload, 9))
    print(f"wrote {TARGET} ({TARGET.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
