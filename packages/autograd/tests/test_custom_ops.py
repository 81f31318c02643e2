"""Custom ops' derivatives (``register_autograd``) against PyTorch's ``torch.library``.

Each program defines its op in the library it is given, under a fresh name (PyTorch keeps ops for
the life of the process), and returns plain values or raises; both outcomes must agree.
"""

# No ``from __future__ import annotations``: custom_op reads the ops' type hints, which name the
# library of each program.
import itertools

import pytest
from opinfo import ORACLE_MISSING, torch
from test_function import data, same

import ember
from ember.autograd import custom_ops

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
_names = itertools.count()


def fresh(stem: str) -> str:
    return f"emautograd::{stem}_{next(_names)}"


def define_scaled(lib, name: str):
    """``(x, y, *, k) -> (x * k, x * y)`` with its formula, as in PyTorch's docs."""

    def scaled(x: lib.Tensor, y: lib.Tensor, *, k: float = 2.0) -> tuple[lib.Tensor, lib.Tensor]:
        return x * k, x * y

    op = lib.library.custom_op(name, scaled, mutates_args=())

    def setup_context(ctx, inputs, keyword_only_inputs, output):
        ctx.save_for_backward(*inputs)
        ctx.k = keyword_only_inputs["k"]
        ctx.log = [len(inputs), sorted(keyword_only_inputs), type(output).__name__]

    def backward(ctx, g1, g2):
        x, y = ctx.saved_tensors
        ctx.log.append(list(ctx.needs_input_grad))
        return g1 * ctx.k + g2 * y, g2 * x

    op.register_autograd(backward, setup_context=setup_context)
    return op


@needs_torch
def test_formula_values_node_and_needs_input_grad():
    name = fresh("scaled")

    def program(lib):
        x, y = data(lib, 3), data(lib, 3, seed=1, requires_grad=False)
        op = define_scaled(lib, f"{name}_{lib.__name__}")
        a, b = op(x, y, k=5.0)
        node = a.grad_fn
        ga = lib.autograd.grad((a + b).sum(), x)[0]
        return a, b, ga, a.grad_fn is b.grad_fn, type(node).__name__.replace(f"_{lib.__name__}", ""), node.log

    same(program)


@needs_torch
def test_module_level_register_autograd_and_default_arguments():
    name = fresh("poly")

    def program(lib):
        qualname = f"{name}_{lib.__name__}"

        def poly(x: lib.Tensor, power: int = 3) -> lib.Tensor:
            return x**power

        lib.library.custom_op(qualname, poly, mutates_args=())

        def setup_context(ctx, inputs, output):
            x, power = inputs
            ctx.power = power
            ctx.save_for_backward(x)

        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.power * x ** (ctx.power - 1), None

        lib.library.register_autograd(qualname, backward, setup_context=setup_context)
        ns, short = qualname.split("::")
        fn = getattr(getattr(lib.ops, ns), short)
        x = data(lib, 3)
        return lib.autograd.grad(fn(x).sum(), x)[0], lib.autograd.grad(fn(x, 2).sum(), x)[0]

    same(program)


@needs_torch
def test_double_backward_through_a_formula():
    name = fresh("square")

    def program(lib):
        def square(x: lib.Tensor) -> lib.Tensor:
            return x * x

        op = lib.library.custom_op(f"{name}_{lib.__name__}", square, mutates_args=())

        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

        op.register_autograd(backward, setup_context=setup_context)
        x = data(lib, 3)
        (g,) = lib.autograd.grad(op(x).sum(), x, create_graph=True)
        return g, lib.autograd.grad(g.sum(), x)[0]

    same(program)


@needs_torch
def test_custom_op_without_formula_fails_only_in_backward():
    name = fresh("bare")

    def program(lib):
        def bare(x: lib.Tensor) -> lib.Tensor:
            return x + 1

        op = lib.library.custom_op(f"{name}_{lib.__name__}", bare, mutates_args=())
        x = data(lib, 2)
        y = op(x)
        flags = [y.requires_grad, op(x.detach()).requires_grad]
        with lib.no_grad():
            flags.append(op(x).requires_grad)
        try:
            y.sum().backward()
        except RuntimeError as exc:
            flags.append(str(exc).replace(f"_{lib.__name__}", "").replace("emautograd.", "ns."))
        return flags

    same(program)


@needs_torch
def test_formula_for_a_tensor_list_argument():
    name = fresh("wsum")

    def program(lib):
        def wsum(xs: list[lib.Tensor], w: lib.Tensor) -> lib.Tensor:
            return sum(x * w for x in xs)

        op = lib.library.custom_op(f"{name}_{lib.__name__}", wsum, mutates_args=())

        def setup_context(ctx, inputs, output):
            xs, w = inputs
            ctx.save_for_backward(w, *xs)

        def backward(ctx, g):
            w, *xs = ctx.saved_tensors
            return [g * w for _ in xs], sum(g * x for x in xs)

        op.register_autograd(backward, setup_context=setup_context)
        a, b, w = data(lib, 2), data(lib, 2, seed=1), data(lib, 2, seed=2)
        return lib.autograd.grad(op([a, b], w).sum(), (a, b, w))

    same(program)


@needs_torch
def test_formula_for_a_tensor_list_output():
    name = fresh("parts")

    def program(lib):
        def parts(x: lib.Tensor, n: int) -> list[lib.Tensor]:
            return [x * (i + 1) for i in range(n)]

        op = lib.library.custom_op(f"{name}_{lib.__name__}", parts, mutates_args=())

        def setup_context(ctx, inputs, output):
            ctx.n = inputs[1]

        def backward(ctx, grads):
            return sum(g * (i + 1) for i, g in enumerate(grads)), None

        op.register_autograd(backward, setup_context=setup_context)
        x = data(lib, 2)
        out = op(x, 3)
        return type(out).__name__, len(out), lib.autograd.grad((out[0] + out[2] * out[2]).sum(), x)

    same(program)


def test_register_autograd_here_is_the_librarys():
    def triple(x: ember.Tensor) -> ember.Tensor:
        return x * 3

    op = ember.library.custom_op(fresh("triple"), triple, mutates_args=())
    custom_ops.register_autograd(op, lambda ctx, g: g * 3)
    x = ember.ones(2, requires_grad=True)
    assert ember.autograd.grad(op(x).sum(), x)[0].tolist() == [3.0, 3.0]

    def bump(x: ember.Tensor) -> None:
        x.add_(1)

    mutating = ember.library.custom_op(fresh("bump"), bump, mutates_args=("x",))
    with pytest.raises(RuntimeError, match="non-functional operator"):
        custom_ops.register_autograd(mutating, lambda ctx, g: g)
