"""Straight-line tensor math: no control flow, one graph per program."""

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch  # bound by the harness to PyTorch or to Ember


def randn(rng, *shape):
    return torch.tensor(rng.standard_normal(shape).astype(np.float32))


def randint(rng, low, high, *shape):
    return torch.tensor(rng.integers(low, high, shape))


def arith(x, y):
    return (x + y) * (x - y) / (y.abs() + 1.0)


def activations(x):
    return torch.relu(x) + torch.sigmoid(x) * torch.tanh(x) - torch.nn.functional.gelu(x)


def reductions(x):
    return x.sum(), x.mean(dim=0), x.amax(dim=1), x.std(), x.argmax(dim=1)


def matmul_chain(a, b, c):
    return (a @ b).relu() @ c + torch.mm(a, b).sum()


def views(x):
    return x.view(6, 4).t().contiguous(), x.permute(2, 0, 1).reshape(4, -1), x.transpose(0, 1)[1:, :, ::2]


def cat_stack(x, y):
    return torch.cat([x, y], dim=0), torch.stack([x, y], dim=1), torch.chunk(x, 2, dim=1)


def softmax_by_hand(x):
    z = x - x.max(dim=-1, keepdim=True).values
    return z.exp() / z.exp().sum(dim=-1, keepdim=True), torch.softmax(x, dim=-1), torch.log_softmax(x, -1)


def where_clamp(x):
    return torch.where(x > 0, x, x * 0.1), x.clamp(-0.5, 0.5), torch.maximum(x, torch.zeros_like(x))


def integer_math(a, b):
    return a * b + 3, a // (b.abs() + 1), a % 5, (a > b) & (b > 0), a.sum()


def dtype_conversion(x):
    return x.to(torch.float64) * 2, x.int(), (x > 0).float().mean(), x.double().sum().float()


def broadcasting(x, b):
    return x + b, x * b[None, :], (x - b).pow(2).sum(1)


def factories(x):
    ones = torch.ones(3)
    return x + ones, torch.arange(6).reshape(2, 3) * 2, torch.zeros(2, 3, dtype=torch.int64), torch.full((2,), 7.0)


def layer_by_hand(x, w, b):
    h = torch.nn.functional.linear(x, w, b)
    mu = h.mean(-1, keepdim=True)
    var = h.var(-1, keepdim=True, unbiased=False)
    return x + (h - mu) / torch.sqrt(var + 1e-5)


def python_scalars(x):
    scale = 2**3 / 4
    offset = sum([1, 2, 3]) - len("ab")
    return x * scale + offset, x.shape[0] * x.shape[1]


def indexing(x):
    return x[0], x[:, 1], x[1:3, ::2], x[None, ..., -1], x[[0, 2]]


def inplace_on_temporaries(x):
    y = x.clone()
    y.mul_(2).add_(1)
    y[0] = 0.0
    return y, x


def gather_split_einsum(x, idx):
    parts = torch.split(x, [1, 3], dim=1)
    rows = x.unbind(0)
    return torch.gather(x, 1, idx), parts[1].sum(), rows[-1], torch.einsum("ij,kj->ik", x, x)


CASES = [
    dict(fn=arith, inputs=lambda rng: (randn(rng, 4, 5), randn(rng, 4, 5)), graphs=1),
    dict(fn=activations, inputs=lambda rng: (randn(rng, 3, 7),), graphs=1),
    dict(fn=reductions, inputs=lambda rng: (randn(rng, 5, 6),), graphs=1),
    dict(fn=matmul_chain, inputs=lambda rng: (randn(rng, 3, 4), randn(rng, 4, 5), randn(rng, 5, 2)), graphs=1),
    dict(fn=views, inputs=lambda rng: (randn(rng, 2, 3, 4),), graphs=1),
    dict(fn=cat_stack, inputs=lambda rng: (randn(rng, 2, 4), randn(rng, 2, 4)), graphs=1),
    dict(fn=softmax_by_hand, inputs=lambda rng: (randn(rng, 3, 8),), graphs=1),
    dict(fn=where_clamp, inputs=lambda rng: (randn(rng, 4, 4),), graphs=1),
    dict(fn=integer_math, inputs=lambda rng: (randint(rng, -9, 9, 6), randint(rng, -9, 9, 6)), graphs=1),
    dict(fn=dtype_conversion, inputs=lambda rng: (randn(rng, 3, 3) * 4,), graphs=1),
    dict(fn=broadcasting, inputs=lambda rng: (randn(rng, 4, 3), randn(rng, 3)), graphs=1),
    dict(fn=factories, inputs=lambda rng: (randn(rng, 2, 3),), graphs=1),
    dict(fn=layer_by_hand, inputs=lambda rng: (randn(rng, 4, 8), randn(rng, 8, 8), randn(rng, 8)), graphs=1),
    dict(fn=python_scalars, inputs=lambda rng: (randn(rng, 3, 2),), graphs=1),
    dict(fn=indexing, inputs=lambda rng: (randn(rng, 5, 4),), graphs=1),
    dict(
        fn=gather_split_einsum,
        inputs=lambda rng: (randn(rng, 3, 4), torch.tensor(rng.integers(0, 4, (3, 2)))),
        graphs=1,
    ),
    dict(fn=inplace_on_temporaries, inputs=lambda rng: (randn(rng, 3, 3),), graphs=1),
]
