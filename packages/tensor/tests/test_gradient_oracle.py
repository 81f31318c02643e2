"""``ember.gradient`` against PyTorch's: uniform spacing, per-dimension spacing, coordinates, both
edge orders, chosen dims, integer input, errors, and autograd through it."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

RNG = np.random.default_rng(0)


def _coords(n: int) -> np.ndarray:
    return np.cumsum(RNG.uniform(0.2, 2.0, n))


CASES = [
    ((7,), {}),
    ((7,), {"spacing": 0.5, "edge_order": 2}),
    ((4, 5), {"spacing": [1.0, 2.5]}),
    ((4, 5), {"dim": 1, "edge_order": 2}),
    ((3, 4, 5), {"dim": [0, 2], "spacing": [2.0, 0.25]}),
    ((6,), {"spacing": ("coords",)}),
    ((6,), {"spacing": ("coords",), "edge_order": 2}),
    ((5, 6), {"spacing": ("coords", "coords"), "edge_order": 2}),
    ((5, 6), {"dim": -1, "spacing": ("coords",)}),
]


def _spacing(lib, spacing, shape, dims):
    if not isinstance(spacing, tuple):
        return spacing
    return tuple(lib.tensor(_coords(shape[d])) for d in dims)


@pytest.mark.parametrize(("shape", "kwargs"), CASES)
def test_values_and_gradients_match_pytorch(shape, kwargs):
    data = RNG.standard_normal(shape)
    dim = kwargs.get("dim")
    dims = list(range(len(shape))) if dim is None else ([dim] if isinstance(dim, int) else dim)
    dims = [d % len(shape) for d in dims]
    state = RNG.bit_generator.state
    results = []
    for lib in (ember, torch):
        RNG.bit_generator.state = state
        x = lib.tensor(data, requires_grad=True)
        options = dict(kwargs)
        if "spacing" in options:
            options["spacing"] = _spacing(lib, options["spacing"], shape, dims)
        out = lib.gradient(x, **options)
        sum((o * (i + 1)).sum() for i, o in enumerate(out)).backward()
        results.append(([o.detach().numpy() for o in out], x.grad.numpy()))
    (ours, our_grad), (theirs, their_grad) = results
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-12, atol=1e-12)


def test_integer_input_gives_the_default_float():
    ours = ember.gradient(ember.tensor([1, 4, 9, 16]))[0]
    theirs = torch.gradient(torch.tensor([1, 4, 9, 16]))[0]
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize(
    ("shape", "kwargs"),
    [((2,), {"edge_order": 2}), ((3, 4), {"spacing": [1.0, 2.0, 3.0]}), ((4,), {"edge_order": 3})],
)
def test_errors_match_pytorch(shape, kwargs):
    with pytest.raises(RuntimeError) as theirs:
        torch.gradient(torch.ones(shape), **kwargs)
    with pytest.raises(RuntimeError) as ours:
        ember.gradient(ember.ones(shape), **kwargs)
    assert str(ours.value).split(",")[0] == str(theirs.value).split(",")[0]
