"""ember.functional: PyTorch's torch.functional path, answering with the top-level functions."""

import pytest

import ember
import ember.functional


def test_names_are_the_top_level_functions():
    for name in ember.functional.__all__:
        assert getattr(ember.functional, name) is getattr(ember, name)
    assert ember.functional.einsum("ij->ji", ember.ones(2, 3)).shape == (3, 2)


def test_a_name_outside_the_module_is_an_attribute_error():
    with pytest.raises(AttributeError, match=r"ember\.functional"):
        ember.functional.conv2d  # noqa: B018


def test_the_same_names_as_torch_functional():
    pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
    import torch.functional

    assert sorted(ember.functional._NAMES) == sorted(torch.functional.__all__)
    assert set(ember.functional.__all__) <= set(torch.functional.__all__)
    assert ember.functional is ember.__getattr__("functional")
