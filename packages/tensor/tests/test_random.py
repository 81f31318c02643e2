"""Random numbers: reproducibility from (seed, offset), generator state, ``fork_rng``, and the
distributions, checked statistically on large samples (bounds at many standard errors, so a correct
sampler fails with negligible probability; the seeds are fixed, so the outcome is too).

Values are not compared with PyTorch's (its CPU generator is a Mersenne Twister); the layouts,
dtypes and errors are, in ``opinfo_random.py``.
"""

from __future__ import annotations

import math
import pickle
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.core import philox
from ember.core.functional import dropout as f_dropout

N = 200_000


def values(t) -> np.ndarray:
    array = np.asarray(t.numpy(force=True))
    if t.dtype == ember.bool or t.is_complex():
        return array
    return array.astype(np.float64)


# -- reproducibility -------------------------------------------------------------------------------------


def _draw_everything(generator=None):
    g = {"generator": generator}
    x = ember.empty(5)
    return [
        ember.rand(4, **g),
        ember.randn(3, 2, dtype=ember.float64, **g),
        ember.randint(-3, 9, (6,), **g),
        ember.randperm(7, **g),
        ember.bernoulli(ember.full((5,), 0.5), **g),
        ember.normal(ember.zeros(3), 2.0, **g),
        ember.multinomial(ember.tensor([0.1, 0.2, 0.7]), 2, **g),
        ember.multinomial(ember.tensor([0.1, 0.2, 0.7]), 4, True, **g),
        x.uniform_(-1, 1, **g).clone(),
        x.exponential_(2.0, **g).clone(),
        x.random_(0, 100, **g).clone(),
        ember.rand(2, dtype=ember.complex64, **g),
    ]


def _same(a: list, b: list) -> bool:
    return all(np.array_equal(values(x), values(y)) for x, y in zip(a, b, strict=True))


def test_same_seed_same_numbers():
    ember.manual_seed(1234)
    first = _draw_everything()
    ember.manual_seed(1234)
    assert _same(first, _draw_everything())
    ember.manual_seed(1235)
    assert not _same(first[:4], _draw_everything()[:4])


def test_numbers_are_the_same_in_a_fresh_process():
    script = "import ember; ember.manual_seed(99); print(ember.rand(3, dtype=ember.float64).tolist(), ember.randn(2).tolist())"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    ember.manual_seed(99)
    expected = f"{ember.rand(3, dtype=ember.float64).tolist()} {ember.randn(2).tolist()}"
    assert run.stdout.strip() == expected


def test_rand_float32_is_tritons_rand_and_randn_is_tritons_randn():
    g = ember.Generator().manual_seed(2024)
    g.set_offset(1000)
    u = ember.rand(64, generator=g).numpy()
    z = ember.randn(64, generator=g).numpy()
    offsets = np.arange(1000, 1064)
    np.testing.assert_array_equal(u, np.minimum(philox.rand(2024, offsets), np.float32(1 - 2**-24)))
    np.testing.assert_array_equal(z, philox.randn(2024, offsets + 64))


def test_each_op_advances_the_offset_by_its_documented_count():
    g = ember.Generator().manual_seed(0)
    for make, count in [
        (lambda: ember.rand(3, 4, generator=g), 12),
        (lambda: ember.randn(5, dtype=ember.float64, generator=g), 5),
        (lambda: ember.rand(3, dtype=ember.complex64, generator=g), 6),
        (lambda: ember.randint(0, 2**40, (7,), generator=g), 7),
        (lambda: ember.randperm(9, generator=g), 9),
        (lambda: ember.multinomial(ember.ones(2, 5), 3, generator=g), 10),
        (lambda: ember.multinomial(ember.ones(2, 5), 3, True, generator=g), 6),
        (lambda: ember.native_dropout(ember.ones(4, 2), 0.5, True), 0),  # the default generator's
    ]:
        before = g.get_offset()
        make()
        assert g.get_offset() - before == count


