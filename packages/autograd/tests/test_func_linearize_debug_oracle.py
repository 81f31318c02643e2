"""ember.func.linearize, debug_unwrap and replace_all_batch_norm_modules_ against torch.func."""

import numpy as np
import pytest

import ember
import ember.func
import ember.nn

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

X = np.random.RandomState(0).randn(3, 4)
T = np.random.RandomState(1).randn(3, 4)


def _f(module):
    def f(x, pair):
        return (x.sin() * pair[0]).sum(0), {"y": x.exp() + pair[1]}

    return f


def _args(module):
    x = module.tensor(X)
    return x, (module.tensor(T), x.cos())


def test_linearize_gives_the_output_and_the_jvp():
    ours_out, ours_fn = ember.func.linearize(_f(ember), *_args(ember))
    theirs_out, theirs_fn = torch.func.linearize(_f(torch), *_args(torch))
    np.testing.assert_allclose(ours_out[0].numpy(), theirs_out[0].numpy(), rtol=1e-12)
    for seed in (2, 3):  # the same jvp_fn, called twice
        tangents = np.random.RandomState(seed).randn(3, 3, 4)
        ours = ours_fn(*(_tangents(ember, tangents)))
        theirs = theirs_fn(*(_tangents(torch, tangents)))
        np.testing.assert_allclose(ours[0].numpy(), theirs[0].numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours[1]["y"].numpy(), theirs[1]["y"].numpy(), rtol=1e-12)


def _tangents(module, arrays):
    return module.tensor(arrays[0]), (module.tensor(arrays[1]), module.tensor(arrays[2]))


@pytest.mark.parametrize(
    "bad",
    [
        lambda m: (m.zeros(3, 5), (m.zeros(3, 4), m.zeros(3, 4))),
        lambda m: (m.zeros(3, 4, dtype=m.float32), (m.zeros(3, 4), m.zeros(3, 4))),
        lambda m: (m.zeros(3, 4), m.zeros(3, 4)),
    ],
)
def test_linearize_checks_the_tangents(bad):
    _, ours_fn = ember.func.linearize(_f(ember), *_args(ember))
    _, theirs_fn = torch.func.linearize(_f(torch), *_args(torch))
    with pytest.raises(RuntimeError) as theirs:
        theirs_fn(*bad(torch))
    with pytest.raises(RuntimeError) as ours:
        ours_fn(*bad(ember))
    if "argspec" in str(theirs.value):
        assert "argspec" in str(ours.value)
    else:
        assert str(ours.value).replace("ember", "torch") == str(theirs.value)


def test_debug_unwrap_under_nested_vmap():
    seen = {}

    def inner(module, key):
        def f(t):
            seen[key] = (
                tuple(module.func.debug_unwrap(t).shape),
                tuple(module.func.debug_unwrap(t, recurse=False).shape),
            )
            return t * 2

        return f

    x = np.zeros((4, 3, 2))
    ember.func.vmap(ember.func.vmap(inner(ember, "ours"), in_dims=1), in_dims=2)(ember.tensor(x))
    torch.func.vmap(torch.func.vmap(inner(torch, "theirs"), in_dims=1), in_dims=2)(torch.tensor(x))
    assert seen["ours"] == seen["theirs"]
    plain = ember.ones(2)
    assert ember.func.debug_unwrap(plain) is plain


def test_replace_all_batch_norm_modules():
    def build(module):
        return module.nn.Sequential(
            module.nn.BatchNorm1d(3), module.nn.Linear(3, 3), module.nn.Sequential(module.nn.BatchNorm2d(3))
        )

    ours, theirs = build(ember), build(torch)
    assert ember.func.replace_all_batch_norm_modules_(ours) is ours
    torch.func.replace_all_batch_norm_modules_(theirs)
    for ours_bn, theirs_bn in ((ours[0], theirs[0]), (ours[2][0], theirs[2][0])):
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            assert getattr(ours_bn, name) is None and getattr(theirs_bn, name) is None
        assert ours_bn.track_running_stats is theirs_bn.track_running_stats is False
    assert ember.func.vmap(ours[0])(ember.randn(5, 4, 3)).shape == (5, 4, 3)  # runs under vmap now
