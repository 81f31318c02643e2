"""``ember.autograd.functional``: derivatives of a Python function at a point, PyTorch's
``torch.autograd.functional`` (``vjp``, ``jvp``, ``vhp``, ``hvp``, ``jacobian``, ``hessian``).

Everything is built on ``ember.autograd.grad``. Products with a vector from the right (``jvp``,
``hvp``) use the double-backward trick: the vector-Jacobian product is linear in its vector ``u``,
so differentiating it with respect to ``u`` gives the Jacobian-vector product. ``jacobian`` takes
one backward pass per output element, or one batched pass with ``vectorize=True``; its
``strategy="forward-mode"`` pushes one tangent per input element through forward AD.

Inputs and outputs are a tensor or a tuple of tensors; results follow the same nesting as PyTorch's
(``jacobian(f, (a, b))[i][j]`` is the derivative of output ``i`` with respect to input ``j``).
Without ``create_graph`` the results are detached; with ``strict=True`` an output that does not
depend on an input is an error rather than zeros.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.autograd.functional_api import grad as _grad
from ember.autograd.grad_mode import enable_grad
from ember.core.tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _as_tuple(value: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, Tensor):
            where = f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors"
            if is_tuple:
                raise TypeError(f"{where} but the value at index {i} has type {type(item).__name__}.")
            raise TypeError(f"{where} but the given {arg_name} has type {type(item).__name__}.")
    return is_tuple, items


def _tuple_postprocess(res: Any, to_unpack: bool | tuple[bool, bool]) -> Any:
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    # With create_graph, the user's graph must reach the inputs: a view keeps it. Otherwise fresh
    # leaves, so that the computation here leaves the user's tensors alone.
    out = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            out.append(inp.view_as(inp))
        else:
            out.append(inp.detach().requires_grad_(need_graph))
    return tuple(out)


def _grad_postprocess(values: tuple, create_graph: bool) -> tuple:
    if isinstance(values[0], Tensor):
        return values if create_graph else tuple(v.detach() for v in values)
    return tuple(_grad_postprocess(v, create_graph) for v in values)


def _validate_v(v: tuple, other: tuple, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other, strict=True)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}.")


def _check_requires_grad(values: tuple, input_type: str, strict: bool) -> None:
    if not strict:
        return
    if input_type not in ("outputs", "grad_inputs", "jacobian", "hessian"):
        raise RuntimeError("Invalid input_type to _check_requires_grad")
    for i, value in enumerate(values):
        if value is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is not allowed in "
                "strict mode."
            )
        if not value.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to input {i} is independent of the "
                    "input. This is not allowed in strict mode. You should ensure that your function is thrice "
                    "differentiable and that the hessian depends on the inputs."
                )
            if input_type == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the user-provided function with "
                    f"respect to input {i} is independent of the input. This is not allowed in strict mode. You "
                    "should ensure that your function is twice differentiable and that the jacobian depends on the "
                    "inputs (this would be violated by a linear function for example)."
                )
            if input_type == "grad_inputs":
                raise RuntimeError(
                    f"The gradient with respect to input {i} is independent of the inputs of the user-provided "
                    "function."
                )
            raise RuntimeError(
                f"Output {i} of the user-provided function does not require gradients. The outputs must be "
                "computed in a differentiable manner from the input when running in strict mode."
            )


def _autograd_grad(outputs: tuple, inputs: tuple, grad_outputs: tuple | None = None, create_graph: bool = False,
                   retain_graph: bool | None = None, is_grads_batched: bool = False) -> tuple:  # fmt: skip
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grads = [], []
    for out, g in zip(outputs, grad_outputs, strict=True):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grads.append(g)
    if not new_outputs:
        return (None,) * len(inputs)
    return _grad(
        tuple(new_outputs),
        inputs,
        tuple(new_grads),
        allow_unused=True,
        create_graph=create_graph,
        retain_graph=retain_graph,
        is_grads_batched=is_grads_batched,
    )


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str) -> tuple:
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                if stage == "back":
                    raise RuntimeError(
                        f"The output of the user-provided function is independent of input {i}. This is not "
                        "allowed in strict mode."
                    )
                if stage == "back_trick":
                    raise RuntimeError(
                        f"The gradient with respect to the input is independent of entry {i} in the grad_outputs "
                        "when using the double backward trick to compute forward mode gradients. This is not "
                        "allowed in strict mode."
                    )
                if stage == "double_back":
                    raise RuntimeError(
                        f"The jacobian of the user-provided function is independent of input {i}. This is not "
                        "allowed in strict mode."
                    )
                raise RuntimeError(
                    f"The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. "
                    "This is not allowed in strict mode as it prevents from using the double backward trick to "
                    "replace forward mode AD."
                )
            g = refs[i].new_zeros(refs[i].shape)
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(
                "The jacobian of the user-provided function is independent of the inputs. This is not allowed in "
                "strict mode when create_graph=True."
            )
        res.append(g)
    return tuple(res)


def _outputs_of(func: Callable, inputs: tuple, fn_name: str) -> tuple[bool, tuple]:
    return _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)


def _single_element(outputs: tuple, fn_name: str) -> None:
    if len(outputs) != 1 or outputs[0].numel() != 1:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor with a single element.")


def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``: the outputs and the vector-Jacobian product."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = _outputs_of(func, inputs, "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single Tensor with a "
                "single element."
            )
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)``: the outputs and the Jacobian-vector product (double-backward trick)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _grad_preprocess(v, create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a single Tensor with "
                "a single element."
            )
        is_outputs_tuple, outputs = _outputs_of(func, inputs, "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # u is a dummy cotangent: v^T J^T u is linear in u, and its gradient in u is J v.
        grad_outputs = tuple(out.new_zeros(out.shape).requires_grad_(True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_outputs_tuple)


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)`` for a function with a single-element output."""
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, jac = _gradient_for_hessian(func, inputs, v, create_graph, strict, "vhp")
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, False), _tuple_postprocess(result, is_inputs_tuple)


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)`` for a function with a single-element output (double-backward trick)."""
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, jac = _gradient_for_hessian(func, inputs, v, create_graph, strict, "hvp")
        grad_jac = tuple(inp.new_zeros(inp.shape).requires_grad_(True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, False), _tuple_postprocess(result, is_inputs_tuple)


def _gradient_for_hessian(func: Callable, inputs, v, create_graph: bool, strict: bool, fn_name: str):
    """What vhp and hvp share: the inputs and ``v`` prepared, the single-element output, and its
    gradient in the inputs with a graph (to be differentiated once more)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
    v = _prepare_hessian_vector(v, inputs, is_inputs_tuple, create_graph, fn_name)
    _, outputs = _outputs_of(func, inputs, fn_name)
    _single_element(outputs, fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return is_inputs_tuple, inputs, v, outputs, jac


def _prepare_hessian_vector(v, inputs: tuple, is_inputs_tuple: bool, create_graph: bool, fn_name: str):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple)
        return v
    if len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError(
            "The vector v can only be None if the input to the user-provided function is a single Tensor with a "
            "single element."
        )
    return None


