"""The dtypes of limited support, without the oracle: identity, pickling, promotion and the
storage-only types' refusals."""

from __future__ import annotations

import pickle

import pytest

import ember
from ember.core import dtypes as D


def test_extra_dtypes_are_kept_apart_from_all():
    assert not set(D.EXTRA) & set(D.ALL)
    assert len({d.name for d in D.EXTRA}) == len(D.EXTRA)
    for d in D.EXTRA:
        assert getattr(ember, d.name) is d
        assert D.BY_NAME[d.name] is d
        assert pickle.loads(pickle.dumps(d)) is d
        assert repr(d) == f"ember.{d.name}"


def test_aliases():
    assert ember.chalf is ember.complex32
    assert ember.bit is ember.uint1


def test_signedness_of_bits_types_is_undefined():
    with pytest.raises(RuntimeError, match="Bits types are undefined"):
        _ = ember.bits8.is_signed
    assert ember.int4.is_signed and not ember.uint4.is_signed and not ember.uint16.is_signed


def test_promotion_of_the_few_pairs_that_promote():
    # PyTorch: uint16/32/64 promote only with floating types; complex32 promotes as a pair of halves.
    assert ember.promote_types(ember.uint16, ember.float32) is ember.float32
    assert ember.promote_types(ember.float64, ember.uint64) is ember.float64
    assert ember.promote_types(ember.complex32, ember.float16) is ember.complex32
    assert ember.promote_types(ember.complex32, ember.int8) is ember.complex32
    assert ember.promote_types(ember.complex32, ember.float32) is ember.complex64
    assert ember.promote_types(ember.complex32, ember.float64) is ember.complex128
    assert ember.promote_types(ember.float8_e5m2, ember.float8_e5m2) is ember.float8_e5m2
    for a, b in ((ember.uint16, ember.int64), (ember.float8_e4m3fn, ember.float32), (ember.bits8, ember.bits16)):
        with pytest.raises(RuntimeError, match="Promotion"):
            ember.promote_types(a, b)


def test_storage_only_types_make_empty_tensors_and_nothing_else():
    t = ember.zeros(2, 3, dtype=ember.bits16)
    assert t.dtype is ember.bits16 and t.view(ember.uint8).tolist() == [[0] * 6] * 2
    assert ember.empty(4, dtype=ember.float4_e2m1fn_x2).element_size() == 1
    with pytest.raises(NotImplementedError, match="fill_cpu"):
        ember.ones(2, dtype=ember.bits8)
    with pytest.raises(NotImplementedError, match="copy_kernel"):
        t.to(ember.float32)


def test_complex32_round_trip_and_conversions():
    z = ember.tensor([0.5 - 1j, 2 + 0.25j])
    half = z.to(ember.complex32)
    assert half.element_size() == 4
    assert half.tolist() == [0.5 - 1j, 2 + 0.25j]  # exact in half precision
    assert half.to(ember.complex64).tolist() == z.tolist()
    assert half.to(ember.float32).tolist() == [0.5, 2.0]
    assert half[1].item() == 2 + 0.25j


def test_float8_e4m3fn_saturates_and_e8m0fnu_takes_magnitudes():
    sat = ember.tensor([1000.0, -float("inf"), 1.0]).to(ember.float8_e4m3fn)
    assert sat.to(ember.float32).tolist() == [448.0, -448.0, 1.0]
    mags = ember.tensor([-4.0, 0.0, 8.0]).to(ember.float8_e8m0fnu)
    assert mags.to(ember.float64).tolist() == [4.0, 2.0**-127, 8.0]


def test_wide_unsigned_values_beyond_the_signed_range():
    big = ember.tensor([2**64 - 1, 2**63], dtype=ember.uint64)
    assert big.tolist() == [2**64 - 1, 2**63]
    assert ember.iinfo(ember.uint32).max == 2**32 - 1
