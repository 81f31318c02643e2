"""ShapeProp without the oracle: metadata read off the values, containers, and the fake-mode errors."""

import pytest

import ember
import ember.fx
from ember.fx.passes.shape_prop import ShapeProp, TensorMetadata


def _model(x, y):
    t = x.transpose(0, 1)
    parts = ember.split(y, 2, dim=0)
    return t.sum() + parts[0].sum(), {"t": t, "n": x.size(0)}


def test_metadata_of_each_node():
    gm = ember.fx.symbolic_trace(_model)
    x, y = ember.ones(3, 4), ember.zeros(4, dtype=ember.float64, requires_grad=True)
    out = ShapeProp(gm).propagate(x, y)
    nodes = {n.name: n for n in gm.graph.nodes}

    t = x.transpose(0, 1)
    assert nodes["transpose"].meta["tensor_meta"] == TensorMetadata(
        t.shape, ember.float32, False, (1, 4), None, False, {}
    )
    assert nodes["x"].meta["tensor_meta"].memory_format is ember.contiguous_format
    assert nodes["y"].meta["tensor_meta"].requires_grad and nodes["y"].meta["tensor_meta"].dtype is ember.float64
    # A tuple of tensors gives a tuple of metadata; a dict output a dict; an int no metadata.
    split = nodes["split"].meta["tensor_meta"]
    assert isinstance(split, tuple) and [tuple(m.shape) for m in split] == [(2,), (2,)]
    assert nodes["split"].meta["type"] is tuple
    assert nodes["size"].meta["type"] is int and "tensor_meta" not in nodes["size"].meta
    assert set(nodes["output"].meta["tensor_meta"][1]) == {"t", "n"}
    assert out[1]["n"] == 3


def test_fake_mode_must_be_a_fake_tensor_mode():
    gm = ember.fx.symbolic_trace(_model)
    with pytest.raises(TypeError, match="must be a FakeTensorMode"):
        ShapeProp(gm, fake_mode=object())


def test_fake_mode_active_around_the_pass_is_used():
    from ember._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    gm = ember.fx.symbolic_trace(_model)
    x, y = ember.ones(3, 4), ember.zeros(4)
    with FakeTensorMode() as mode:
        prop = ShapeProp(gm)
    assert prop.fake_mode is mode
    out = prop.propagate(x, y)
    assert isinstance(out[0], FakeTensor)
    assert tuple(next(iter(gm.graph.nodes)).meta["tensor_meta"].shape) == (3, 4)
