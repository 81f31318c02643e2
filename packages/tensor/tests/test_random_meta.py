"""The meta functions of the factories and of the random ops whose OpInfo samples never reach them
(no tensor argument to move to the meta device, or an ``out=`` tensor the samples make on the CPU):
each result on ``meta`` has the CPU result's shape, dtype and strides, a bad call raises the same
error on both devices, and a meta call leaves the generator where it was."""

from __future__ import annotations

import pytest

import ember

aten = ember.ops.aten


def _empty(device: str, dtype=ember.float32):
    return ember.empty(0, dtype=dtype, device=device)


# Each call takes the device its result (or ``out=`` tensor) is on.
CALLS = {
    "rand.default": lambda d: aten.rand.default([2, 3], device=d),
    "rand.generator": lambda d: aten.rand.generator([4], generator=None, dtype=ember.float64, device=d),
    "rand.out": lambda d: aten.rand.out([2, 3], out=_empty(d)),
    "rand.generator_out": lambda d: aten.rand.generator_out([3], generator=None, out=_empty(d, ember.float16)),
    "randn.default": lambda d: aten.randn.default([0, 3], device=d),
    "randn.generator": lambda d: aten.randn.generator([2, 1, 3], generator=None, device=d),
    "randn.out": lambda d: aten.randn.out([5], out=_empty(d)),
    "randn.generator_out": lambda d: aten.randn.generator_out([2, 2], generator=None, out=_empty(d)),
    "randint.default": lambda d: aten.randint.default(5, [3, 2], device=d),
    "randint.generator": lambda d: aten.randint.generator(5, [3], generator=None, dtype=ember.int16, device=d),
    "randint.low": lambda d: aten.randint.low(-3, 5, [2, 3], device=d),
    "randint.low_generator": lambda d: aten.randint.low_generator(1, 3, [4], generator=None, device=d),
    "randint.out": lambda d: aten.randint.out(5, [3], out=_empty(d, ember.int64)),
    "randint.generator_out": lambda d: aten.randint.generator_out(5, [3], generator=None, out=_empty(d)),
    "randint.low_out": lambda d: aten.randint.low_out(-3, 5, [2, 2], out=_empty(d, ember.int32)),
    "randint.low_generator_out": lambda d: aten.randint.low_generator_out(0, 5, [3], generator=None, out=_empty(d)),
    "randperm.default": lambda d: aten.randperm.default(6, device=d),
    "randperm.generator": lambda d: aten.randperm.generator(0, generator=None, dtype=ember.int32, device=d),
    "randperm.out": lambda d: aten.randperm.out(4, out=_empty(d, ember.int64)),
    "randperm.generator_out": lambda d: aten.randperm.generator_out(4, generator=None, out=_empty(d)),
    "normal.float_float": lambda d: aten.normal.float_float(0.5, 2.0, [2, 3], device=d),
    "normal.float_float_out": lambda d: aten.normal.float_float_out(0.5, 2.0, [3], out=_empty(d)),
    "normal.Tensor_float_out": lambda d: aten.normal.Tensor_float_out(ember.zeros(2, 3, device=d), 1.0, out=_empty(d)),
    "normal.float_Tensor_out": lambda d: aten.normal.float_Tensor_out(0.0, ember.ones(3, device=d), out=_empty(d)),
    "normal.Tensor_Tensor_out": lambda d: aten.normal.Tensor_Tensor_out(
        ember.zeros(2, 3, device=d), ember.ones(3, device=d), out=_empty(d)
    ),
    "bernoulli.out": lambda d: aten.bernoulli.out(ember.full((2, 3), 0.5, device=d), out=_empty(d)),
    "multinomial.out": lambda d: aten.multinomial.out(ember.ones(3, 4, device=d), 2, True, out=_empty(d, ember.int64)),
    "empty_strided": lambda d: ember.empty_strided((2, 3), (1, 2), device=d),
    "arange": lambda d: ember.arange(0.5, 3, 0.25, device=d),
    "linspace": lambda d: ember.linspace(0, 1, 7, dtype=ember.float16, device=d),
    "eye": lambda d: ember.eye(2, 4, dtype=ember.int32, device=d),
    "full": lambda d: ember.full((2, 1), True, device=d),
}

