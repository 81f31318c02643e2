"""``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd`` and ``hessian``.

Reverse-mode transforms run the function on fresh inputs that require grad and differentiate with
``ember.autograd.grad``. An input that already requires grad (an outer transform, or a model being
trained) enters as an alias recorded by autograd, so gradients of gradients reach it: with
``create_graph`` on exactly then, ``jacfwd(jacrev(f))``, ``grad(grad(f))`` and a ``backward`` through
per-sample gradients all work. ``jvp`` runs the function on dual tensors (``forward_ad``), so it
cannot nest inside another ``jvp`` (one dual level at a time, as in PyTorch's forward AD).

Jacobians push an identity basis through ``vjp`` (rows) or ``jvp`` (columns) under ``vmap``: one
batched backward or forward pass instead of one per element.
"""

from __future__ import annotations

import functools
from typing import Any

from ember.autograd.functional_api import grad as autograd_grad
from ember.autograd.grad_mode import enable_grad, state
from ember.core.aten.factories.factories import eye_function, zeros_like
from ember.core.tensor import Tensor
from ember.func._tree import flatten, unflatten

# -- helpers ---------------------------------------------------------------------------------------


def _check_argnums(argnums, n: int, api: str) -> tuple[int, ...]:
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and argnums and all(isinstance(a, int) for a in argnums):
        nums = argnums
    else:
        raise RuntimeError(f"{api}: argnums must be int or Tuple[int, ...], got: {argnums!r}")
    out = []
    for a in nums:
        if not -n <= a < n:
            raise RuntimeError(f"Got argnums={a}, but only {n} positional inputs")
        out.append(a % n)
    if len(set(out)) != len(out):
        raise RuntimeError(f"{api}: argnums must be unique, got {argnums}")
    return tuple(out)


def _track(x, api: str):
    """``x`` as an input whose gradient this transform takes, still connected to any outer graph."""
    if not isinstance(x, Tensor):
        raise RuntimeError(f"{api}: Expected all inputs to differentiate with respect to be Tensors, got {type(x)}")
    if x.requires_grad:
        return x.view_as(x)
    tracked = x.detach().requires_grad_(True)
    _keep_tangent(x, tracked)
    return tracked


def _keep_tangent(x, tracked) -> None:
    """Inside ``jvp``, a tracked input keeps its tangent, so that ``jvp(grad(f))`` differentiates the gradient."""
    from ember.autograd import _forward_dispatch

    _forward_dispatch.copy_tangent(x, tracked)


def _outer_tracks(leaves: list) -> bool:
    return state.enabled and any(isinstance(x, Tensor) and x.requires_grad for x in leaves)


def _zeros_for(grads, inputs) -> list:
    return [zeros_like(x) if g is None else g for g, x in zip(grads, inputs, strict=True)]


