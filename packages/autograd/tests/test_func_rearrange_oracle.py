"""ember.func.rearrange against torch.func.rearrange: values, shapes and errors."""

import numpy as np
import pytest

import ember
import ember.func

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
import torch.func  # noqa: E402, F811  (a submodule: import it)

X = np.arange(120).reshape(2, 3, 4, 5)
CASES = [
    ("a b c d -> d c b a", {}),
    ("a b c d -> a (b c) d", {}),
    ("a b (c1 c2) d -> c2 a b c1 d", {"c1": 2}),
    ("a b (c1 c2) d -> c2 a b c1 d", {"c1": 2, "c2": 2}),
    ("... d -> d ...", {}),
    ("a ... -> (...) a", {}),
    ("a ... d -> d (...) a", {}),
    ("a b ... -> (b ...) a", {}),
    ("... -> ...", {}),
    ("a b c d -> a b c d 1", {}),
    ("a b c d -> (a d) 1 (c b)", {}),
    ("a b c d -> a b c d ()", {}),
    ("a b c d -> (a b c d)", {}),
]


@pytest.mark.parametrize(("pattern", "lengths"), CASES)
def test_values_match(pattern, lengths):
    ours = ember.func.rearrange(ember.tensor(X), pattern, **lengths)
    theirs = torch.func.rearrange(torch.tensor(X), pattern, **lengths)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_a_list_is_stacked_and_gradients_flow():
    parts = [ember.tensor(X[0], dtype=ember.float64, requires_grad=True), ember.tensor(X[1], dtype=ember.float64)]
    out = ember.func.rearrange(parts, "n b c d -> (b n) c d")
    theirs = torch.func.rearrange([torch.tensor(X[0]), torch.tensor(X[1])], "n b c d -> (b n) c d")
    np.testing.assert_array_equal(out.detach().numpy(), theirs.numpy())
    (out * 2).sum().backward()
    assert parts[0].grad.tolist() == np.full((3, 4, 5), 2.0).tolist()


@pytest.mark.parametrize(
    "pattern",
    ["a b -> b a", "a b c d -> a b c", "a b c d", "a b c 2 -> a b c", "a b c d -> a b c d e"],
)
def test_errors(pattern):
    with pytest.raises(ValueError) as theirs:
        torch.func.rearrange(torch.tensor(X), pattern)
    with pytest.raises(ValueError) as ours:
        ember.func.rearrange(ember.tensor(X), pattern)
    first_line = str(theirs.value).splitlines()[0]
    assert str(ours.value).splitlines()[0] == first_line


def test_two_unknown_sizes_in_one_group():
    with pytest.raises(ValueError, match="cannot infer the sizes of two dimensions at once"):
        ember.func.rearrange(ember.tensor(X), "a (b c) d e -> a b c d e")
