"""``gradcheck`` and ``gradgradcheck``: analytical derivatives against central finite differences.

``gradcheck`` builds, for every input that requires grad and every differentiable output, the
Jacobian twice: numerically, by perturbing one input element at a time by ``eps`` either way, and
analytically, by one backward pass per output element (``check_backward_ad``) or one forward-mode
pass per input element (``check_forward_ad``). Each pair must be ``allclose`` with ``rtol`` and
``atol``; the first pair that is not raises ``GradcheckError`` naming the output and the input, as
PyTorch's does. Backward mode is also run twice (the results must agree within ``nondet_tol``) and
with zero output gradients (the input gradients must be zero).

``fast_mode`` compares one number per (input, output) pair instead of a matrix: ``v^T J u`` for
random unit vectors ``u`` and ``v``, from a directional finite difference and from one backward
(or forward) pass. On a mismatch it recomputes the full Jacobians for the message.

Complex inputs and outputs are checked as their real and imaginary parts: the function is checked
as a map between the ``view_as_real`` views of its complex inputs and outputs, whose Jacobian holds
exactly the derivatives PyTorch's complex gradcheck compares (with respect to the real and the
imaginary part of each input, for the real and the imaginary part of each output). The backward
pass goes through the complex formulas, so these are what is checked. The batched checks raise
``NotImplementedError`` where ``ember.func.vmap`` is not available.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np

from ember.autograd.functional_api import grad as autograd_grad
from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros_like
from ember.core.tensor import Tensor

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """What ``gradcheck`` and ``gradgradcheck`` raise when a check fails."""


def _as_tuple(x) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _differentiable_outputs(out) -> tuple:
    return tuple(o for o in _as_tuple(out) if isinstance(o, Tensor) and o.requires_grad)


def _diff_inputs(inputs: tuple) -> list[int]:
    return [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]


def _check_inputs(inputs: tuple) -> None:
    any_grad = False
    for idx, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        if x.dtype not in (D.float64, D.complex128):
            warnings.warn(
                f"Input #{idx} requires gradient and is not a double precision floating point or complex. This "
                "check will likely fail if all the inputs are not of double precision floating point or complex. ",
                stacklevel=3,
            )
        if not all(st > 0 or sz <= 1 for st, sz in zip(x.stride(), x.shape, strict=True)):
            raise RuntimeError(
                f"The {idx}th input has a dimension with stride 0. gradcheck only supports inputs that are "
                "non-overlapping to be able to compute the numerical gradients correctly. You should call "
                ".contiguous on the input before passing it to gradcheck."
            )
        any_grad = True
    if not any_grad:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them have requires_grad=True."
        )


def _tensor(values, dtype) -> Tensor:
    from ember.core.creation import tensor

    return tensor(np.asarray(values), dtype=dtype)


def _numpy(t: Tensor) -> np.ndarray:
    return np.array(t.detach().numpy(force=True), dtype=np.float64).reshape(-1)


# -- numerical --------------------------------------------------------------------------------------


def _evaluate(func: Callable, inputs: tuple, positions: list[int]) -> list[np.ndarray]:
    """The outputs at ``positions`` of ``func(*inputs)``, flattened to float64 arrays."""
    outs = _as_tuple(func(*inputs))
    return [_numpy(outs[p]) for p in positions]


def _perturbed(func, inputs, positions, data: np.ndarray, index, step) -> list[np.ndarray]:
    """``func`` evaluated with ``data[index] += step`` (``data`` shares an input's memory), then restored."""
    original = data[index].copy() if isinstance(index, np.ndarray) else data[index]
    data[index] = original + step
    try:
        return _evaluate(func, inputs, positions)
    finally:
        data[index] = original


def _numerical_jacobians(func, inputs, wrt: list[int], positions: list[int], eps: float) -> list[list[np.ndarray]]:
    """``J[i][j]``, of shape (numel of input i, numel of output j), by central differences."""
    jacobians = []
    for i in wrt:
        data = inputs[i].detach().numpy(force=True)
        columns = []
        for index in np.ndindex(*data.shape):
            plus = _perturbed(func, inputs, positions, data, index, eps)
            minus = _perturbed(func, inputs, positions, data, index, -eps)
            columns.append([(p - m) / (2 * eps) for p, m in zip(plus, minus, strict=True)])
        sizes = [o.size for o in _evaluate(func, inputs, positions)] if not columns else None
        if columns:
            jacobians.append([np.stack([c[j] for c in columns]) for j in range(len(positions))])
        else:
            jacobians.append([np.zeros((0, n)) for n in sizes])
    return jacobians


def _numerical_directional(func, inputs, i: int, positions, u: np.ndarray, eps: float) -> list[np.ndarray]:
    """``J_i u`` for each output, by a central difference along ``u``."""
    data = inputs[i].detach().numpy(force=True)
    everything = tuple(slice(None) for _ in data.shape) if data.ndim else ()
    direction = u.reshape(data.shape)
    original = data.copy()
    try:
        data[everything] = original + eps * direction
        plus = _evaluate(func, inputs, positions)
        data[everything] = original - eps * direction
        minus = _evaluate(func, inputs, positions)
    finally:
        data[everything] = original
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus, strict=True)]