# -- grad -----------------------------------------------------------------------------------------


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """``func``'s gradient with respect to the ``argnums`` inputs, and its value."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        api = "grad_and_value(f)(*args)"
        nums = _check_argnums(argnums, len(args), api)
        selected = [args[i] for i in nums]
        leaves, spec = flatten(tuple(selected))
        outer = _outer_tracks(leaves)
        with enable_grad():
            tracked = [_track(x, api) for x in leaves]
            new_selected = unflatten(tracked, spec)
            new_args = list(args)
            for i, value in zip(nums, new_selected, strict=True):
                new_args[i] = value
            output = func(*new_args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(output, tuple) and len(output) == 2):
                    raise RuntimeError(
                        f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True"
                    )
                output, aux = output
            if not isinstance(output, Tensor):
                raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(output)}")
            if output.ndim != 0:
                raise RuntimeError(
                    f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with {output.ndim} dims. Maybe "
                    "you wanted to use the vjp or jacrev APIs instead?"
                )
            if output.requires_grad:
                grads = autograd_grad(output, tracked, create_graph=outer, allow_unused=True)
            else:
                grads = (None,) * len(tracked)
        grads = _zeros_for(grads, tracked)
        tree = unflatten(grads, spec)
        result = tree[0] if isinstance(argnums, int) else tree
        value = output if outer else output.detach()
        if has_aux:
            return result, (value, _detach_tree(aux, outer))
        return result, value

    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """The gradient of a function returning a scalar tensor, with respect to its ``argnums`` inputs."""
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        result, value = inner(*args, **kwargs)
        if has_aux:
            return result, value[1]
        return result

    return wrapper


def _detach_tree(tree, keep: bool):
    if keep:
        return tree
    leaves, spec = flatten(tree)
    return unflatten([x.detach() if isinstance(x, Tensor) else x for x in leaves], spec)


# -- vjp ------------------------------------------------------------------------------------------


def vjp(func, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` pulls cotangents back to the primals."""
    api = "vjp(f, *primals)"
    leaves, spec = flatten(primals)
    outer = _outer_tracks(leaves)
    with enable_grad():
        tracked = [_track(x, api) for x in leaves]
        output = func(*unflatten(tracked, spec))
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
            output, aux = output
    out_leaves, out_spec = flatten(output)
    for o in out_leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: Expected f to be a function that has only Tensors as outputs, got {type(o)}")

    def vjp_fn(cotangents, *rest, retain_graph: bool = True, create_graph: bool | None = None):
        if rest:
            cotangents = (cotangents, *rest)
        cot_leaves, cot_spec = flatten(cotangents)
        if cot_spec != out_spec and not (out_spec is None and len(cot_leaves) == 1):
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of outputs to the "
                f"function. cotangents: {cot_spec}, primal output: {out_spec}"
            )
        keep = outer if create_graph is None else create_graph
        pairs = [(o, c) for o, c in zip(out_leaves, cot_leaves, strict=True) if o.requires_grad]
        if pairs:
            with enable_grad():
                grads = autograd_grad(
                    [o for o, _ in pairs],
                    tracked,
                    [c for _, c in pairs],
                    retain_graph=retain_graph,
                    create_graph=keep,
                    allow_unused=True,
                )
        else:
            grads = (None,) * len(tracked)
        return unflatten(_zeros_for(grads, tracked), spec)

    value = _detach_tree(output, outer)
    if has_aux:
        return value, vjp_fn, _detach_tree(aux, outer)
    return value, vjp_fn


