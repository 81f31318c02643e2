"""Dynamic shapes: mark_dynamic, dynamic=True, automatic dynamic after a size change, symbolic
size arithmetic, guards on size relations, 0/1 specialization, dynamic=False."""

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch  # bound by the harness to PyTorch or to Ember


def randn(rng, *shape):
    return torch.tensor(rng.standard_normal(shape).astype(np.float32))


def rows(rng, *sizes, cols=4):
    return [(randn(rng, n, cols),) for n in sizes]


def row_norms(x):
    return (x * x).sum(-1).sqrt() / x.shape[0]


def size_arithmetic(x):
    b, c = x.shape
    return x.reshape(b * 2, c // 2), b * c, x.new_zeros(b + 1).shape


def branch_on_size(x):
    if x.shape[0] > 4:
        return x[:4] * 2
    return x + 1


def arange_of_size(x):
    return x + torch.arange(x.shape[-1]).float()


def cat_dynamic(x):
    return torch.cat([x, x[:1] * 0], dim=0).mean(0)


def matmul_dynamic(a, b):
    return (a @ b).softmax(-1)


def two_inputs_together(x, y):
    return x * y + x.shape[0]


def linear_batch(model, x):
    return model(x).relu()


def flatten_and_view(x):
    return x.flatten(1).view(x.shape[0], -1, 2).sum(-1)


def mean_over_dynamic(x):
    return x.mean(0), x.var(0, unbiased=False)


def returns_size(x):
    return x.shape[0] * 2, x.size(1)


def expand_to_size(x, y):
    return x.expand(y.shape[0], x.shape[1]) + y


def same_size_check(x, y):
    if x.shape[0] == y.shape[0]:
        return x * y
    return x.sum() * y.sum()


def int_argument(x, n):
    return x[:n] * n


def _linear(rng):
    layer = torch.nn.Linear(4, 3)
    with torch.no_grad():
        layer.weight.copy_(randn(rng, 3, 4))
        layer.bias.copy_(randn(rng, 3))
    return layer


def _linear_calls(rng):
    layer = _linear(rng)
    return [(layer, randn(rng, n, 4)) for n in (2, 5, 9)]


CASES = [
    dict(fn=row_norms, name="mark_dynamic", calls=lambda rng: rows(rng, 3, 5, 7), dynamic_dims={0: (0,)}, graphs=1),
    dict(fn=row_norms, name="dynamic_true", calls=lambda rng: rows(rng, 3, 5, 7), options={"dynamic": True}, graphs=1),
    dict(fn=row_norms, name="automatic_dynamic", calls=lambda rng: rows(rng, 2, 3, 4, 5), graphs=2),
    dict(
        fn=row_norms, name="dynamic_false", calls=lambda rng: rows(rng, 2, 3, 4), options={"dynamic": False}, graphs=3
    ),
    dict(
        fn=size_arithmetic,
        calls=lambda rng: [(randn(rng, 3, 4),), (randn(rng, 5, 6),), (randn(rng, 2, 8),)],
        options={"dynamic": True},
        graphs=1,
    ),
    dict(fn=branch_on_size, calls=lambda rng: rows(rng, 2, 3, 6, 8), options={"dynamic": True}, graphs=2),
    dict(
        fn=row_norms,
        name="size_one_specialized",
        calls=lambda rng: rows(rng, 1, 3, 5),
        options={"dynamic": True},
        graphs=2,
    ),
    dict(fn=arange_of_size, calls=lambda rng: [(randn(rng, 2, n),) for n in (3, 4, 6)], graphs=2),
    dict(fn=cat_dynamic, calls=lambda rng: rows(rng, 2, 4, 6), graphs=2),
    dict(
        fn=matmul_dynamic,
        calls=lambda rng: [(randn(rng, n, 3), randn(rng, 3, n)) for n in (2, 4, 5)],
        graphs=2,
    ),
    dict(
        fn=two_inputs_together,
        calls=lambda rng: [(randn(rng, n), randn(rng, n)) for n in (2, 3, 4)],
        dynamic_dims={0: (0,), 1: (0,)},
        graphs=1,
    ),
    dict(fn=linear_batch, calls=_linear_calls, graphs=2),
    dict(
        fn=int_argument,
        calls=lambda rng: [(randn(rng, 8), n) for n in (2, 3, 5)],
        options={"dynamic": True},
        graphs=1,
    ),
    dict(
        fn=same_size_check,
        calls=lambda rng: [(randn(rng, n), randn(rng, m)) for n, m in ((2, 2), (3, 3), (4, 5), (6, 6))],
        options={"dynamic": True},
        graphs=2,
    ),
    dict(fn=flatten_and_view, calls=lambda rng: [(randn(rng, n, 2, 4),) for n in (2, 3, 5)], graphs=2),
    dict(fn=mean_over_dynamic, calls=lambda rng: rows(rng, 3, 6, 9), dynamic_dims={0: (0,)}, graphs=1),
    dict(fn=returns_size, calls=lambda rng: rows(rng, 2, 3, 4), options={"dynamic": True}, graphs=1),
    dict(
        fn=expand_to_size,
        calls=lambda rng: [(randn(rng, 1, 3), randn(rng, n, 3)) for n in (2, 4, 6)],
        graphs=2,
    ),
]
