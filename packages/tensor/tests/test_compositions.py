"""The Python surface of the shape composites beyond their OpInfo entries: meshgrid's warning."""

from __future__ import annotations

import pytest

import ember


def test_meshgrid_without_indexing_warns_and_uses_ij():
    a, b = ember.arange(2), ember.arange(3)
    with pytest.warns(UserWarning, match="required to pass the indexing argument"):
        x, y = ember.meshgrid(a, b)
    assert tuple(x.shape) == (2, 3) and x.tolist() == [[0, 0, 0], [1, 1, 1]]
    assert y.tolist() == [[0, 1, 2], [0, 1, 2]]


def test_meshgrid_with_indexing_does_not_warn(recwarn):
    ember.meshgrid(ember.arange(2), ember.arange(3), indexing="xy")
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]