# -- analytical ---------------------------------------------------------------------------------


def _one_hot(like: Tensor, k: int) -> Tensor:

    flat = np.zeros(like.numel())
    flat[k] = 1.0
    return _tensor(flat.reshape(tuple(like.shape)), dtype=like.dtype)


def _backward_jacobians(inputs, wrt, outputs, check_grad_dtypes: bool) -> list[list[np.ndarray]]:
    """``J[i][j]`` from one backward pass per output element."""
    diff = [inputs[i] for i in wrt]
    jac = [[np.zeros((x.numel(), o.numel())) for o in outputs] for x in diff]
    for j, out in enumerate(outputs):
        for k in range(out.numel()):
            grads = autograd_grad(out, diff, _one_hot(out, k), retain_graph=True, allow_unused=True)
            for i, (g, x) in enumerate(zip(grads, diff, strict=True)):
                if g is None:
                    continue
                if check_grad_dtypes and g.dtype is not x.dtype:
                    raise GradcheckError("Gradient has dtype mismatch")
                if tuple(g.shape) != tuple(x.shape):
                    raise GradcheckError("Analytical gradient has incorrect size")
                jac[i][j][:, k] = _numpy(g)
    return jac


def _forward_jvp(func, inputs, i: int, positions, tangent_values: np.ndarray, check_grad_dtypes: bool):
    """The output tangents of ``func`` with input ``i`` dual (tangent given), the others plain."""
    from ember.autograd import forward_ad

    x = inputs[i]
    with forward_ad.dual_level():
        tangent = _tensor(tangent_values.reshape(tuple(x.shape)), dtype=x.dtype)
        args = [a.detach() if isinstance(a, Tensor) else a for a in inputs]
        args[i] = forward_ad.make_dual(args[i], tangent)
        outs = _as_tuple(func(*args))
        result = []
        for p in positions:
            primal, t = forward_ad.unpack_dual(outs[p])
            if t is not None and check_grad_dtypes and t.dtype is not primal.dtype:
                raise GradcheckError("Forward AD gradient has dtype mismatch.")
            result.append(np.zeros(primal.numel()) if t is None else _numpy(t))
    return result


def _unit_vector(n: int, k: int) -> np.ndarray:
    v = np.zeros(n)
    v[k] = 1.0
    return v


def _forward_jacobians(func, inputs, wrt, positions, check_grad_dtypes: bool) -> list[list[np.ndarray]]:
    """``J[i][j]`` from one forward-mode pass per input element."""
    jac = []
    for i in wrt:
        n = inputs[i].numel()
        columns = [_forward_jvp(func, inputs, i, positions, _unit_vector(n, k), check_grad_dtypes) for k in range(n)]
        sizes = [len(c) for c in columns[0]] if columns else [0] * len(positions)
        jac.append(
            [np.stack([c[j] for c in columns]) if columns else np.zeros((0, sizes[j])) for j in range(len(positions))]
        )
    return jac


# -- comparing ----------------------------------------------------------------------------------


def _as_tensor(a: np.ndarray):

    return _tensor(a, dtype=D.float64)


def _mismatch(analytical, numerical, out_idx: int, in_idx: int, forward: bool) -> str:
    mode = "computed with forward mode " if forward else ""
    return (
        f"Jacobian {mode}mismatch for output {out_idx:d} with respect to input {in_idx:d},\n"
        f"numerical:{_as_tensor(numerical)}\nanalytical:{_as_tensor(analytical)}\n"
    )


def _allclose(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> bool:
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=False))