# -- jvp ------------------------------------------------------------------------------------------


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J @ tangents)`` by forward-mode AD."""
    from ember.autograd import forward_ad

    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    if not isinstance(tangents, tuple):
        raise RuntimeError(f"{api}: Expected tangents to be a tuple. E.g. it should be valid to call f(*tangents).")
    p_leaves, p_spec = flatten(primals)
    t_leaves, t_spec = flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python structure.")
    for p, t in zip(p_leaves, t_leaves, strict=True):
        if not isinstance(p, Tensor) or not isinstance(t, Tensor):
            raise RuntimeError(f"{api}: Expected primals and tangents to only contain Tensors")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(
                f"{api}: Expected primals and tangents to have the same shape, got {tuple(p.shape)} and "
                f"{tuple(t.shape)}"
            )
    with forward_ad.dual_level():
        duals = [forward_ad.make_dual(p, t) for p, t in zip(p_leaves, t_leaves, strict=True)]
        output = func(*unflatten(duals, p_spec))
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
            output, aux = output
        out_leaves, out_spec = flatten(output)
        primal_out, tangent_out = [], []
        for o in out_leaves:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"{api}: Expected f to be a function that has only Tensors as outputs")
            primal, tangent = forward_ad.unpack_dual(o)
            primal_out.append(primal)
            tangent_out.append(zeros_like(primal) if tangent is None else tangent)
        if aux is not None:
            aux = _strip_duals(aux)
    result = (unflatten(primal_out, out_spec), unflatten(tangent_out, out_spec))
    return (*result, aux) if has_aux else result


def _strip_duals(tree):
    from ember.autograd import forward_ad

    leaves, spec = flatten(tree)
    return unflatten([forward_ad.unpack_dual(x).primal if isinstance(x, Tensor) else x for x in leaves], spec)


# -- Jacobians ------------------------------------------------------------------------------------


def _basis_blocks(tensors: list) -> list:
    """One identity block per tensor: block i has shape (N, *tensors[i].shape), N the total numel."""
    sizes = [t.numel() for t in tensors]
    total = sum(sizes)
    ref = tensors[0]
    eye = eye_function(total, dtype=ref.dtype, device=ref.device)
    blocks, start = [], 0
    for t, n in zip(tensors, sizes, strict=True):
        blocks.append(eye[:, start : start + n].reshape((total, *tuple(t.shape))).to(t.dtype))
        start += n
    return blocks


def _split_rows(batched, sizes: list, out_shapes: list, in_shape: tuple) -> list:
    """Rows of a (N, *in_shape) result split per output and reshaped to out_shape + in_shape."""
    parts, start = [], 0
    for n, shape in zip(sizes, out_shapes, strict=True):
        parts.append(batched[start : start + n].reshape((*shape, *in_shape)))
        start += n
    return parts


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size: int | None = None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to its ``argnums`` inputs, one vmapped vjp per output row."""
    from ember.func import vmap

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args), "jacrev")
        selected = tuple(args[i] for i in nums)

        def restricted(*chosen):
            new_args = list(args)
            for i, value in zip(nums, chosen, strict=True):
                new_args[i] = value
            return func(*new_args, **kwargs)

        result = vjp(restricted, *selected, has_aux=has_aux)
        output, vjp_fn = result[0], result[1]
        out_leaves, out_spec = flatten(output)
        in_leaves, in_spec = flatten(selected)
        blocks = _basis_blocks(out_leaves)
        sizes = [o.numel() for o in out_leaves]
        rows = vmap(lambda *cots: flatten(vjp_fn(unflatten(list(cots), out_spec)))[0], chunk_size=chunk_size)(*blocks)
        per_input = [
            _split_rows(r, sizes, [tuple(o.shape) for o in out_leaves], tuple(x.shape))
            for r, x in zip(rows, in_leaves, strict=True)
        ]
        # Arrange as outputs outermost, then the argnums structure.
        by_output = []
        for j in range(len(out_leaves)):
            tree = unflatten([per_input[i][j] for i in range(len(in_leaves))], in_spec)
            by_output.append(tree[0] if isinstance(argnums, int) else tree)
        jac = unflatten(by_output, out_spec)
        return (jac, result[2]) if has_aux else jac

    return wrapper


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian of ``func`` with respect to its ``argnums`` inputs, one vmapped jvp per input column."""
    from ember.func import vmap

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args), "jacfwd")
        selected = tuple(args[i] for i in nums)
        in_leaves, in_spec = flatten(selected)
        blocks = _basis_blocks(in_leaves)

        def restricted(*chosen):
            new_args = list(args)
            for i, value in zip(nums, unflatten(list(chosen), in_spec), strict=True):
                new_args[i] = value
            return func(*new_args, **kwargs)

        def push(*tangents):
            result = jvp(restricted, tuple(in_leaves), tuple(tangents), has_aux=has_aux)
            return flatten(result[1])[0]

        output = restricted(*in_leaves)
        aux = None
        if has_aux:
            output, aux = output
        out_leaves, out_spec = flatten(output)
        columns = vmap(push, randomness=randomness)(*blocks)  # each (N, *out.shape)
        sizes = [x.numel() for x in in_leaves]
        by_output = []
        for col, o in zip(columns, out_leaves, strict=True):
            parts, start = [], 0
            for n, x in zip(sizes, in_leaves, strict=True):
                block = col[start : start + n]  # (n, *out.shape)
                block = block.movedim(0, -1) if o.ndim else block
                parts.append(block.reshape((*tuple(o.shape), *tuple(x.shape))))
                start += n
            tree = unflatten(parts, in_spec)
            by_output.append(tree[0] if isinstance(argnums, int) else tree)
        jac = unflatten(by_output, out_spec)
        return (jac, aux) if has_aux else jac

    return wrapper


def hessian(func, argnums=0):
    """The Hessian of a scalar function: ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)


__all__: list[Any] = ["grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp"]
