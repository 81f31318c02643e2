"""AOT autograd against PyTorch's ``functorch.compile.aot_function`` on the same programs.

Both libraries compile the same model from the same weights; the forward and backward graphs each
gives its compilers are compared in kind: ours are functional (no op writes memory) as PyTorch's are,
their gradients equal PyTorch's eager gradients, and the min-cut partitioner saves at most a few
tensors more than PyTorch's does (fewer is allowed: ours recomputes every cheap op it may).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "nn" / "tests"))

from training_models import cnn, copy_state, gpt

import ember
from ember.aot import aot_function, default_partition, min_cut_rematerialization_partition, nop
from ember.core.dispatch import OpOverload

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
functorch_compile = pytest.importorskip("functorch.compile")

# How many more tensors our min-cut partitioner may save than PyTorch's.
SAVED_SLACK = 3


def _block(lib):
    return gpt(lib, vocab=16, width=32, layers=1, heads=4, context=16).blocks[0]


def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4), nn.Tanh())


PROGRAMS = {
    "mlp": (_mlp, (4, 8)),
    "GPT block": (_block, (2, 16, 32)),
    "CNN eval": (lambda lib: cnn(lib).eval(), (2, 3, 16, 16)),
}


class Graphs:
    """A compiler that keeps the graphs it was given and runs them as they are."""

    def __init__(self, run) -> None:
        self.graphs = []
        self.run = run

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return self.run(gm, example_inputs)


def _saved_tensors(backward_graph, tensor_type) -> tuple[int, int]:
    """The tensors the backward graph takes besides the tangents (what the forward saved for it): how
    many, and their bytes."""
    placeholders = [n for n in backward_graph.graph.nodes if n.op == "placeholder"]
    values = [n.meta.get("val") for n in placeholders if not n.name.startswith("tangents")]
    values = [v for v in values if isinstance(v, tensor_type)]
    return len(values), sum(v.numel() * v.element_size() for v in values)


def _compile_both(name, ours_partition, theirs_partition):
    build, shape = PROGRAMS[name]
    torch.manual_seed(0)
    theirs_module = build(torch)
    ours_module = build(ember)
    copy_state(theirs_module, ours_module, ember)
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")

    def their_fn(params, x):
        return torch.func.functional_call(theirs_module, params, (x,))

    def our_fn(params, x):
        return ember.func.functional_call(ours_module, params, (x,))

    theirs_fw, theirs_bw = Graphs(lambda gm, _: gm.forward), Graphs(lambda gm, _: gm.forward)
    ours_fw, ours_bw = Graphs(nop), Graphs(nop)
    their_params = {k: v for k, v in theirs_module.named_parameters()}
    our_params = {k: v for k, v in ours_module.named_parameters()}
    theirs = functorch_compile.aot_function(their_fn, theirs_fw, theirs_bw, partition_fn=theirs_partition)
    ours = aot_function(our_fn, ours_fw, ours_bw, partition_fn=ours_partition)
    their_out = theirs({**their_params, **dict(theirs_module.named_buffers())}, torch.tensor(x))
    our_out = ours({**our_params, **dict(ours_module.named_buffers())}, ember.tensor(x))
    their_out.sin().sum().backward()
    our_out.sin().sum().backward()
    return (theirs_module, theirs_fw, theirs_bw, their_out), (ours_module, ours_fw, ours_bw, our_out)


def _writes_memory(node) -> bool:
    target = node.target
    if node.op != "call_function" or not isinstance(target, OpOverload) or not target.schema.is_mutable:
        return False
    # The one exception, until the core has a functional form of it (PyTorch's
    # _native_batch_norm_legit_functional): functionalization runs BatchNorm on clones of the running
    # statistics, so it writes only tensors the graph made itself, never an input.
    written = [node.args[3], node.args[4]]
    return not (
        target is ember.ops.aten._native_batch_norm_legit.default
        and all(w.op == "call_function" and w.target is ember.ops.aten.clone.default for w in written)
    )


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_graphs_are_functional_and_gradients_equal_pytorch(name):
    theirs, ours = _compile_both(name, min_cut_rematerialization_partition, functorch_compile.default_partition)
    their_module, their_fw, their_bw, their_out = theirs
    our_module, our_fw, our_bw, our_out = ours
    for gm in (*our_fw.graphs, *our_bw.graphs):
        assert not [n.format_node() for n in gm.graph.nodes if _writes_memory(n)]
    for gm in (*their_fw.graphs, *their_bw.graphs):
        assert not [n for n in gm.graph.nodes if n.op == "call_function" and _torch_writes(n.target)]
    np.testing.assert_allclose(np.asarray(our_out.detach()), their_out.detach().numpy(), rtol=1e-4, atol=1e-5)
    their_grads = dict(their_module.named_parameters())
    for key, p in our_module.named_parameters():
        expected = their_grads[key].grad.numpy()
        np.testing.assert_allclose(np.asarray(p.grad), expected, rtol=1e-3, atol=1e-5, err_msg=key)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_saved_tensor_counts_are_close_to_pytorch(name):
    counts = {}
    for label, ours_p, theirs_p in [
        ("default", default_partition, functorch_compile.default_partition),
        ("min_cut", min_cut_rematerialization_partition, functorch_compile.min_cut_rematerialization_partition),
    ]:
        theirs, ours = _compile_both(name, ours_p, theirs_p)
        counts[label] = (
            _saved_tensors(ours[2].graphs[0], ember.Tensor),
            _saved_tensors(theirs[2].graphs[0], torch.Tensor),
        )
    (ours_default, ours_default_bytes), (theirs_default, theirs_default_bytes) = counts["default"]
    (ours_min_cut, ours_min_cut_bytes), (theirs_min_cut, theirs_min_cut_bytes) = counts["min_cut"]
    # Eager autograd's choices: the libraries' derivative formulas save nearly the same tensors
    # (ours no output of a multi-output op that only a dead node of the joint graph reads: a CNN's
    # batch norms' normalized outputs, which PyTorch's default partition saves).
    assert ours_default <= theirs_default + SAVED_SLACK, counts
    assert ours_default_bytes <= theirs_default_bytes, counts
    assert ours_min_cut <= theirs_min_cut + SAVED_SLACK, counts
    assert ours_min_cut_bytes <= theirs_min_cut_bytes, counts
    assert ours_min_cut_bytes <= ours_default_bytes, counts


def _torch_writes(target) -> bool:
    schema = getattr(target, "_schema", None)
    return schema is not None and schema.is_mutable
