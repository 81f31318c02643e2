"""Reductions over the outer dimension of a row-major buffer run with their loops interchanged
(``codegen_cpp_columns.py``): the same values as eager, sizes that are not a multiple of the block."""

from __future__ import annotations

import pytest
from inductor_testing import assert_same, compile_with_inductor

import ember


def _fn(x, y):
    return {
        "sum": (x * 2).sum(0), "max": x.amax(0), "min": (x + 1).amin(0), "prod": (y / 2 + 1).prod(0),
        "mean_3d": x.view(3, 37, 150).mean((0, 1)), "small": x[:, :5].sum(0),
    }  # fmt: skip


@pytest.fixture(scope="module")
def compiled():
    ember.manual_seed(0)
    x, y = ember.randn(111, 150), ember.rand(111, 150)
    keys = list(_fn(x, y))
    fn, rec = compile_with_inductor(lambda a, b: tuple(_fn(a, b).values()))
    return dict(zip(keys, fn(x, y), strict=True)), _fn(x, y), rec.graphs[0]


@pytest.mark.parametrize("name", ["sum", "max", "min", "prod", "mean_3d", "small"])
def test_matches_eager(compiled, name):
    got, want, _ = compiled
    assert_same(got[name], want[name], rtol=1e-5, atol=1e-5)


def test_the_loops_were_interchanged(compiled):
    source = compiled[2].source
    assert source.count("acc[64]") == 6  # one block of accumulators per reduction
