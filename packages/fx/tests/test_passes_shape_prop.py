"""ember.fx.passes.shape_prop.ShapeProp against torch.fx.passes.shape_prop.ShapeProp on the same programs.

Both libraries trace the same model (built from ``fx_trace_models`` with equal weights) and run
ShapeProp on equal inputs; every node must get the same metadata: shape, dtype, requires_grad,
strides, memory format (contiguous or none), and the same type name of its value.
"""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
torch_fx = pytest.importorskip("torch.fx")
import fx_trace_models as models  # noqa: E402
from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp  # noqa: E402

import ember  # noqa: E402
import ember.fx  # noqa: E402
from ember.fx.passes.shape_prop import ShapeProp, TensorMetadata  # noqa: E402


def _norm_meta(meta):
    if isinstance(meta, tuple) and hasattr(meta, "memory_format"):
        fmt = None if meta.memory_format is None else str(meta.memory_format).split(".")[-1]
        return (
            tuple(meta.shape),
            str(meta.dtype).split(".")[-1],
            meta.requires_grad,
            tuple(meta.stride),
            fmt,
            meta.is_quantized,
            dict(meta.qparams),
        )
    if isinstance(meta, (list, tuple)):
        return (type(meta).__name__, tuple(_norm_meta(m) for m in meta))
    if isinstance(meta, dict):
        return {k: _norm_meta(v) for k, v in meta.items()}
    return meta


def _metas(gm):
    return {
        n.name: (_norm_meta(n.meta.get("tensor_meta")), n.meta["type"].__name__)
        for n in gm.graph.nodes
        if "type" in n.meta
    }


def _pair(make):
    tm, em = make(torch), make(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    tm.eval()
    em.eval()
    return tm, em


def _compare(tm, em, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    tgm, egm = torch_fx.symbolic_trace(tm), ember.fx.symbolic_trace(em)
    t_out = TorchShapeProp(tgm).propagate(*[torch.tensor(a) for a in arrays])
    e_out = ShapeProp(egm).propagate(*[ember.tensor(a) for a in arrays])
    expected, actual = _metas(tgm), _metas(egm)
    assert actual == expected
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-4, atol=1e-5)
    return egm


def test_gpt_block():
    egm = _compare(*_pair(models.make_gpt_block), (2, 8, 16))
    # The split gives a tuple of three tensors: its metadata is a tuple too.
    split = next(n for n in egm.graph.nodes if n.target == "split")
    assert isinstance(split.meta["tensor_meta"], tuple) and len(split.meta["tensor_meta"]) == 3
    assert all(isinstance(m, TensorMetadata) for m in split.meta["tensor_meta"])


def test_cnn():
    _compare(*_pair(models.make_cnn), (2, 3, 8, 8))


def test_rnn():
    _compare(*_pair(models.make_rnn), (2, 6, 5))


def make_views(lib):
    class Views(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(lib.ones(4, 6))

        def forward(self, x):
            t = x.transpose(0, 1)  # not contiguous
            s = x[:, ::2]  # strided
            e = x.unsqueeze(0).expand(3, 4, 6)  # zero strides
            pieces = lib.split(x, 3, dim=1)
            parts = {"a": pieces[0], "b": pieces[1]}
            n = x.sum() > 0
            return t.sum() + s.sum() + e.sum() + (parts["a"] * self.w[:, :3]).sum() + x.size(0) + n

    return Views()


def test_strides_containers_and_non_tensors():
    egm = _compare(*_pair(make_views), (4, 6))
    by_name = {n.name: n for n in egm.graph.nodes}
    assert by_name["transpose"].meta["tensor_meta"].memory_format is None
    assert by_name["size"].meta["type"] is int and "tensor_meta" not in by_name["size"].meta
    assert by_name["w"].meta["tensor_meta"].requires_grad


def test_error_names_the_node():
    class Bad(ember.nn.Module):
        def forward(self, x):
            return ember.matmul(x, x)

    gm = ember.fx.symbolic_trace(Bad())
    with pytest.raises(RuntimeError, match="ShapeProp error for: node=%matmul"):
        ShapeProp(gm).propagate(ember.ones(2, 3))


def test_fake_mode_gives_the_metadata_of_real_runs():
    fake_tensor = pytest.importorskip("ember._subclasses.fake_tensor")
    _, em = _pair(models.make_gpt_block)
    x = ember.randn(2, 8, 16)
    real_gm = ember.fx.symbolic_trace(em)
    fake_gm = copy.deepcopy(real_gm)
    ShapeProp(real_gm).propagate(x)
    out = ShapeProp(fake_gm, fake_mode=fake_tensor.FakeTensorMode()).propagate(x)
    assert isinstance(out, fake_tensor.FakeTensor)
    fake_metas, real_metas = _metas(fake_gm), _metas(real_gm)
    assert {k: v[0] for k, v in fake_metas.items()} == {k: v[0] for k, v in real_metas.items()}
    # Values are fakes where the real run made tensors.
    assert {k for k, v in fake_metas.items() if v[1] == "FakeTensor"} == {
        k for k, v in real_metas.items() if v[1] == "Tensor"
    }
    # The module keeps its real parameters.
    assert not any(isinstance(p, fake_tensor.FakeTensor) for p in fake_gm.parameters())
