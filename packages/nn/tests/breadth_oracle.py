"""One layer in Ember and in PyTorch, from the same weights and inputs, in float32 and float64:
the same outputs, the same gradients of inputs and parameters, the same printing."""

from __future__ import annotations

import numpy as np

import ember

try:
    import torch
except ImportError:  # the modules that use this skip without the oracle
    torch = None

TOLERANCE = {"float32": (2e-5, 2e-5), "float64": (1e-10, 1e-10)}


def _lib_input(lib, array: np.ndarray, dtype: str, grad: bool = True):
    if array.dtype.kind == "f":
        return lib.tensor(array.astype(dtype), requires_grad=grad)
    return lib.tensor(array)


def _flat(value) -> list:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [value] if value is not None else []


def _numpy(t) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def check_layer(
    build, inputs, dtype: str = "float32", training: bool = True, seed: int = 0, call=None, tol=None, grads=None
):
    """``build(nn)`` makes the layer from a namespace; ``inputs(rng)`` the numpy inputs; ``call(module,
    *inputs)`` runs it (the module itself by default); ``grads``, the positions of the inputs that
    require grad (every floating one by default)."""
    rtol, atol = tol or TOLERANCE[dtype]
    torch.manual_seed(seed)
    theirs = build(torch.nn).to(getattr(torch, dtype))
    ours = build(ember.nn).to(getattr(ember, dtype))
    state = {k: ember.tensor(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)
    theirs.train(training)
    ours.train(training)
    assert repr(ours).replace("ember.", "torch.") == repr(theirs)
    arrays = inputs(np.random.default_rng(seed))
    wanted = [grads is None or i in grads for i in range(len(arrays))]
    t_in = [_lib_input(torch, a, dtype, g) for a, g in zip(arrays, wanted, strict=True)]
    e_in = [_lib_input(ember, a, dtype, g) for a, g in zip(arrays, wanted, strict=True)]
    call = call or (lambda m, *xs: m(*xs))
    t_out, e_out = _flat(call(theirs, *t_in)), _flat(call(ours, *e_in))
    assert len(t_out) == len(e_out)
    for a, b in zip(e_out, t_out, strict=True):
        assert tuple(a.shape) == tuple(b.shape)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        np.testing.assert_allclose(_numpy(a), _numpy(b), rtol=rtol, atol=atol)
    floating = [i for i, b in enumerate(t_out) if b.dtype.is_floating_point and b.requires_grad]
    if not floating:
        return
    rng = np.random.default_rng(seed + 1)
    cots = {i: rng.standard_normal(tuple(t_out[i].shape)) for i in floating}
    sum((t_out[i] * torch.tensor(cots[i], dtype=t_out[i].dtype)).sum() for i in floating).backward()
    sum((e_out[i] * ember.tensor(cots[i], dtype=e_out[i].dtype)).sum() for i in floating).backward()
    for a, b in zip(e_in, t_in, strict=True):
        if b.dtype.is_floating_point and b.requires_grad:
            np.testing.assert_allclose(_numpy(a.grad), _numpy(b.grad), rtol=rtol, atol=atol)
    ours_params = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        if p.grad is None:
            assert ours_params[name].grad is None, name
        else:
            np.testing.assert_allclose(
                _numpy(ours_params[name].grad), _numpy(p.grad), rtol=rtol, atol=atol, err_msg=name
            )


def check_function(ours, theirs, arrays, dtype: str = "float64", tol=None) -> None:
    """``ours(ember, *tensors)`` against ``theirs(torch, *tensors)``: values and gradients."""
    rtol, atol = tol or TOLERANCE[dtype]
    t_in = [_lib_input(torch, a, dtype) for a in arrays]
    e_in = [_lib_input(ember, a, dtype) for a in arrays]
    t_out, e_out = _flat(theirs(*t_in)), _flat(ours(*e_in))
    for a, b in zip(e_out, t_out, strict=True):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(_numpy(a), _numpy(b), rtol=rtol, atol=atol)
    floating = [i for i, b in enumerate(t_out) if b.dtype.is_floating_point and b.requires_grad]
    if not floating:
        return
    rng = np.random.default_rng(7)
    cots = {i: rng.standard_normal(tuple(t_out[i].shape)) for i in floating}
    sum((t_out[i] * torch.tensor(cots[i], dtype=t_out[i].dtype)).sum() for i in floating).backward()
    sum((e_out[i] * ember.tensor(cots[i], dtype=e_out[i].dtype)).sum() for i in floating).backward()
    for a, b in zip(e_in, t_in, strict=True):
        if b.dtype.is_floating_point and b.grad is not None:
            np.testing.assert_allclose(_numpy(a.grad), _numpy(b.grad), rtol=rtol, atol=atol)