def test_state_save_and_restore_replays():
    ember.manual_seed(5)
    ember.rand(10)
    state = ember.get_rng_state()
    a = _draw_everything()
    ember.set_rng_state(state)
    assert _same(a, _draw_everything())
    assert state.dtype == ember.uint8 and tuple(state.shape) == (16,)
    raw = state.numpy().tobytes()
    assert int.from_bytes(raw[:8], "little") == 5 and int.from_bytes(raw[8:], "little") == 10


def test_state_layout_is_seed_then_offset():
    g = ember.Generator().manual_seed(0x0102030405060708)
    g.set_offset(3)
    assert g.get_state().tolist() == [8, 7, 6, 5, 4, 3, 2, 1, 3, 0, 0, 0, 0, 0, 0, 0]
    other = ember.Generator().set_state(g.get_state())
    assert other.initial_seed() == g.initial_seed() and other.get_offset() == 3


def test_generator_is_independent_of_the_default():
    ember.manual_seed(11)
    plain = ember.rand(5)
    ember.manual_seed(11)
    g = ember.Generator().manual_seed(3)
    ember.rand(100, generator=g)
    assert np.array_equal(ember.rand(5).numpy(), plain.numpy())
    g1, g2 = ember.Generator().manual_seed(3), ember.Generator().manual_seed(3)
    assert np.array_equal(ember.randn(8, generator=g1).numpy(), ember.randn(8, generator=g2).numpy())


def test_seeds_and_generator_api():
    g = ember.Generator()
    assert g.initial_seed() == 67280421310721 and g.device == ember.device("cpu")
    assert g.manual_seed(-1).initial_seed() == 2**64 - 1
    assert g.manual_seed(2**64 - 1).get_offset() == 0
    new = g.seed()
    assert g.initial_seed() == new
    assert ember.manual_seed(7) is ember.default_generator and ember.initial_seed() == 7
    assert ember.random.initial_seed() == 7
    s = ember.seed()
    assert ember.initial_seed() == s
    copy = pickle.loads(pickle.dumps(ember.Generator().manual_seed(4)))
    assert copy.initial_seed() == 4


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: ember.Generator().manual_seed(2**64), ValueError),
        (lambda: ember.Generator().manual_seed(-(2**63) - 1), ValueError),
        (lambda: ember.Generator().manual_seed(1.5), RuntimeError),
        (lambda: ember.Generator().manual_seed("3"), RuntimeError),
        (lambda: ember.Generator().set_state(ember.zeros(16)), TypeError),
        (lambda: ember.Generator().set_state([1, 2]), TypeError),
        (lambda: ember.Generator().set_state(ember.zeros(5, dtype=ember.uint8)), RuntimeError),
        (lambda: ember.Generator(device="meta"), RuntimeError),
        (lambda: ember.rand(3, generator="g"), TypeError),
    ],
)
def test_generator_errors(call, error):
    with pytest.raises(error):
        call()


def test_generator_errors_match_pytorch():
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        with pytest.raises(ValueError):
            lib.Generator().manual_seed(2**64)
        with pytest.raises(RuntimeError):
            lib.Generator().manual_seed(1.5)
        with pytest.raises(TypeError):
            lib.Generator().set_state(lib.zeros(16))
        with pytest.raises(RuntimeError):
            lib.Generator().set_state(lib.zeros(5, dtype=lib.uint8))


def test_fork_rng_restores_the_state():
    ember.manual_seed(21)
    before = ember.get_rng_state()
    with ember.random.fork_rng():
        ember.manual_seed(1)
        inside = ember.rand(4)
    assert np.array_equal(ember.get_rng_state().numpy(), before.numpy())
    with pytest.raises(KeyError), ember.random.fork_rng(devices=[]):
        ember.rand(3)
        raise KeyError
    assert np.array_equal(ember.get_rng_state().numpy(), before.numpy())
    with ember.random.fork_rng(enabled=False):
        ember.rand(3)
    assert ember.default_generator.get_offset() == 3
    ember.manual_seed(1)
    assert np.array_equal(ember.rand(4).numpy(), inside.numpy())


def test_random_module_is_offered_like_torch_random():
    assert ember.random.manual_seed is ember.manual_seed
    assert (
        ember.random.get_rng_state is ember.get_rng_state and ember.random.default_generator is ember.default_generator
    )
    with pytest.raises(RuntimeError), ember.random.fork_rng(devices=[0], device_type="nosuchdevice"):
        pass


