"""Reduction loops merged where every index walks adjacent reduced dims as one (``loop_merge.py``):
the generated loops, and results against eager where the merge applies and where it must not."""

from __future__ import annotations

import pytest
from inductor_testing import assert_same, compile_with_inductor

import ember
from ember.inductor.ir import index_symbols
from ember.inductor.loop_merge import _coefficients


def _kernels(graph) -> str:
    source = graph.source
    return source[source.index('extern "C" int ') :]


def _loop_bounds(graph) -> list[str]:
    """The bounds of the generated reduction loops (``for (int64_t rK = 0; rK < N; ...``)."""
    out = []
    for line in _kernels(graph).splitlines():
        line = line.strip()
        if line.startswith("for (int64_t r") and "= 0;" in line:
            out.append(line.split("<")[1].split(";")[0].strip())
    return out


def test_an_image_plane_is_one_loop():
    ember.manual_seed(0)
    x = ember.randn(8, 4, 16, 32)
    fn = lambda t: (t.sum((0, 2, 3)), (t * t).mean((2, 3)))  # noqa: E731
    compiled, rec = compile_with_inductor(fn)
    for got, want in zip(compiled(x), fn(x), strict=True):
        assert_same(got, want, rtol=1e-5, atol=1e-4)
    bounds = _loop_bounds(rec.graphs[0])
    assert "512" in bounds and "16" not in bounds and "32" not in bounds, bounds  # H x W as one loop


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: t[:, :, :, :20].sum((0, 2, 3)),  # rows of 20 out of 32: not one run of memory
        lambda t: t.permute(0, 1, 3, 2).sum((2, 3)) + t.amax((2, 3)),
        lambda t: t[:, :, ::2, 1::3].sum((2, 3)),
    ],
    ids=["narrowed-rows", "permuted", "strided"],
)
def test_reductions_over_views_match_eager(fn):
    ember.manual_seed(1)
    x = ember.randn(3, 5, 12, 32)
    compiled, _ = compile_with_inductor(fn)
    assert_same(compiled(x), fn(x), rtol=1e-5, atol=1e-4)


def test_the_narrowed_rows_keep_their_loops():
    ember.manual_seed(2)
    x = ember.randn(3, 5, 12, 32)
    compiled, rec = compile_with_inductor(lambda t: t[:, :, :, :20].sum((0, 2, 3)))
    compiled(x)
    assert "20" in _loop_bounds(rec.graphs[0])


@pytest.mark.parametrize("layout", ["contiguous", "permuted"])
def test_argmax_over_merged_loops_gives_eager_flat_index(layout):
    ember.manual_seed(3)
    x = ember.randn(5, 6, 7)
    if layout == "permuted":
        x = x.permute(2, 0, 1)
    x[1, 2, 3] = 50.0  # one clear maximum, away from the first elements
    compiled, rec = compile_with_inductor(lambda t: (t.argmax(), t.argmin(), t.amax()))
    for got, want in zip(compiled(x), (x.argmax(), x.argmin(), x.amax()), strict=True):
        assert_same(got, want)
    # the contiguous tensor's three dims are one loop; amax over the permuted (7, 5, 6) view merges
    # only its inner two (strides 42 and 7), while argmax's flat index reads a contiguous copy
    bounds = _loop_bounds(rec.graphs[0])
    assert "210" in bounds and ("7" in bounds) == (layout == "permuted"), bounds


def test_coefficients_of_an_index():
    r0, r1, r2 = index_symbols("r", 3)
    x0 = index_symbols("x", 1)[0]
    assert _coefficients(r2 + 32 * r1 + 1024 * r0 + 7 * x0, [r0, r1, r2]) == [1024, 32, 1]
    assert _coefficients(3 * (r1 + 2 * r0), [r0, r1]) == [6, 3]
    assert _coefficients(r1 // 2 + r0, [r0, r1]) is None  # not linear in r1
    assert _coefficients(r0 * r1, [r0, r1]) is None
