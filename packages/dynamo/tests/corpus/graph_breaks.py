"""Graph breaks: what cannot be traced ends the graph, runs eagerly, and the rest resumes in a graph
of its own: print, .item() and .tolist() steering control flow, branches on tensor values, ops
whose output size depends on the data, calls into C code, breaks inside called functions."""

import zlib
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch  # bound by the harness to PyTorch or to Ember


def randn(rng, *shape):
    return torch.tensor(rng.standard_normal(shape).astype(np.float32))


@torch.compiler.disable
def _eager_only(t):
    return t * 2


def disabled_helper(x):
    y = x + 1
    z = _eager_only(y)
    return z - 1


def print_between(x):
    y = x * 2
    print("between")
    return y + 1


def two_prints(x):
    a = x.sin()
    print("one")
    b = a.cos()
    print("two")
    return b * 3


def item_branch(x):
    y = x.exp()
    if y.sum().item() > 4.0:
        return y * 2
    return y * 3


def tolist_values(x):
    y = x.relu()
    vals = y.tolist()
    return y * max(vals) + len(vals)


def tensor_condition(x):
    y = x * 2
    if y.sum() > 0:
        return y - 1
    return y + 1


def unsupported_c_call(x):
    y = x + 1
    checksum = zlib.crc32(b"ember")
    return y * (checksum % 7)


def _helper_with_print(t):
    a = t + 1
    print("inside helper")
    return a * 2


def break_in_called_function(x):
    y = x.cos()
    z = _helper_with_print(y)
    return z.sum()


def nonzero_output(x):
    y = x - 0.5
    idx = torch.nonzero(y > 0)
    return idx.shape[0] + y.sum()


def boolean_mask(x):
    y = x * 3
    picked = y[y > 0]
    return picked.sum() + y.mean()


def side_effects_around_break(x, log):
    log.append("before")
    y = x * 2
    print("middle")
    log.append(y.shape[0])
    return y.sum()


def break_in_no_grad(x, w):
    with torch.no_grad():
        y = x @ w
        print("no grad")
        z = y * 2
    return z, z.requires_grad, (x @ w).requires_grad


def item_as_scalar(x):
    scale = x.abs().max().item()
    return x / scale


def data_dependent_loop(x):
    steps = 0
    while x.abs().sum() > 1.0:
        x = x / 2
        steps += 1
    return x, steps


def break_then_inplace(x):
    x.mul_(2)
    print("scaled")
    x.add_(1)
    return x


class Chatty(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x)
        print("forward", tuple(y.shape))
        return y.relu()


def break_in_forward(model, x):
    return model(x * 2) + 1


def live_containers_across_break(x):
    parts = [x * 1, x * 2]
    table = {"a": x.sin()}
    print("parts", len(parts))
    parts.append(table["a"] + parts[0])
    return torch.stack(parts).sum(0)


def _chatty(rng):
    model = Chatty()
    with torch.no_grad():
        model.lin.weight.copy_(randn(rng, 3, 3))
        model.lin.bias.copy_(randn(rng, 3))
    return model, randn(rng, 2, 3)


CASES = [
    dict(fn=disabled_helper, inputs=lambda rng: (randn(rng, 3),), graphs=2),
    dict(fn=print_between, inputs=lambda rng: (randn(rng, 3),), graphs=2),
    dict(fn=two_prints, inputs=lambda rng: (randn(rng, 3),), graphs=3),
    dict(fn=item_branch, inputs=lambda rng: (randn(rng, 4),), graphs=2),
    dict(fn=tolist_values, inputs=lambda rng: (randn(rng, 4),), graphs=2),
    dict(fn=tensor_condition, inputs=lambda rng: (randn(rng, 4),), graphs=2),
    dict(fn=unsupported_c_call, inputs=lambda rng: (randn(rng, 3),), graphs=2),
    dict(fn=break_in_called_function, inputs=lambda rng: (randn(rng, 3),), graphs=4),
    dict(fn=nonzero_output, inputs=lambda rng: (randn(rng, 6),), graphs=2),
    dict(fn=boolean_mask, inputs=lambda rng: (randn(rng, 6),), graphs=2),
    dict(fn=side_effects_around_break, inputs=lambda rng: (randn(rng, 3), []), graphs=2),
    dict(fn=break_in_no_grad, inputs=lambda rng: (randn(rng, 2, 3).requires_grad_(), randn(rng, 3, 2)), graphs=2),
    dict(fn=item_as_scalar, inputs=lambda rng: (randn(rng, 4),), graphs=2),
    dict(fn=data_dependent_loop, inputs=lambda rng: (randn(rng, 4) * 3,), graphs=3),
    dict(fn=break_in_forward, inputs=_chatty, graphs=4),
    dict(fn=live_containers_across_break, inputs=lambda rng: (randn(rng, 3),), graphs=2),
    dict(fn=break_then_inplace, inputs=lambda rng: (randn(rng, 3),), graphs=2),
]