ERRORS = {
    "rand int64": lambda d: aten.rand.default([2], dtype=ember.int64, device=d),
    "rand negative size": lambda d: aten.rand.default([-1], device=d),
    "randn int32": lambda d: aten.randn.default([2], dtype=ember.int32, device=d),
    "randn.out int64": lambda d: aten.randn.out([2], out=_empty(d, ember.int64)),
    "randint empty range": lambda d: aten.randint.low(3, 3, [2], device=d),
    "randint uint8 from": lambda d: aten.randint.low(-1, 3, [2], dtype=ember.uint8, device=d),
    "randint complex": lambda d: aten.randint.default(3, [2], dtype=ember.complex64, device=d),
    "randperm negative": lambda d: aten.randperm.default(-1, device=d),
    "randperm float16 limit": lambda d: aten.randperm.default(3000, dtype=ember.float16, device=d),
    "randperm bool": lambda d: aten.randperm.default(2, dtype=ember.bool, device=d),
    "randperm.out int8 overflow": lambda d: aten.randperm.out(300, out=_empty(d, ember.int8)),
    "normal negative std": lambda d: aten.normal.float_float(0.0, -1.0, [2], device=d),
    "normal.out int64": lambda d: aten.normal.float_float_out(0.0, 1.0, [2], out=_empty(d, ember.int64)),
    "normal Tensor_Tensor int": lambda d: aten.normal.Tensor_Tensor_out(
        ember.zeros(2, dtype=ember.int64, device=d), ember.ones(2, dtype=ember.int64, device=d), out=_empty(d)
    ),
    "multinomial.out float": lambda d: aten.multinomial.out(ember.ones(3, device=d), 2, out=_empty(d)),
    "multinomial too many": lambda d: aten.multinomial.out(
        ember.ones(3, device=d), 4, False, out=_empty(d, ember.int64)
    ),
    "bernoulli.out int": lambda d: aten.bernoulli.out(ember.zeros(2, dtype=ember.int64, device=d), out=_empty(d)),
    "arange bool": lambda d: ember.arange(3, dtype=ember.bool, device=d),
    "arange zero step": lambda d: ember.arange(0, 3, 0, device=d),
    "arange wrong sign": lambda d: ember.arange(3, 0, 1, device=d),
    "linspace negative": lambda d: ember.linspace(0, 1, -1, device=d),
    "eye negative": lambda d: ember.eye(-1, device=d),
    "empty_strided negative stride": lambda d: ember.empty_strided((2,), (-1,), device=d),
}


def _assert_like(meta, cpu) -> None:
    assert meta.device.type == "meta" and cpu.device.type == "cpu"
    assert tuple(meta.shape) == tuple(cpu.shape)
    assert meta.stride() == cpu.stride()
    assert meta.dtype is cpu.dtype


@pytest.mark.parametrize("name", sorted(CALLS))
def test_meta_matches_cpu(name):
    _assert_like(CALLS[name]("meta"), CALLS[name]("cpu"))


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_meta_raises_as_cpu(name):
    with pytest.raises(Exception) as on_cpu:
        ERRORS[name]("cpu")
    with pytest.raises(type(on_cpu.value)) as on_meta:
        ERRORS[name]("meta")
    assert str(on_meta.value) == str(on_cpu.value)


def test_meta_random_ops_use_no_counters():
    g = ember.Generator().manual_seed(0)
    x = ember.empty(3, 4, device="meta")
    results = [
        aten.rand.generator([3, 4], generator=g, device="meta"),
        aten.randint.low_generator(0, 9, [3], generator=g, device="meta"),
        aten.randperm.generator(5, generator=g, device="meta"),
        aten.normal.float_float(0.0, 1.0, [2], generator=g, device="meta"),
        aten.multinomial.default(ember.empty(2, 5, device="meta"), 3, generator=g),
        aten.bernoulli.p(x, 0.5, generator=g),
        x.uniform_(generator=g),
        x.normal_(generator=g),
        x.random_(0, 5, generator=g),
        x.bernoulli_(0.3, generator=g),
        ember.native_dropout(x, 0.5, True)[1],
    ]
    assert all(r.device.type == "meta" for r in results)
    assert g.get_offset() == 0