def _compare(analytical, numerical, wrt, rtol, atol, forward: bool) -> None:
    for i, (a_row, n_row) in enumerate(zip(analytical, numerical, strict=True)):
        for j, (a, n) in enumerate(zip(a_row, n_row, strict=True)):
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(_mismatch(a, n, j, wrt[i], forward))


def _slow_check(func, inputs, wrt, positions, outputs, eps, rtol, atol, nondet_tol, check_grad_dtypes, forward):
    numerical = _numerical_jacobians(func, inputs, wrt, positions, eps)
    if forward:
        _compare(_forward_jacobians(func, inputs, wrt, positions, check_grad_dtypes), numerical, wrt, rtol, atol, True)
        return
    first = _backward_jacobians(inputs, wrt, outputs, check_grad_dtypes)
    _compare(first, numerical, wrt, rtol, atol, False)
    second = _backward_jacobians(inputs, wrt, outputs, check_grad_dtypes)
    for row1, row2 in zip(first, second, strict=True):
        for a, b in zip(row1, row2, strict=True):
            if a.size and np.abs(a - b).max() > nondet_tol:
                raise GradcheckError(
                    "Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
                    "times gives different values, although analytical gradient matches numerical gradient. The "
                    f"tolerance for nondeterminism was {nondet_tol}."
                )


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.random(n)
    norm = np.linalg.norm(v)
    return v / norm if norm else v


def _fast_check(func, inputs, wrt, positions, outputs, eps, rtol, atol, nondet_tol, check_grad_dtypes, forward):
    rng = np.random.default_rng(0)
    us = [_unit(rng, inputs[i].numel()) for i in wrt]
    vs = [_unit(rng, o.numel()) for o in outputs]
    for row, (i, u) in enumerate(zip(wrt, us, strict=True)):
        numerical = _numerical_directional(func, inputs, i, positions, u, eps)
        if forward:
            analytical = _forward_jvp(func, inputs, i, positions, u, check_grad_dtypes)
            pairs = [(a, n, atol * u.sum()) for a, n in zip(analytical, numerical, strict=True)]
        else:
            pairs = []
            for out, v, n in zip(outputs, vs, numerical, strict=True):
                g = autograd_grad(out, inputs[i], _from_flat(v, out), retain_graph=True, allow_unused=True)[0]
                a = 0.0 if g is None else float(_numpy(g) @ u)
                pairs.append((np.array(a), np.array(float(v @ n)), atol * u.sum() * v.sum()))
        for j, (a, n, tol) in enumerate(pairs):
            if not _allclose(a, n, rtol, tol):
                detail = _slow_detail(func, inputs, row, wrt, positions, outputs, j, eps, rtol, atol, forward)
                raise GradcheckError(_mismatch(a, n, j, i, forward) + detail)


def _from_flat(values: np.ndarray, like: Tensor) -> Tensor:

    return _tensor(values.reshape(tuple(like.shape)), dtype=like.dtype)


def _slow_detail(func, inputs, row, wrt, positions, outputs, j, eps, rtol, atol, forward) -> str:
    i = wrt[row]
    numerical = _numerical_jacobians(func, inputs, [i], positions, eps)[0][j]
    if forward:
        analytical = _forward_jacobians(func, inputs, [i], positions, False)[0][j]
    else:
        analytical = _backward_jacobians(inputs, wrt, outputs, False)[row][j]
    worst = float(np.abs(numerical - analytical).max()) if numerical.size else 0.0
    text = (
        "\nThose are v^T J u for random unit vectors u and v (fast mode). The full Jacobians (slow mode):\n\n"
        f"Numerical:\n {_as_tensor(numerical)}\nAnalytical:\n{_as_tensor(analytical)}\n\n"
        f"The max per-element difference (slow mode) is: {worst}.\n"
    )
    if _allclose(analytical, numerical, rtol, atol):
        text += "\nThe full Jacobians agree: gradcheck with fast_mode=False passes for this function.\n"
    return text


# -- the checks after the Jacobians -------------------------------------------------------------


def _zero_grad_outputs_give_zero_grads(inputs, wrt, outputs, undefined: bool) -> None:
    diff = [inputs[i] for i in wrt]
    zeros = [zeros_like(o) for o in outputs]
    try:
        grads = autograd_grad(outputs, diff, zeros, retain_graph=True, allow_unused=True)
    except RuntimeError as error:
        if not undefined:
            raise
        raise GradcheckError(
            'Expected backward function to handle undefined output grads. Please look at "Notes about undefined '
            'output gradients" in "tools/autograd/derivatives.yaml"'
        ) from error
    for g, x in zip(grads, diff, strict=True):
        if g is None:
            continue
        if not bool((g == 0).all()):
            if undefined:
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads are undefined or zero. "
                    'Please look at "Notes about undefined output gradients" in "tools/autograd/derivatives.yaml"'
                )
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype is not x.dtype:
            raise GradcheckError("grad is incorrect type")
        if g.device != x.device:
            raise GradcheckError("grad is incorrect device")
        if tuple(g.shape) != tuple(x.shape):
            raise GradcheckError("grad is incorrect size")


