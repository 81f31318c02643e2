"""aot_function's runtime: gradients equal eager's, and each case the runtime wrapper handles."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.aot import (
    aot_function,
    default_partition,
    make_boxed_compiler,
    make_boxed_func,
    min_cut_rematerialization_partition,
    nop,
)
from ember.fx.graph_module import GraphModule

PARTITIONERS = [default_partition, min_cut_rematerialization_partition]


def _leaves(*shapes, requires_grad=True, seed=0):
    rng = np.random.default_rng(seed)
    return [ember.tensor(rng.standard_normal(s)).requires_grad_(requires_grad) for s in shapes]


def _grads(fn, inputs, cotangent_seed=1):
    out = fn(*inputs)
    outs = out if isinstance(out, tuple | list) else (out,)
    outs = [o for o in outs if isinstance(o, ember.Tensor) and o.requires_grad]
    rng = np.random.default_rng(cotangent_seed)
    cots = [ember.tensor(rng.standard_normal(tuple(o.shape))).to(o.dtype) for o in outs]
    wrt = [i for i in inputs if i.requires_grad]
    return out, ember.autograd.grad(outs, wrt, cots, allow_unused=True)


def _assert_close(a, b):
    if a is None or b is None:
        assert a is None and b is None
        return
    np.testing.assert_allclose(np.asarray(a.detach()), np.asarray(b.detach()), rtol=1e-12, atol=1e-12)


class Recorder:
    """A nop compiler that keeps the graphs it was given."""

    def __init__(self) -> None:
        self.graphs: list[GraphModule] = []

    def __call__(self, gm, example_inputs):
        assert isinstance(gm, GraphModule)
        assert len(example_inputs) == len([n for n in gm.graph.nodes if n.op == "placeholder"])
        self.graphs.append(gm)
        return make_boxed_func(gm.forward)


def mlp(x, w1, b1, w2):
    return ((x @ w1 + b1).tanh() @ w2).relu().sum(1).exp()


@pytest.mark.parametrize("partition", PARTITIONERS, ids=lambda p: p.__name__)
def test_gradients_equal_eager(partition):
    inputs = _leaves((4, 3), (3, 5), (5,), (5, 2))
    compiled = aot_function(mlp, nop, partition_fn=partition)
    out, grads = _grads(compiled, inputs)
    expected_out, expected = _grads(mlp, inputs)
    _assert_close(out, expected_out)
    for a, b in zip(grads, expected, strict=True):
        _assert_close(a, b)


def test_compilers_receive_forward_and_backward_graphs():
    fw, bw = Recorder(), Recorder()
    inputs = _leaves((4, 3), (3, 5), (5,), (5, 2))
    compiled = aot_function(mlp, fw, bw)
    _grads(compiled, inputs)
    _grads(compiled, inputs)
    assert len(fw.graphs) == 1 and len(bw.graphs) == 1  # compiled once, run twice
    (out,) = fw.graphs[0].graph.find_nodes(op="output")
    fw_outputs = len(out.args[0])
    bw_inputs = [n for n in bw.graphs[0].graph.nodes if n.op == "placeholder"]
    # The forward returns the output and what it saves; the backward takes the saved values and one tangent.
    assert fw_outputs - 1 == len(bw_inputs) - 1
    assert [n.name for n in bw_inputs][-1] == "tangents_1"


def test_min_cut_recomputes_pointwise_ops_instead_of_saving_them():
    def f(x):
        return x.sin().cos().exp().sum()

    (x,) = _leaves((8, 8))
    saved = {}
    for partition in PARTITIONERS:
        fw = Recorder()
        _grads(aot_function(f, fw, nop, partition_fn=partition), [x])
        (out,) = fw.graphs[0].graph.find_nodes(op="output")
        saved[partition.__name__] = len(out.args[0]) - 1
    # Eager autograd saves x, sin, cos and exp; the min cut saves x alone and recomputes the rest.
    assert saved["default_partition"] >= 3
    assert saved["min_cut_rematerialization_partition"] == 1


def test_min_cut_saves_reductions_that_shrink_their_input():
    """A mean over 64 columns is a pass over the input for 8 numbers: saved, not run again in the
    backward; a sum over two columns halves its input and may still be recomputed."""

    def f(x):
        return ((x - x.mean(1, keepdim=True)) * x).exp().sum() + (x[:, :2].sum(1) * x[:, 0]).exp().sum()

    (x,) = _leaves((8, 64))
    bw = Recorder()
    compiled = aot_function(f, nop, bw, partition_fn=min_cut_rematerialization_partition)
    _, grads = _grads(compiled, [x])
    _assert_close(grads[0], _grads(f, [x])[1][0])
    targets = [str(n.target) for n in bw.graphs[0].graph.nodes if n.op == "call_function"]
    assert not any("mean" in t for t in targets), targets


def test_inputs_that_do_not_require_grad():
    x, w = _leaves((3, 4), (4, 2))
    x.requires_grad_(False)
    compiled = aot_function(lambda x, w: (x @ w).sin(), nop)
    out = compiled(x, w)
    out.sum().backward()
    assert x.grad is None
    expected = ember.autograd.grad((x @ w).sin().sum(), [w])[0]
    _assert_close(w.grad, expected)


def test_outputs_that_do_not_require_grad_are_non_differentiable():
    def f(x):
        return x.exp(), x.argmax(), x.detach() * 2

    (x,) = _leaves((3, 4))
    y, index, detached = aot_function(f, nop)(x)
    assert y.requires_grad and not index.requires_grad and not detached.requires_grad
    assert int(index) == int(x.argmax())
    y.sum().backward()
    _assert_close(x.grad, x.detach().exp())


def test_no_grad_calls_use_the_inference_compiler():
    fw, bw, inference = Recorder(), Recorder(), Recorder()
    inputs = _leaves((4, 3), (3, 5), (5,), (5, 2))
    compiled = aot_function(mlp, fw, bw, inference_compiler=inference)
    with ember.no_grad():
        out = compiled(*inputs)
    assert not out.requires_grad
    assert len(inference.graphs) == 1 and not fw.graphs and not bw.graphs
    _assert_close(out, mlp(*inputs))
    # Inputs that require no grad take the same path with grad mode on.
    compiled(*[i.detach() for i in inputs])
    assert len(inference.graphs) == 2 and not fw.graphs


def test_inference_falls_back_to_the_forward_compiler():
    fw = Recorder()
    with ember.no_grad():
        aot_function(mlp, fw)(*_leaves((4, 3), (3, 5), (5,), (5, 2)))
    assert len(fw.graphs) == 1


@pytest.mark.parametrize("grad", [True, False])
def test_outputs_that_alias_inputs_are_real_views(grad):
    def f(x, y):
        return x.view(-1), x.t(), x, y * 2

    x, y = _leaves((3, 4), (2,), requires_grad=grad)
    flat, transposed, same, doubled = aot_function(f, nop)(x, y)
    for out in (flat, transposed, same):
        assert out._storage is x._storage
    assert transposed.shape == (4, 3) and transposed.stride() == (1, 4)
    with ember.no_grad():
        x[0, 0] = 100.0
    assert float(flat[0]) == 100.0 and float(transposed[0, 0]) == 100.0
    if grad:
        (flat.sum() + 2 * transposed.sum() + doubled.sum()).backward()
        _assert_close(x.grad, ember.full((3, 4), 3.0, dtype=x.dtype))
        _assert_close(y.grad, ember.full((2,), 2.0, dtype=y.dtype))


def _mutating(x, buffer):
    buffer.add_(1)
    return x * buffer


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("grad", [True, False])
def test_input_mutations_are_applied_as_eager(grad, keep):
    x, buffer = _leaves((3,), (3,), requires_grad=grad)
    buffer.requires_grad_(False)
    expected_buffer = buffer.detach() + 1
    compiled = aot_function(_mutating, nop, keep_inference_input_mutations=keep)
    out = compiled(x, buffer)
    _assert_close(buffer, expected_buffer)
    _assert_close(out, x.detach() * expected_buffer)
    compiled(x, buffer)
    _assert_close(buffer, expected_buffer + 1)
    if grad:
        out.sum().backward()
        _assert_close(x.grad, expected_buffer)


def test_mutated_inputs_leave_the_graphs_functional():
    fw, bw, inference = Recorder(), Recorder(), Recorder()
    x, buffer = _leaves((3,), (3,))
    buffer.requires_grad_(False)
    compiled = aot_function(_mutating, fw, bw, inference_compiler=inference)
    compiled(x, buffer).sum().backward()
    with ember.no_grad():
        compiled(x, buffer)
    for gm in (*fw.graphs, *bw.graphs, *inference.graphs):
        assert not [n for n in gm.graph.nodes if n.op == "call_function" and n.target.schema.is_mutable]
    (output,) = fw.graphs[0].graph.find_nodes(op="output")
    assert output.args[0][1].target is ember.ops.aten.add.Tensor  # the buffer's new value follows the output


def test_inputs_that_require_grad_may_not_be_mutated():
    def f(x):
        with ember.no_grad():
            x.mul_(2)
        return x * 3

    (x,) = _leaves((3,))
    with pytest.raises(NotImplementedError, match=r"input\(s\) \[0\], which require grad"):
        aot_function(f, nop)(x)


def test_in_place_ops_on_intermediates_are_fine():
    def f(x):
        y = x * 2
        y.add_(1)
        y[0] = 0.0
        return y.sin()

    (x,) = _leaves((4,))
    compiled = aot_function(f, nop, partition_fn=min_cut_rematerialization_partition)
    _, grads = _grads(compiled, [x])
    _, expected = _grads(f, [x])
    _assert_close(grads[0], expected[0])


def test_double_backward_is_refused():
    (x,) = _leaves((3,))
    y = aot_function(lambda x: (x * x * x).sum(), nop)(x)
    (g,) = ember.autograd.grad(y, [x], create_graph=True)
    _assert_close(g, 3 * x.detach() ** 2)
    with pytest.raises(RuntimeError, match="aot_function does not support double backward"):
        g.sum().backward()


@pytest.mark.parametrize("partition", PARTITIONERS, ids=lambda p: p.__name__)
def test_random_ops_draw_what_eager_draws(partition):
    def f(x):
        return ember.nn.functional.dropout(x.sin(), 0.5, True) * ember.rand_like(x)

    (x,) = _leaves((6, 5))
    compiled = aot_function(f, nop, partition_fn=partition)
    for seed in (0, 1):
        ember.manual_seed(seed)
        out, grads = _grads(compiled, [x])
        offset = ember.default_generator.get_offset()
        ember.manual_seed(seed)
        expected_out, expected = _grads(f, [x])
        assert offset == ember.default_generator.get_offset()
        _assert_close(out, expected_out)
        _assert_close(grads[0], expected[0])


def test_min_cut_recomputes_random_ops_with_the_same_numbers():
    def f(x):
        return (ember.rand_like(x) * x).exp().sum()

    fw, bw = Recorder(), Recorder()
    (x,) = _leaves((16, 16))
    compiled = aot_function(f, fw, bw, partition_fn=min_cut_rematerialization_partition)
    ember.manual_seed(3)
    _, (grad,) = _grads(compiled, [x])
    ember.manual_seed(3)
    _, (expected,) = _grads(f, [x])
    _assert_close(grad, expected)
    backward_ops = [n.target for n in bw.graphs[0].graph.nodes if n.op == "call_function"]
    from ember.aot._rng import philox_call

    assert philox_call in backward_ops  # drawn again in the backward rather than saved


def test_dynamic_shapes_compile_once():
    fw = Recorder()
    compiled = aot_function(mlp, fw, nop, dynamic=True)
    for batch in (4, 7):
        inputs = _leaves((batch, 3), (3, 5), (5,), (5, 2))
        _, grads = _grads(compiled, inputs)
        _, expected = _grads(mlp, inputs)
        for a, b in zip(grads, expected, strict=True):
            _assert_close(a, b)
    assert len(fw.graphs) == 1


def test_static_shapes_recompile_per_shape():
    fw = Recorder()
    compiled = aot_function(mlp, fw, nop)
    for batch in (4, 7, 4):
        _grads(compiled, _leaves((batch, 3), (3, 5), (5,), (5, 2)))
    assert len(fw.graphs) == 2


def test_structured_inputs_and_outputs():
    def f(params, x, *, scale):
        h = x @ params["w"] + params["b"]
        return {"out": h * scale, "aux": [h.sum()]}

    w, b, x = _leaves((3, 2), (2,), (4, 3))
    out = aot_function(f, nop)({"w": w, "b": b}, x, scale=3.0)
    assert set(out) == {"out", "aux"}
    (out["out"].sum() + out["aux"][0]).backward()
    _assert_close(b.grad, ember.full((2,), 16.0, dtype=b.dtype))


def test_boxed_compilers():
    calls = []

    def unboxed(gm, _inputs):
        calls.append(gm)
        return gm.forward

    boxed = make_boxed_compiler(unboxed)
    inputs = _leaves((4, 3), (3, 5), (5,), (5, 2))
    _, grads = _grads(aot_function(mlp, boxed), inputs)
    _, expected = _grads(mlp, inputs)
    _assert_close(grads[0], expected[0])
    assert len(calls) == 2
    f = make_boxed_func(lambda a, b: a + b)
    assert f._boxed_call and f([1, 2]) == 3
    # Unboxed compiled functions are called with unpacked arguments.
    _, grads = _grads(aot_function(mlp, unboxed), inputs)
    _assert_close(grads[0], expected[0])


@pytest.mark.parametrize("partition", PARTITIONERS, ids=lambda p: p.__name__)
def test_the_same_tensor_passed_twice(partition):
    def f(a, b):
        return (a * b.sin()).sum()

    (x,) = _leaves((5,))
    compiled = aot_function(f, nop, partition_fn=partition)
    _, (ours,) = _grads(lambda x: compiled(x, x), [x])
    _, (expected,) = _grads(lambda x: f(x, x), [x])
    _assert_close(ours, expected)


def test_a_formula_that_reads_only_metadata_traces():
    """nll_loss's derivative gets the input's metadata (a TensorMeta), which the graph writes as an
    uninitialized tensor of that shape; the gradient is eager's."""

    def f(logits, target):
        return ember.nn.functional.cross_entropy(logits, target)

    (logits,) = _leaves((4, 5))
    target = ember.tensor([0, 3, 1, 4])
    bw = Recorder()
    compiled = aot_function(f, nop, bw)
    _, (grad,) = _grads(lambda x: compiled(x, target), [logits])
    _, (expected,) = _grads(lambda x: f(x, target), [logits])
    _assert_close(grad, expected)
    targets = [n.target for n in bw.graphs[0].graph.nodes if n.op == "call_function"]
    assert ember.ops.aten.empty_strided.default in targets
    assert "TensorMeta" not in bw.graphs[0].code


