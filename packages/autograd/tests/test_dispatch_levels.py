"""The dispatcher's named levels as the autograd package installs them, op kinds and linked forms."""

from __future__ import annotations

import pytest

import ember
from ember.core import dispatch

aten = ember.ops.aten


class Recorder(dispatch.DispatchMode):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def __ember_dispatch__(self, func, types, args, kwargs):
        self.seen.append(str(func))
        return func(*args, **kwargs)


def _seen(fn, grad: bool) -> list[str]:
    with ember.set_grad_enabled(grad), Recorder() as mode:
        fn()
    return mode.seen


@pytest.mark.parametrize(
    "name, fn",
    [
        ("matmul", lambda a, b, t: ember.matmul(a, b)),
        ("cross_entropy", lambda a, b, t: ember.nn.functional.cross_entropy(a, t)),
        ("linear", lambda a, b, t: ember.nn.functional.linear(a, b)),
        ("softmax", lambda a, b, t: a.softmax(-1)),
    ],
)
def test_a_mode_sees_the_same_ops_with_and_without_grad(name, fn):
    a = ember.randn(4, 4, requires_grad=True)
    b = ember.randn(4, 4, requires_grad=True)
    t = ember.tensor([0, 1, 2, 3])
    without, with_grad = _seen(lambda: fn(a, b, t), False), _seen(lambda: fn(a, b, t), True)
    assert without == with_grad
    assert "aten.matmul.default" not in with_grad


def test_composite_kinds():
    assert aten.mm.default.kind == "primitive"
    assert aten.matmul.default.kind == "composite_implicit"
    # Backward ops differentiate through their decomposition, yet modes see each as one op.
    assert aten.convolution_backward.default.kind == "composite_explicit"
    assert aten.zeros_like.default.kind == "composite_explicit"


def test_forms_are_linked_as_objects():
    assert aten.add.Tensor.inplace is aten.add_.Tensor
    assert aten.add.Tensor.out is aten.add.out
    assert aten.add_.Tensor.functional is aten.add.Tensor
    assert aten.add.out.functional is aten.add.Tensor
    assert aten.add.Tensor.functional is aten.add.Tensor
    assert aten.bernoulli_.float.functional is aten.bernoulli.p  # forms linked by signature, not name
    assert aten.rand.out.functional is aten.rand.default  # a factory's out= form has no dtype or device
    assert [aten.add.Tensor.form, aten.add_.Tensor.form, aten.add.out.form] == ["functional", "inplace", "out"]
    assert aten.copy_.default.functional is aten.copy.default


def test_levels_are_one_ordered_list():
    assert dispatch.LEVELS == ("autocast", "inference", "forward_ad", "autograd", "functionalize", "python", "backend")
    assert dispatch.has_autograd()
    with pytest.raises(ValueError, match="unknown dispatch level 'grad'"):
        dispatch.install_level("grad", lambda *a: None)
    with pytest.raises(ValueError, match="not switched"):
        dispatch.enable_level("autograd")
    previous = dispatch.install_level("functionalize", None)  # ember.fx installs one when imported
    try:
        with pytest.raises(RuntimeError, match="no handler"):
            dispatch.enable_level("functionalize")
    finally:
        dispatch.install_level("functionalize", previous)


def test_requires_grad_without_the_autograd_level_is_an_error():
    recording = dispatch.install_level("autograd", None)
    try:
        x = ember.ones(2)
        with pytest.raises(RuntimeError, match=r"import ember\.autograd"):
            x.requires_grad_()
        with pytest.raises(RuntimeError, match=r"import ember\.autograd"):
            ember.ones(2, requires_grad=True)
        x.requires_grad = True
        with pytest.raises(RuntimeError, match="autograd level of the dispatcher is not installed"):
            x * 2
    finally:
        dispatch.install_level("autograd", recording)
    assert (ember.ones(2, requires_grad=True) * 2).grad_fn is not None


def test_a_switched_level_sees_calls_only_while_on():
    seen = []

    def handler(op, args, kwargs, below):
        seen.append(str(op))
        return below(args, kwargs)

    previous = dispatch.install_level("functionalize", handler)
    try:
        ember.ones(2) + 1
        assert seen == []
        dispatch.enable_level("functionalize")
        try:
            ember.ones(2).add(1)
        finally:
            dispatch.enable_level("functionalize", False)
        assert "aten.add.Tensor" in seen
        assert not dispatch._flags.slow
    finally:
        dispatch.install_level("functionalize", previous)


def test_core_ops_are_functional_primitives_with_meta_functions():
    core = [op for op in dispatch.all_ops() if "core" in op.tags]
    assert core
    for op in core:
        assert op.form == "functional", f"{op} is {op.form} and tagged core"
        assert op.meta is not None, f"{op} is tagged core but has no meta function"
        assert op.kind != "composite_implicit", f"{op} decomposes for autograd and modes, so it is not core"


def test_describe_names_every_place_an_op_lives():
    text = ember.library.describe(aten.mm.default)
    for label, where in [
        ("kind", "primitive"),
        ("meta", "aten/linalg/matmul.py"),
        ("kernel[cpu]", "aten/linalg/matmul.py"),
        ("derivative", "derivatives/linalg/matmul.py"),
        ("batching rule", "rules/linalg.py"),
    ]:
        line = next(line for line in text.splitlines() if line.startswith(label))
        assert where in line, line
    assert ember.library.describe("aten::add_.Tensor") == ember.library.describe(aten.add_.Tensor)
    assert "derivative     ember.autograd.derivatives.pointwise.binary._add" in ember.library.describe("add.Tensor")
    with pytest.raises(ValueError, match="no op named"):
        ember.library.describe("aten.no_such_op")


def test_describe_from_the_command_line():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "ember.ops", "describe", "aten.matmul.default"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "composite_implicit" in done.stdout and "aten/linalg/matmul.py" in done.stdout


def test_autograd_installs_only_its_own_tensor_attributes():
    from ember.core.tensor import install_autograd_attributes

    with pytest.raises(ValueError, match="not autograd's Tensor attributes: \\['sum'\\]"):
        install_autograd_attributes({"sum": None})
    assert ember.Tensor.backward.__module__ == "ember.autograd.tensor_methods"
