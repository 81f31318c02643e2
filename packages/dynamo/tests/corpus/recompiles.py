"""Recompiles: a call whose inputs break a guard of every cached graph compiles a new one (sizes,
dtypes, requires_grad, Python constants, globals, closure contents, container lengths, grad mode,
module attributes); a call that passes a guard reuses its graph."""

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch  # bound by the harness to PyTorch or to Ember


def randn(rng, *shape):
    return torch.tensor(rng.standard_normal(shape).astype(np.float32))


SCALE = 2.0
MODE = "sum"


def simple(x):
    return x.sin() * 2 + 1


def scaled(x, k):
    return x * k


def by_mode(x, mode):
    if mode == "sum":
        return x.sum()
    return x.mean()


def by_name(x, name):
    return x * len(name) if name.startswith("s") else x - len(name)


def uses_global_scale(x):
    return x * SCALE


def uses_global_mode(x):
    return x.sum() if MODE == "sum" else x.amax()


def sum_list(xs):
    return sum(x * i for i, x in enumerate(xs))


def dict_keys(d):
    return {k: v * 2 for k, v in d.items() if k != "skip"}


def _make_counter():
    step = 1.0

    def f(x):
        return x + step

    def set_step(value):
        nonlocal step
        step = value

    return f, set_step


closure_contents, _set_step = _make_counter()


def _change_cell(f, rng):
    x = randn(rng, 3)
    first = f(x)
    _set_step(5.0)
    return [first, f(x), f(x)]


def _change_scale(f, rng):
    global SCALE
    x = randn(rng, 3)
    first = f(x)
    SCALE = 3.0
    second = f(x)
    return [first, second, f(x)]


def _change_mode(f, rng):
    global MODE
    x = randn(rng, 4)
    first = f(x)
    MODE = "max"
    return [first, f(x)]


def _grad_modes(f, rng):
    x = randn(rng, 3).requires_grad_()
    first = f(x)
    with torch.no_grad():
        second = f(x)
    return [first, second, f(x)]


def grad_sensitive(x):
    y = x * 3
    return y, y.requires_grad


class Scaler(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.factor = 2

    def forward(self, x):
        return x * self.factor


def _module_attribute(f, rng):
    model = Scaler()
    x = randn(rng, 3)
    first = f(model, x)
    model.factor = 4
    return [first, f(model, x)]


def call_module(model, x):
    return model(x)


def _train_eval(f, rng):
    model = torch.nn.Dropout(0.5)
    x = randn(rng, 4)
    model.eval()
    first = f(model, x)
    model.train()
    with torch.no_grad():
        second = f(model, x * 0)
    return [first, second]


def _layouts(rng):
    x = randn(rng, 3, 4)
    return [(x,), (x.t().contiguous().t(),), (randn(rng, 3, 4),)]


CASES = [
    dict(fn=simple, name="same_inputs_reuse", calls=lambda rng: [(randn(rng, 4),) for _ in range(3)], graphs=1),
    dict(fn=simple, name="shape_change", calls=lambda rng: [(randn(rng, n),) for n in (3, 5, 7)], graphs=2),
    dict(
        fn=simple,
        name="dtype_change",
        calls=lambda rng: [(randn(rng, 3),), (randn(rng, 3).double(),), (randn(rng, 3),)],
        graphs=2,
    ),
    dict(
        fn=simple,
        name="requires_grad_change",
        calls=lambda rng: [(randn(rng, 3),), (randn(rng, 3).requires_grad_(),)],
        graphs=2,
    ),
    dict(fn=scaled, name="int_constant", calls=lambda rng: [(randn(rng, 3), k) for k in (2, 3, 4)], graphs=2),
    dict(fn=simple, name="stride_change", calls=_layouts, graphs=2),
    dict(fn=by_mode, calls=lambda rng: [(randn(rng, 3), m) for m in ("sum", "mean", "sum")], graphs=2),
    dict(
        fn=by_name,
        name="cache_limit",
        calls=lambda rng: [(randn(rng, 2), f"s{'x' * i}") for i in range(11)],
        graphs=8,
    ),
    dict(fn=uses_global_scale, driver=_change_scale, graphs=2),
    dict(fn=uses_global_mode, driver=_change_mode, graphs=2),
    dict(
        fn=sum_list,
        calls=lambda rng: [([randn(rng, 2), randn(rng, 2)],), ([randn(rng, 2) for _ in range(3)],)],
        graphs=2,
    ),
    dict(
        fn=dict_keys,
        calls=lambda rng: [({"a": randn(rng, 2)},), ({"a": randn(rng, 2), "b": randn(rng, 2)},)],
        graphs=2,
    ),
    dict(fn=closure_contents, name="closure_contents", driver=_change_cell, graphs=2),
    dict(fn=grad_sensitive, driver=_grad_modes, graphs=2),
    dict(fn=call_module, name="module_attribute", driver=_module_attribute, graphs=2),
    dict(fn=call_module, name="train_eval", driver=_train_eval, graphs=2),
    dict(
        fn=scaled,
        name="float_constant",
        calls=lambda rng: [(randn(rng, 3), 0.5), (randn(rng, 3), 0.5), (randn(rng, 3), 1.5)],
        graphs=2,
    ),
]
