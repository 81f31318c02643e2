"""The top-level runtime names without the oracle: warn-always, symbolic ranges, futures across
threads, streams, schemas of the op table, control flow under ``ember.compile``, versions."""

from __future__ import annotations

import threading
import warnings

import pytest

import ember


def test_set_warn_always_repeats_warn_once_warnings():
    window_free = ember.ones(16)
    try:
        ember.set_warn_always(True)
        for _ in range(2):
            with pytest.warns(UserWarning, match="rectangular window"):
                ember.stft(window_free, 8, return_complex=True)
        ember.set_warn_always(False)  # given once already: quiet from now on
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ember.stft(window_free, 8, return_complex=True)
    finally:
        ember.set_warn_always(False)


def test_constrain_range_narrows_a_symbolic_size():
    from ember.fx.experimental.symbolic_shapes import ShapeEnv

    env = ShapeEnv()
    size = env.create_unbacked_symint()
    ember.sym_constrain_range(size, min=2, max=10)
    bounds = env.var_to_range[size.node.expr]
    assert (int(bounds.lower), int(bounds.upper)) == (2, 10)
    other = env.create_unbacked_symint()
    ember.sym_constrain_range_for_size(other, max=64)
    bounds = env.var_to_range[other.node.expr]
    assert (int(bounds.lower), int(bounds.upper)) == (0, 64)
    assert other.node.expr in env.size_like


def test_sym_sqrt_and_sym_sum_of_symbolic_sizes():
    from ember.fx.experimental.symbolic_shapes import ShapeEnv

    env = ShapeEnv()
    a, b = env.create_unbacked_symint(), env.create_unbacked_symint()
    total = ember.sym_sum([a, b, 3])
    assert isinstance(total, ember.SymInt)
    assert str(total.node.expr) == str((a + b + 3).node.expr)
    root = ember.sym_sqrt(a)
    assert isinstance(root, ember.SymFloat)


def test_future_wakes_waiters_in_other_threads():
    future = ember.futures.Future()
    results = []
    waiters = [threading.Thread(target=lambda: results.append(future.wait())) for _ in range(3)]
    for t in waiters:
        t.start()
    future.set_result("done")
    for t in waiters:
        t.join(timeout=10)
    assert results == ["done"] * 3


def test_future_callback_errors_are_logged_not_raised(caplog):
    future = ember.futures.Future()
    future.add_done_callback(lambda f: 1 / 0)
    future.set_result(1)
    assert future.value() == 1
    assert "ZeroDivisionError" in caplog.text


def test_value_of_an_unfinished_future_is_an_error():
    with pytest.raises(RuntimeError, match="not completed"):
        ember.futures.Future().value()
    assert ember.futures.collect_all([]).wait() == []


def test_streams_of_the_host_are_equal_and_hashable():
    assert ember.Stream() == ember.Stream("cpu")
    assert len({ember.Stream(), ember.Stream("cpu")}) == 1
    assert ember.Stream("meta") != ember.Stream("cpu")
    with ember.Stream() as s:
        assert s.query()


def test_op_table_schemas_have_pytorchs_attributes():
    schema = ember.ops.aten.add.Tensor.schema
    assert isinstance(schema, ember.FunctionSchema)
    assert schema.overload_name == "Tensor"
    alpha = schema.arguments[-1]
    assert (alpha.name, alpha.kwarg_only, alpha.default_value, alpha.has_default_value()) == ("alpha", True, 1, True)
    parsed = ember.parse_schema(str(schema))
    assert parsed == schema


def test_cond_and_while_loop_under_compile_give_eager_results():
    def step(i0, x, p):
        y = ember.cond(p.sum() > 0, lambda a: a + 1, lambda a: a - 1, (x * 2,))
        return ember.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2), (i0, y))[1]

    compiled = ember.compile(step, backend="eager")
    x = ember.arange(3.0)
    for p in (ember.ones(2), -ember.ones(2)):
        assert compiled(ember.tensor(0), x, p).tolist() == step(ember.tensor(0), x, p).tolist()


def test_while_loop_runs_the_body_while_the_condition_holds():
    i, a = ember.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2), (ember.tensor(0), ember.arange(4.0)))
    assert i.item() == 3 and a.tolist() == [0.0, 8.0, 16.0, 24.0]  # doubled three times
    count, values = ember.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, a + 1), [0, ember.zeros(2)])
    assert count == 2 and values.tolist() == [2.0, 2.0]
    # A body returning one tensor for one carried value gives that tensor, as PyTorch's does.
    assert ember.while_loop(lambda i: i < 3, lambda i: i + 1, (ember.tensor(0),)).item() == 3


@pytest.mark.parametrize(
    ("cond_fn", "body_fn", "carried", "match"),
    [
        (1, lambda i: (i + 1,), (0,), "callable"),
        (lambda i: (i < 3, i < 3), lambda i: (i + 1,), (ember.tensor(0),), "boolean scalar tensor"),
        (lambda i, a: i < 3, lambda i, a: (i + 1,), (ember.tensor(0), ember.ones(2)), "same number of outputs"),
        (lambda i: i < 3, lambda i: (i + 1.5,), (ember.tensor(0),), "same metadata.*dtype"),
        (lambda i: i.float(), lambda i: (i - 1,), (ember.tensor(3),), "boolean scalar tensor"),
        (lambda i: i < 3, lambda i: (i + 1,), ("a",), "tensors, ints"),
    ],
)
def test_while_loop_refusals_are_runtime_errors(cond_fn, body_fn, carried, match):
    with pytest.raises(RuntimeError, match=match):
        ember.while_loop(cond_fn, body_fn, carried)


def test_while_loop_checks_shapes_of_carried_tensors():
    with pytest.raises(RuntimeError, match=r"same metadata.*shape"):
        ember.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a[:1]), (ember.tensor(0), ember.ones(2)))
    with pytest.raises(RuntimeError, match="tuple or a list"):
        ember.while_loop(lambda i: i < 3, lambda i: (i + 1,), ember.tensor(0))
    assert ember.while_loop(lambda i: i < 0, lambda i: (i + 1,), (5,)) == (5,)


def test_version_compares_as_a_version():
    from ember.torch_version import InvalidVersion, TorchVersion

    v = TorchVersion("2.1.0+cpu")
    assert v > "2.1.0" and v < "2.1.1" and v >= (2, 1) and v < (2, 10)
    assert TorchVersion("2.1") == "2.1.0" and TorchVersion("1.0rc1") < "1.0" and TorchVersion("1.0.dev1") < "1.0a1"
    assert hash(v) == hash("2.1.0+cpu") and str(v) == "2.1.0+cpu"
    with pytest.raises(InvalidVersion):
        _ = v < "not a version"
    assert isinstance(ember.__version__, TorchVersion)
