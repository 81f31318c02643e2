"""Scrambled Sobol' sequences: reproducible by seed and still (0, m, d)-nets in each coordinate."""

import numpy as np
import pytest

import ember
from ember.quasirandom import SobolEngine


def _draw(engine, m):
    return engine.draw_base2(m, dtype=ember.float64).numpy()


def test_a_seed_gives_the_same_points_and_another_seed_others():
    first, again, other = (SobolEngine(5, scramble=True, seed=s) for s in (7, 7, 8))
    points = _draw(first, 6)
    np.testing.assert_array_equal(points, _draw(again, 6))
    assert not np.array_equal(points, _draw(other, 6))
    assert not np.array_equal(points, _draw(SobolEngine(5), 6))


@pytest.mark.parametrize("seed", [0, 1, 123])
def test_scrambled_points_stratify_every_coordinate(seed):
    m = 7
    engine = SobolEngine(6, scramble=True, seed=seed)
    points = _draw(engine, m)
    assert points.shape == (2**m, 6)
    assert ((points >= 0) & (points < 1)).all()
    for coordinate in points.T:  # one point in each interval [k / 2**m, (k + 1) / 2**m)
        cells = np.floor(coordinate * 2**m).astype(np.int64)
        np.testing.assert_array_equal(np.sort(cells), np.arange(2**m))
    # and in two dimensions: the first two coordinates form a (0, m, 2)-net on 2**a by 2**(m-a) boxes
    for a in range(m + 1):
        boxes = np.floor(points[:, 0] * 2**a).astype(np.int64) * 2 ** (m - a) + np.floor(points[:, 1] * 2 ** (m - a))
        assert len(np.unique(boxes)) == 2**m


def test_scrambled_reset_replays_and_the_first_point_is_the_shift():
    engine = SobolEngine(3, scramble=True, seed=3)
    first = engine.draw(5, dtype=ember.float64).numpy()
    np.testing.assert_array_equal(engine.reset().draw(5, dtype=ember.float64).numpy(), first)
    np.testing.assert_allclose(first[0], engine.shift.numpy() / 2**SobolEngine.MAXBIT, rtol=1e-7)
    assert engine.sobolstate.dtype == ember.int64 and tuple(engine.sobolstate.shape) == (3, 30)


def test_unscrambled_values_by_hand():
    # The first Sobol' points in two dimensions (van der Corput in the first coordinate).
    expected = [[0, 0], [0.5, 0.5], [0.75, 0.25], [0.25, 0.75], [0.375, 0.375], [0.875, 0.875]]
    np.testing.assert_array_equal(SobolEngine(2).draw(6).numpy(), np.array(expected, dtype=np.float32))


def test_out_of_the_wrong_shape_is_refused():
    with pytest.raises(RuntimeError, match="out has shape"):
        SobolEngine(2).draw(3, out=ember.empty(2, 2))