def test_meta_tensors_use_no_counters():
    g = ember.Generator().manual_seed(0)
    t = ember.rand(3, 4, device="meta", generator=g)
    assert t.device.type == "meta" and tuple(t.shape) == (3, 4) and g.get_offset() == 0


# -- distributions -----------------------------------------------------------------------------------------


def _mean_var(x: np.ndarray, mean: float, var: float, k: float = 6.0) -> None:
    n = x.size
    assert abs(x.mean() - mean) < k * math.sqrt(var / n), x.mean()
    # the sample variance's standard error is about var * sqrt(2 / n) (for normal-like tails)
    assert abs(x.var() - var) < k * var * math.sqrt(3 / n) + 1e-12, x.var()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_rand_is_uniform(dtype):
    g = ember.Generator().manual_seed(1)
    x = values(ember.rand(N, dtype=getattr(ember, dtype), generator=g))
    assert x.min() >= 0 and x.max() < 1
    _mean_var(x, 0.5, 1 / 12)
    counts = np.histogram(x, bins=16, range=(0, 1))[0]
    assert np.abs(counts - N / 16).max() < 6 * math.sqrt(N / 16)


def test_rand_float64_has_53_bits():
    x = ember.rand(10_000, dtype=ember.float64, generator=ember.Generator().manual_seed(2)).numpy()
    assert np.mean(x * 2**30 != np.floor(x * 2**30)) > 0.99  # float32-derived numbers would sit on a 2**-24 grid


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_randn_is_standard_normal(dtype):
    x = values(ember.randn(N, dtype=getattr(ember, dtype), generator=ember.Generator().manual_seed(3)))
    _mean_var(x, 0.0, 1.0)
    assert abs(np.mean(np.abs(x) < 1) - 0.6827) < 0.005
    assert abs(np.mean(x**3)) < 0.03  # symmetric
    assert abs(np.mean(x**4) - 3) < 0.1  # normal tails


def test_complex_rand_and_randn():
    g = ember.Generator().manual_seed(4)
    z = ember.randn(N, dtype=ember.complex64, generator=g).numpy()
    _mean_var(z.real, 0.0, 0.5)
    _mean_var(z.imag, 0.0, 0.5)
    u = ember.rand(N, dtype=ember.complex64, generator=g).numpy()
    assert u.real.min() >= 0 and u.real.max() < 1 and u.imag.min() >= 0 and u.imag.max() < 1