def _saved_values(forward_graph: GraphModule, num_outputs: int = 1) -> list:
    (out,) = forward_graph.graph.find_nodes(op="output")
    return [n.meta["val"] for n in out.args[0][num_outputs:] if isinstance(n.meta.get("val"), ember.Tensor)]


def test_default_partition_saves_only_the_outputs_the_backward_reads():
    """Batch norm's saved mean and inverse deviation are read by the backward alone; its normalized
    output only by the ReLU in the forward. Saving the mean must not save the normalized output too."""

    def f(x, w, b):
        return ember.nn.functional.batch_norm(x, None, None, w, b, training=True).relu().sum()

    x, w, b = _leaves((4, 3, 5, 5), (3,), (3,))
    fw = Recorder()
    compiled = aot_function(f, fw, nop, partition_fn=default_partition)
    _, grads = _grads(compiled, [x, w, b])
    for ours, eager in zip(grads, _grads(f, [x, w, b])[1], strict=True):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(eager), rtol=1e-10, atol=1e-10)
    full_size = [v for v in _saved_values(fw.graphs[0]) if tuple(v.shape) == (4, 3, 5, 5)]
    assert len(full_size) == 2, [tuple(v.shape) for v in _saved_values(fw.graphs[0])]  # x and the ReLU's output


def test_min_cut_saves_the_value_nearer_the_backward_of_two_equal_ones():
    """The product and its ReLU are the same size; saving the ReLU leaves the backward nothing to
    run again (the ReLU's output is the second product's input and its own gradient's mask)."""

    def f(x, w1, w2):
        return ((x @ w1).relu() @ w2).sum()

    x, w1, w2 = _leaves((6, 5), (5, 4), (4, 3))
    bw = Recorder()
    compiled = aot_function(f, nop, bw, partition_fn=min_cut_rematerialization_partition)
    _, grads = _grads(compiled, [x, w1, w2])
    for ours, eager in zip(grads, _grads(f, [x, w1, w2])[1], strict=True):
        _assert_close(ours, eager)
    targets = [str(n.target) for n in bw.graphs[0].graph.nodes if n.op == "call_function"]
    assert not any("relu" in t for t in targets), targets