# -- full Jacobians -------------------------------------------------------------------------------


def jacobian(
    func: Callable,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
):
    """The Jacobian of ``func`` at ``inputs``: for output ``i`` and input ``j``, a tensor of shape
    ``outputs[i].shape + inputs[j].shape``."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(  # PyTorch's type for this check
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function has more '
            'outputs than inputs, "forward-mode" tends to be more performant. Otherwise, prefer to use '
            '"reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                'torch.autograd.functional.jacobian: `create_graph=True` and `strategy="forward-mode"` are not '
                'supported together (yet). Please either set `create_graph=False` or `strategy="reverse-mode"`.'
            )
        if not vectorize:
            raise NotImplementedError(
                "Computing Jacobian using forward-AD or forward-over-reverse Hessian is only implemented for "
                "`vectorize=True`."
            )
        if strict:
            raise RuntimeError(
                'torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not '
                'supported together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.'
            )
        return _jacobian_forward(func, inputs)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = _outputs_of(func, inputs, "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize:
            if strict:
                raise RuntimeError(
                    "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported "
                    "together. Please either set `strict=False` or `vectorize=False`."
                )
            jac = _jacobian_vectorized(outputs, inputs, create_graph)
        else:
            jac = _jacobian_rows(outputs, inputs, create_graph, strict)
        jac = tuple(_grad_postprocess(row, create_graph) for row in jac)
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _jacobian_rows(outputs: tuple, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    jac: list[tuple] = []
    for i, out in enumerate(outputs):
        rows: list[list] = [[] for _ in inputs]
        flat = out.reshape(-1)
        for j in range(flat.numel()):
            grads = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
            for k, (g, inp) in enumerate(zip(grads, inputs, strict=True)):
                if g is None:
                    if strict:
                        raise RuntimeError(
                            f"Output {i} of the user-provided function is independent of input {k}. This is not "
                            "allowed in strict mode."
                        )
                    g = inp.new_zeros(inp.shape)
                rows[k].append(g)
        jac.append(tuple(_stack_rows(r, out, inp) for r, inp in zip(rows, inputs, strict=True)))
    return tuple(jac)


def _stack(tensors: list, dim: int) -> Tensor:
    from ember.core.api import functions

    return functions["stack"](tensors, dim)


def _stack_rows(rows: list, out: Tensor, inp: Tensor) -> Tensor:
    if not rows:
        return inp.new_zeros(tuple(out.shape) + tuple(inp.shape))
    return _stack(rows, 0).reshape(tuple(out.shape) + tuple(inp.shape))


def _jacobian_vectorized(outputs: tuple, inputs: tuple, create_graph: bool) -> tuple:
    # One batched backward pass: the cotangents are the rows of an identity over all outputs.
    from ember.core.api import functions

    eye = functions["eye"]
    sizes = [out.numel() for out in outputs]
    total = sum(sizes)
    basis = eye(total, dtype=outputs[0].dtype)
    cotangents, start = [], 0
    for out, n in zip(outputs, sizes, strict=True):
        cotangents.append(basis[:, start : start + n].reshape((total, *out.shape)))
        start += n
    grads = _autograd_grad(outputs, inputs, tuple(cotangents), create_graph=create_graph, is_grads_batched=True)
    jac, start = [], 0
    for out, n in zip(outputs, sizes, strict=True):
        row = []
        for g, inp in zip(grads, inputs, strict=True):
            if g is None:
                row.append(inp.new_zeros(tuple(out.shape) + tuple(inp.shape)))
            else:
                row.append(g[start : start + n].reshape(tuple(out.shape) + tuple(inp.shape)))
        jac.append(tuple(row))
        start += n
    return tuple(jac)


def _jacobian_forward(func: Callable, inputs):
    # One forward-AD pass per input element, each carrying one basis tangent.
    from ember.autograd import forward_ad as fwAD
    from ember.autograd.grad_mode import no_grad

    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    columns: list[list[list]] = []  # [input][element] -> tangents of each output
    outputs: tuple = ()
    is_outputs_tuple = False
    for j, inp in enumerate(inputs):
        per_element = []
        for e in range(inp.numel()):
            with fwAD.dual_level(), no_grad():
                duals = []
                for k, other in enumerate(inputs):
                    tangent = other.new_zeros(other.shape)
                    if k == j:
                        tangent.reshape(-1)[e] = 1
                    duals.append(fwAD.make_dual(other.detach(), tangent))
                is_outputs_tuple, outs = _outputs_of(func, tuple(duals), "jacobian")
                unpacked = [fwAD.unpack_dual(o) for o in outs]
                outputs = tuple(u.primal for u in unpacked)
                per_element.append(
                    [
                        u.tangent if u.tangent is not None else p.new_zeros(p.shape)
                        for u, p in zip(unpacked, outputs, strict=False)
                    ]
                )
        columns.append(per_element)
    jac = []
    for i, out in enumerate(outputs):
        row = []
        for j, inp in enumerate(inputs):
            cols = [columns[j][e][i].reshape(-1) for e in range(inp.numel())]
            if cols:
                mat = _stack(cols, 1)
            else:
                mat = out.new_zeros((out.numel(), 0))
            row.append(mat.reshape(tuple(out.shape) + tuple(inp.shape)))
        jac.append(tuple(row))
    return _tuple_postprocess(tuple(jac), (is_outputs_tuple, is_inputs_tuple))


def hessian(
    func: Callable,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
):
    """The Hessian of a function with a single-element output: for inputs ``i`` and ``j``, a tensor
    of shape ``inputs[i].shape + inputs[j].shape``."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def single_output(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(single_output, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    if outer_jacobian_strategy == "forward-mode":
        raise NotImplementedError(
            "hessian(outer_jacobian_strategy='forward-mode') needs forward-over-reverse AD, which Ember does not "
            "have; use the default 'reverse-mode'"
        )
    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))