def _vmap():
    try:
        from ember.func import vmap
    except ImportError:
        vmap = None
    if vmap is None:
        raise NotImplementedError("gradcheck: the batched checks need ember.func.vmap, which is not available")
    return vmap


def _batched_backward(inputs, wrt, outputs, rtol, atol) -> None:

    _vmap()
    diff = [inputs[i] for i in wrt]
    rng = np.random.default_rng(1)
    for j, out in enumerate(outputs):
        batch = [rng.standard_normal(tuple(out.shape)) for _ in range(2)]
        cots = _tensor(np.stack(batch), dtype=out.dtype)
        batched = autograd_grad(out, diff, cots, retain_graph=True, allow_unused=True, is_grads_batched=True)
        for b, cot in enumerate(batch):
            expected = autograd_grad(out, diff, _from_flat(cot, out), retain_graph=True, allow_unused=True)
            for i, (got, want) in enumerate(zip(batched, expected, strict=True)):
                got_b = np.zeros(diff[i].numel()) if got is None else _numpy(got[b])
                want_b = np.zeros(diff[i].numel()) if want is None else _numpy(want)
                if not _allclose(got_b, want_b, rtol, atol):
                    raise GradcheckError(
                        f"For output {j} and input {wrt[i]}: the batched gradient (vmap over grad_outputs) differs "
                        f"from the gradients computed one by one.\nbatched:{_as_tensor(got_b)}\n"
                        f"one by one:{_as_tensor(want_b)}"
                    )


def _batched_forward(func, inputs, wrt, positions, rtol, atol) -> None:
    from ember.func.transforms import jvp

    vmap = _vmap()
    rng = np.random.default_rng(2)
    primals = tuple(x.detach() if isinstance(x, Tensor) else x for x in inputs)
    for i in wrt:
        shape = tuple(inputs[i].shape)
        batch = [rng.standard_normal(shape) for _ in range(2)]

        def push(tangent, i=i):
            def restricted(x):
                args = list(primals)
                args[i] = x
                outs = _as_tuple(func(*args))
                return tuple(outs[p] for p in positions)

            return jvp(restricted, (primals[i],), (tangent,))[1]

        batched = vmap(push)(_tensor(np.stack(batch), dtype=inputs[i].dtype))
        for b, t in enumerate(batch):
            expected = _forward_jvp(func, inputs, i, positions, t.reshape(-1), False)
            for j, want in enumerate(expected):
                got = _numpy(batched[j][b])
                if not _allclose(got, want, rtol, atol):
                    raise GradcheckError(
                        f"For output {j} and input {i}: the batched forward gradient (vmap over tangents) differs "
                        f"from the forward gradients computed one by one.\nbatched:{_as_tensor(got)}\n"
                        f"one by one:{_as_tensor(want)}"
                    )


# -- the entry points -----------------------------------------------------------------------------