def test_normal_overloads_and_in_place_samplers():
    g = ember.Generator().manual_seed(5)
    _mean_var(values(ember.normal(3.0, 2.0, (N,), generator=g)), 3.0, 4.0)
    _mean_var(values(ember.normal(ember.full((N,), -1.0), 0.5, generator=g)), -1.0, 0.25)
    _mean_var(values(ember.normal(2.0, ember.full((N,), 3.0), generator=g)), 2.0, 9.0)
    both = ember.normal(ember.tensor([0.0, 10.0]).expand(N // 2, 2), ember.tensor([1.0, 2.0]), generator=g)
    _mean_var(values(both)[:, 1], 10.0, 4.0)
    _mean_var(values(ember.empty(N, dtype=ember.float64).normal_(1.0, 3.0, generator=g)), 1.0, 9.0)
    x = values(ember.empty(N).uniform_(-2.0, 6.0, generator=g))
    assert x.min() >= -2 and x.max() < 6
    _mean_var(x, 2.0, 64 / 12)
    e = values(ember.empty(N).exponential_(4.0, generator=g))
    assert e.min() >= 0 and np.isfinite(e).all()
    assert abs(e.mean() - 0.25) < 6 * 0.25 / math.sqrt(N)
    assert abs(np.median(e) - math.log(2) / 4) < 0.005


@pytest.mark.parametrize(
    "low, high, dtype",
    [
        (0, 10, "int64"),
        (-5, 5, "int8"),
        (0, 256, "uint8"),
        (-(2**31), 2**31 - 1, "int32"),
        (-(2**63), 2**63 - 1, "int64"),
        (2**40, 2**40 + 3, "int64"),
        (0, 2, "bool"),
        (-100, 100, "float32"),
    ],
)
def test_randint_range(low, high, dtype):
    x = ember.randint(low, high, (N,), dtype=getattr(ember, dtype), generator=ember.Generator().manual_seed(6))
    v = x.numpy()
    assert x.dtype == getattr(ember, dtype)
    assert int(v.min()) >= low and int(v.max()) <= high - 1
    span = high - low
    if span <= 256:
        counts = np.bincount((v.astype(np.int64) - low).astype(np.int64), minlength=span)
        assert counts.size == span and np.abs(counts - N / span).max() < 6 * math.sqrt(N / span)
    else:  # wide ranges: the extremes are approached from both sides, and the mean sits in the middle
        wide = v.astype(np.float64)
        assert abs(wide.mean() - (low + high - 1) / 2) < 6 * (span / math.sqrt(12)) / math.sqrt(N)
        assert wide.min() < low + span / 1000 and wide.max() > high - 1 - span / 1000


def test_random_in_place_ranges():
    g = ember.Generator().manual_seed(7)
    assert ember.empty(N, dtype=ember.int8).random_(generator=g).numpy().min() >= 0
    v = ember.empty(N, dtype=ember.uint8).random_(generator=g).numpy()
    assert v.min() == 0 and v.max() == 255
    f = ember.empty(N).random_(generator=g).numpy()
    assert f.min() >= 0 and f.max() <= 2**24 and f.max() > 2**23
    t = ember.empty(N, dtype=ember.int64).random_(3, generator=g).numpy()
    assert set(np.unique(t)) == {0, 1, 2}
    t = ember.empty(N, dtype=ember.int16).random_(-4, None, generator=g).numpy()
    assert t.min() == -4 and t.max() > 32000


def test_randperm_is_a_permutation():
    g = ember.Generator().manual_seed(8)
    for n in (0, 1, 2, 17, 5000):
        p = ember.randperm(n, generator=g).numpy()
        assert np.array_equal(np.sort(p), np.arange(n))
    # every position is uniform over the values
    first = np.array([ember.randperm(4, generator=g).numpy()[0] for _ in range(4000)])
    counts = np.bincount(first, minlength=4)
    assert np.abs(counts - 1000).max() < 6 * math.sqrt(1000)
    assert ember.randperm(6, dtype=ember.float32, generator=g).dtype == ember.float32


def test_bernoulli_rates():
    g = ember.Generator().manual_seed(9)
    for p in (0.0, 0.1, 0.5, 0.93, 1.0):
        x = values(ember.bernoulli(ember.full((N,), p), generator=g))
        assert set(np.unique(x)) <= {0.0, 1.0}
        assert abs(x.mean() - p) <= 6 * math.sqrt(p * (1 - p) / N)
    x = values(ember.empty(N, dtype=ember.int32).bernoulli_(0.3, generator=g))
    assert abs(x.mean() - 0.3) < 6 * math.sqrt(0.21 / N)
    p = ember.tensor([0.2, 0.8]).expand(N // 2, 2)
    x = values(ember.empty(N // 2, 2, dtype=ember.bool).bernoulli_(p, generator=g))
    assert abs(x[:, 0].mean() - 0.2) < 0.01 and abs(x[:, 1].mean() - 0.8) < 0.01
    x = values(ember.bernoulli(ember.zeros(N, dtype=ember.float64), 0.25, generator=g))
    assert abs(x.mean() - 0.25) < 6 * math.sqrt(0.1875 / N)


def test_multinomial_frequencies():
    g = ember.Generator().manual_seed(10)
    p = np.array([0.1, 0.0, 0.3, 0.6])
    draws = ember.multinomial(ember.tensor(p * 7), N, True, generator=g).numpy()
    counts = np.bincount(draws, minlength=4) / N
    assert counts[1] == 0
    assert np.abs(counts - p).max() < 6 * math.sqrt(0.25 / N)
    # without replacement: distinct in each row, zero-probability categories last
    rows = ember.multinomial(ember.tensor([[1.0, 0.0, 2.0, 3.0]]).expand(5000, 4), 4, generator=g).numpy()
    assert all(len(set(r)) == 4 for r in rows[:200])
    assert (rows[:, 3] == 1).all()
    # the first draw without replacement follows p; the second, p with the first removed
    first = np.bincount(rows[:, 0], minlength=4) / len(rows)
    assert np.abs(first - np.array([1, 0, 2, 3]) / 6).max() < 0.03
    second_after_3 = rows[rows[:, 0] == 3][:, 1]
    assert abs(np.mean(second_after_3 == 2) - 2 / 3) < 0.05
    one = ember.multinomial(ember.tensor([0.0, 0.0, 5.0]), 1, generator=g)
    assert one.tolist() == [2]


def test_multinomial_out_and_dtype():
    g = ember.Generator().manual_seed(12)
    out = ember.empty(0, dtype=ember.int64)
    r = ember.multinomial(ember.ones(3, 5), 2, generator=g, out=out)
    assert r is out and tuple(out.shape) == (3, 2)
    with pytest.raises(RuntimeError, match="Long tensor out"):
        ember.multinomial(ember.ones(5), 2, out=ember.empty(0))


def test_dropout_scaling_and_edges():
    g_state = ember.get_rng_state()
    x = ember.ones(N)
    for p in (0.1, 0.5, 0.8):
        y = ember.dropout(x, p, True).numpy()
        kept = y != 0
        assert abs(kept.mean() - (1 - p)) < 6 * math.sqrt(p * (1 - p) / N)
        np.testing.assert_allclose(y[kept], np.float32(1) / np.float32(1 - p))
        out, mask = ember.native_dropout(x, p, True)
        assert mask.dtype == ember.bool
        np.testing.assert_array_equal(out.numpy() != 0, mask.numpy())
        f = f_dropout(x, p).numpy()
        assert abs(np.mean(f != 0) - (1 - p)) < 0.01
        assert abs(f.mean() - 1) < 6 * math.sqrt(p / (1 - p) / N)  # dropout keeps the mean
    assert np.array_equal(ember.dropout(x, 1.0, True).numpy(), np.zeros(N, np.float32))
    assert ember.dropout(x, 0.0, True) is x and ember.dropout(x, 0.7, False) is x
    assert f_dropout(x, 0.5, training=False) is x
    y = ember.ones(5)
    assert f_dropout(y, 0.5, inplace=True) is y and y._version > 0
    out, mask = ember.native_dropout(x, 0.5, False)
    assert out is not x and mask.numpy().all()
    ember.set_rng_state(g_state)


def test_dropout_is_reproducible_from_the_seed():
    ember.manual_seed(13)
    a = ember.native_dropout(ember.ones(100), 0.4, True)[1]
    ember.manual_seed(13)
    b = ember.dropout(ember.ones(100), 0.4, True)
    assert np.array_equal(a.numpy(), b.numpy() != 0)


def test_blocked_philox_equals_the_direct_rounds():
    offsets = np.arange(100_009, dtype=np.int64).reshape(7, -1) + (5 << 32) - 17
    blocked = philox.randint4x(31337, offsets)
    flat = offsets.reshape(-1).astype(np.uint64)
    direct = philox.philox4x32(
        31337, flat & 0xFFFFFFFF, flat >> np.uint64(32), np.zeros_like(flat), np.zeros_like(flat)
    )
    for a, b in zip(blocked, direct, strict=True):
        assert a.shape == offsets.shape and a.dtype == np.uint32
        np.testing.assert_array_equal(a.reshape(-1), b)


def test_random_ops_are_tagged_random():
    names = (
        "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "bernoulli", "bernoulli_",
        "normal", "normal_", "uniform_", "exponential_", "random_", "multinomial", "dropout", "dropout_",
        "native_dropout",
    )  # fmt: skip
    for name in names:
        packet = getattr(ember.ops.aten, name)
        for overload in packet.overloads():
            op = getattr(packet, overload)
            assert "random" in op.tags, op
            assert "nondeterministic" not in op.tags, op
            generators = [a for a in op.schema.arguments if a.name == "generator"]
            assert all(a.kwarg_only for a in generators), op
