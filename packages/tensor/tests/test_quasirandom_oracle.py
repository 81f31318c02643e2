"""ember.quasirandom.SobolEngine against torch.quasirandom.SobolEngine: unscrambled points are equal."""

import numpy as np
import pytest

import ember
from ember.quasirandom import SobolEngine
from ember.quasirandom.directions import initial_state

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")


def _equal(ours, theirs):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_the_direction_numbers_are_pytorchs_for_every_dimension():
    theirs = torch.zeros(SobolEngine.MAXDIM, SobolEngine.MAXBIT, dtype=torch.long)
    torch._sobol_engine_initialize_state_(theirs, SobolEngine.MAXDIM)
    np.testing.assert_array_equal(initial_state(SobolEngine.MAXDIM), theirs.numpy())
    np.testing.assert_array_equal(SobolEngine(7).sobolstate.numpy(), theirs[:7].numpy())


@pytest.mark.parametrize("dimension", [1, 2, 6, 40])
def test_draw_sequence_matches(dimension):
    ours, theirs = SobolEngine(dimension), torch.quasirandom.SobolEngine(dimension)
    for n in (1, 1, 5, 17, 64):
        _equal(ours.draw(n), theirs.draw(n))
    _equal(ours.draw(3, dtype=ember.float64), theirs.draw(3, dtype=torch.float64))
    assert ours.num_generated == theirs.num_generated
    _equal(ours.quasi, theirs.quasi)


@pytest.mark.parametrize("first", [1, 9])
def test_draw_from_the_start_in_float64(first):
    ours, theirs = SobolEngine(3), torch.quasirandom.SobolEngine(3)
    _equal(ours.draw(first, dtype=ember.float64), theirs.draw(first, dtype=torch.float64))


def test_draw_base2_fast_forward_and_reset():
    ours, theirs = SobolEngine(4), torch.quasirandom.SobolEngine(4)
    _equal(ours.draw_base2(3), theirs.draw_base2(3))
    _equal(ours.draw_base2(3), theirs.draw_base2(3))
    ours.fast_forward(11)
    theirs.fast_forward(11)
    _equal(ours.draw(6), theirs.draw(6))
    assert ours.reset() is ours
    theirs.reset()
    _equal(ours.draw(4), theirs.draw(4))
    ours.reset().fast_forward(5)
    theirs.reset().fast_forward(5)
    _equal(ours.draw(5), theirs.draw(5))


def test_draw_into_out():
    ours, theirs = SobolEngine(2), torch.quasirandom.SobolEngine(2)
    out = ember.empty(4, 2)
    assert ours.draw(4, out=out) is out
    _equal(out, theirs.draw(4))


def test_errors_and_repr():
    for dimension in (0, SobolEngine.MAXDIM + 1):
        with pytest.raises(ValueError) as theirs:
            torch.quasirandom.SobolEngine(dimension)
        with pytest.raises(ValueError) as ours:
            SobolEngine(dimension)
        assert str(ours.value) == str(theirs.value)
    ours, theirs = SobolEngine(3), torch.quasirandom.SobolEngine(3)
    ours.draw(3)
    theirs.draw(3)
    with pytest.raises(ValueError) as their_error:
        theirs.draw_base2(2)
    with pytest.raises(ValueError) as our_error:
        ours.draw_base2(2)
    assert str(our_error.value) == str(their_error.value)
    for kwargs in ({}, {"scramble": True}, {"scramble": True, "seed": 5}):
        assert repr(SobolEngine(3, **kwargs)) == repr(torch.quasirandom.SobolEngine(3, **kwargs))


def test_zero_and_negative_counts():
    ours, theirs = SobolEngine(2), torch.quasirandom.SobolEngine(2)
    for engine in (ours, theirs):
        engine.fast_forward(0)
    _equal(ours.draw(3), theirs.draw(3))
    _equal(ours.draw(0), theirs.draw(0))
    fresh_ours, fresh_theirs = SobolEngine(2), torch.quasirandom.SobolEngine(2)
    with pytest.raises(RuntimeError) as their_error:
        fresh_theirs.draw(0)
    with pytest.raises(RuntimeError) as our_error:
        fresh_ours.draw(0)
    assert str(our_error.value) == str(their_error.value)
