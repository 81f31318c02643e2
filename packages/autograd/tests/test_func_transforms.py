"""``ember.func``'s transforms against ``torch.func``: grad, grad_and_value, vjp, jacrev, hessian, functional_call."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember
import ember.func as func

pytestmark = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _pair(*shape, seed=0):
    array = np.random.default_rng(seed).standard_normal(shape)
    return ember.tensor(array), torch.tensor(array)


def _close(ours, theirs):
    if isinstance(ours, dict):
        assert set(ours) == set(theirs)
        for k in ours:
            _close(ours[k], theirs[k])
        return
    if isinstance(ours, tuple | list):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            _close(a, b)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


def _f(lib):
    return lambda x, y: (x.sin() * y).sum() + (x * x).exp().mean()


def test_exports():
    assert set(func.__all__) >= {
        "vmap",
        "grad",
        "grad_and_value",
        "vjp",
        "jvp",
        "jacrev",
        "jacfwd",
        "hessian",
        "functional_call",
        "stack_module_state",
    }


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_grad_and_grad_and_value(argnums):
    (x, tx), (y, ty) = _pair(3, 2, seed=1), _pair(3, 2, seed=2)
    _close(func.grad(_f(ember), argnums)(x, y), torch.func.grad(_f(torch), argnums)(tx, ty))
    _close(func.grad_and_value(_f(ember), argnums)(x, y), torch.func.grad_and_value(_f(torch), argnums)(tx, ty))


def test_grad_has_aux_and_errors():
    x, tx = _pair(4, seed=1)

    def f(lib):
        return lambda a: ((a * a).sum(), {"norm": a.abs().sum()})

    _close(func.grad(f(ember), has_aux=True)(x), torch.func.grad(f(torch), has_aux=True)(tx))
    for bad, has_aux in ((lambda a: a, False), (lambda a: (a.sum(), 1, 2), True)):
        with pytest.raises(RuntimeError) as theirs:
            torch.func.grad(bad, has_aux=has_aux)(tx)
        with pytest.raises(RuntimeError) as ours:
            func.grad(bad, has_aux=has_aux)(x)
        assert str(ours.value) == str(theirs.value)


def test_vjp():
    (x, tx), (y, ty) = _pair(3, seed=1), _pair(3, seed=2)

    def f(lib):
        return lambda a, b: (a * b, a.exp())

    out, fn = func.vjp(f(ember), x, y)
    tout, tfn = torch.func.vjp(f(torch), tx, ty)
    _close(out, tout)
    (c1, tc1), (c2, tc2) = _pair(3, seed=3), _pair(3, seed=4)
    _close(fn((c1, c2)), tfn((tc1, tc2)))


@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_jacrev(argnums):
    (x, tx), (y, ty) = _pair(3, seed=1), _pair(2, 3, seed=2)

    def f(lib):
        return lambda a, b: (b * a.sin()).sum(0) + a.exp()

    _close(func.jacrev(f(ember), argnums)(x, y), torch.func.jacrev(f(torch), argnums)(tx, ty))
    _close(func.jacrev(f(ember), argnums, chunk_size=2)(x, y), torch.func.jacrev(f(torch), argnums)(tx, ty))


def test_hessian():
    pytest.importorskip("ember.autograd.forward_ad", reason="hessian runs jacfwd, which needs forward AD")
    x, tx = _pair(4, seed=1)

    def f(lib):
        return lambda a: (a.sin() * a.sum()).sum()

    _close(func.hessian(f(ember))(x), torch.func.hessian(f(torch))(tx))


def test_hessian_by_reverse_over_reverse():
    x, tx = _pair(4, seed=1)

    def f(lib):
        return lambda a: (a.sin() * a.sum()).sum() + (a * a).exp().mean()

    _close(func.jacrev(func.jacrev(f(ember)))(x), torch.func.hessian(f(torch))(tx))


class _Linear:
    """Just enough of a module for functional_call: named parameters and buffers, and a forward."""

    def __init__(self, weight, bias, scale) -> None:
        self.training = True
        self._parameters = {"weight": weight, "bias": bias}
        self._buffers = {"scale": scale}

    def __getattr__(self, name):
        for table in ("_parameters", "_buffers"):
            if name in self.__dict__.get(table, {}):
                return self.__dict__[table][name]
        raise AttributeError(name)

    def named_parameters(self, remove_duplicate=True):
        return list(self._parameters.items())

    def named_buffers(self, remove_duplicate=True):
        return list(self._buffers.items())

    def __call__(self, x):
        # A product written with reshape, mul and sum: ops whose derivatives every branch has.
        rows = x.reshape((*tuple(x.shape[:-1]), 1, x.shape[-1]))
        return ((rows * self.weight).sum(-1) + self.bias) * self.scale


if torch is not None:

    class _TorchLinear(torch.nn.Module):
        def __init__(self, w, b, s) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(w)
            self.bias = torch.nn.Parameter(b)
            self.register_buffer("scale", s)

        def forward(self, x):
            return (x @ self.weight.T + self.bias) * self.scale


def _models(lib, n):
    rng = np.random.default_rng(5)
    out = []
    for _ in range(n):
        w, b, s = rng.standard_normal((2, 3)), rng.standard_normal(2), rng.standard_normal(1)
        if lib is torch:
            out.append(_TorchLinear(torch.tensor(w), torch.tensor(b), torch.tensor(s)))
        else:
            out.append(_Linear(ember.tensor(w).requires_grad_(), ember.tensor(b).requires_grad_(), ember.tensor(s)))
    return out


def test_functional_call_grad_and_ensembles_under_vmap():
    x, tx = _pair(5, 3, seed=1)
    (w, tw), (b, tb) = _pair(2, 3, seed=2), _pair(2, seed=3)
    model, tmodel = _models(ember, 1)[0], _models(torch, 1)[0]

    def loss(m):
        return lambda p, inp: func.functional_call(m, p, (inp,)).sum()

    def tloss(m):
        return lambda p, inp: torch.func.functional_call(m, p, (inp,)).sum()

    _close(
        func.grad(loss(model))({"weight": w, "bias": b}, x),
        torch.func.grad(tloss(tmodel))({"weight": tw, "bias": tb}, tx),
    )
    assert model.weight is model._parameters["weight"]  # the originals are back

    models, tmodels = _models(ember, 4), _models(torch, 4)
    params, buffers = func.stack_module_state(models)
    tparams, tbuffers = torch.func.stack_module_state(tmodels)
    _close(params, tparams)
    _close(buffers, tbuffers)

    def run(p, bufs, inp):
        return func.functional_call(models[0], (p, bufs), (inp,))

    def trun(p, bufs, inp):
        return torch.func.functional_call(tmodels[0], (p, bufs), (inp,))

    ours = func.vmap(run, in_dims=(0, 0, None))(params, buffers, x)
    _close(ours, torch.vmap(trun, in_dims=(0, 0, None))(tparams, tbuffers, tx))