def gradcheck(
    func: Callable[..., Tensor | Sequence[Tensor]],
    inputs: Tensor | Sequence[Tensor],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Check the gradients of ``func`` at ``inputs`` against finite differences (use float64 inputs).

    Example::

        x = ember.randn(3, dtype=ember.float64, requires_grad=True)
        assert ember.autograd.gradcheck(lambda x: x.sin() * x, (x,))
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    try:
        _run(
            func,
            _as_tuple(inputs),
            eps,
            atol,
            rtol,
            nondet_tol,
            check_undefined_grad,
            check_grad_dtypes,
            check_batched_grad,
            check_batched_forward_grad,
            check_forward_ad,
            check_backward_ad,
            fast_mode,
        )
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _as_reals(func: Callable, inputs: tuple) -> tuple[Callable, tuple]:
    """``func`` and ``inputs`` with every complex tensor (in or out) replaced by its ``view_as_real``."""
    from ember.core.aten.shape.complex_views import view_as_complex, view_as_real

    def is_complex(x) -> bool:
        return isinstance(x, Tensor) and x.dtype.category == D.COMPLEX

    complex_in = {i for i, x in enumerate(inputs) if is_complex(x) and x.requires_grad}
    if not complex_in and not any(is_complex(o) for o in _as_tuple(func(*inputs))):
        return func, inputs
    real_inputs = tuple(
        view_as_real(x.detach()).clone().requires_grad_(True) if i in complex_in else x for i, x in enumerate(inputs)
    )

    def real_func(*args):
        out = func(*(view_as_complex(a) if i in complex_in else a for i, a in enumerate(args)))
        if isinstance(out, tuple | list):
            return type(out)(view_as_real(o) if is_complex(o) else o for o in out)
        return view_as_real(out) if is_complex(out) else out

    return real_func, real_inputs


def _run(
    func,
    inputs: tuple,
    eps,
    atol,
    rtol,
    nondet_tol,
    check_undefined_grad,
    check_grad_dtypes,
    check_batched_grad,
    check_batched_forward_grad,
    check_forward_ad,
    check_backward_ad,
    fast_mode,
) -> None:
    _check_inputs(inputs)
    func, inputs = _as_reals(func, inputs)
    wrt = _diff_inputs(inputs)
    func_out = _as_tuple(func(*inputs))
    positions = [p for p, o in enumerate(func_out) if isinstance(o, Tensor) and o.requires_grad]
    outputs = tuple(func_out[p] for p in positions)
    if not outputs:
        # Nothing is differentiable: the function must not depend on its inputs at all.
        float_positions = [
            p for p, o in enumerate(func_out) if isinstance(o, Tensor) and o.dtype.category == D.FLOATING
        ]
        for row in _numerical_jacobians(func, inputs, wrt, float_positions, eps):
            for jac in row:
                if np.any(jac != 0):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    check = _fast_check if fast_mode else _slow_check
    for forward, wanted in ((True, check_forward_ad), (False, check_backward_ad)):
        if wanted:
            check(func, inputs, wrt, positions, outputs, eps, rtol, atol, nondet_tol, check_grad_dtypes, forward)
    if check_batched_forward_grad:
        _batched_forward(func, inputs, wrt, positions, rtol, atol)
    if not check_backward_ad:
        return
    if check_batched_grad:
        _batched_backward(inputs, wrt, outputs, rtol, atol)
    _zero_grad_outputs_give_zero_grads(inputs, wrt, outputs, undefined=False)
    if check_undefined_grad:
        _zero_grad_outputs_give_zero_grads(inputs, wrt, outputs, undefined=True)


def gradgradcheck(
    func: Callable[..., Tensor | Sequence[Tensor]],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """Check second derivatives: ``gradcheck`` of the map from (inputs, grad_outputs) to the gradients."""
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be True")
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        grad_outputs = _random_grad_outputs(_differentiable_outputs(func(*inputs)), gen_non_contig_grad_outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_out = len(grad_outputs)
    diff_inputs = {i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad}
    diff_grads = {i for i, g in enumerate(grad_outputs) if isinstance(g, Tensor) and g.requires_grad}

    def first_derivatives(*args):
        ins = tuple(x.requires_grad_() if i in diff_inputs else x for i, x in enumerate(args[:-n_out]))
        outs = _differentiable_outputs(func(*ins))
        gs = tuple(g.requires_grad_() if i in diff_grads else g for i, g in enumerate(args[-n_out:]))
        wrt = tuple(x for i, x in enumerate(ins) if i in diff_inputs)
        grads = autograd_grad(outs, wrt, gs, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivatives,
        inputs + tuple(grad_outputs),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        fast_mode=fast_mode,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        masked=masked,
    )


def _random_grad_outputs(outputs: tuple, non_contiguous: bool) -> tuple:
    """Uniform in [-1, 1), requiring grad, shaped like each output (strided, when asked, as a slice)."""

    rng = np.random.default_rng(3)
    made = []
    for o in outputs:
        dtype = o.dtype if o.dtype.category in (D.FLOATING, D.COMPLEX) else D.float64
        shape = tuple(o.shape)
        values = rng.uniform(-1.0, 1.0, size=shape)
        if non_contiguous and shape:
            wide = np.repeat(values, 2, axis=-1)
            g = _tensor(wide, dtype=dtype)[..., ::2]
        else:
            g = _tensor(values, dtype=dtype)
        made.append(g.requires_grad_(True))
    return tuple(made)
