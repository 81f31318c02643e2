"""Control flow on Python values and on tensor shapes, dtypes and ranks: resolved while tracing."""

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch  # bound by the harness to PyTorch or to Ember


def randn(rng, *shape):
    return torch.tensor(rng.standard_normal(shape).astype(np.float32))


def branch_on_flag(x, flag):
    if flag:
        return x.sin()
    return x.cos()


def loop_range(x):
    for i in range(4):
        x = x * 0.5 + i
    return x


def while_loop(x):
    n = 0
    while n < 5:
        x = x + n
        n += 2
    return x, n


def branch_on_shape(x):
    if x.shape[0] > 3:
        return x.sum(0)
    return x.sum(1)


def branch_on_rank_and_dtype(x):
    if x.dim() == 2 and x.dtype == torch.float32:
        y = x @ x.t()
    elif x.is_floating_point():
        y = x * 2
    else:
        y = x + 1
    return y


def loop_over_rows(x):
    total = torch.zeros(x.shape[1])
    for i in range(x.shape[0]):
        total = total + x[i] * i
    return total


def early_return(x, n):
    if n > 2:
        return x * n
    for _ in range(n):
        x = x.relu() - 0.5
    return x


def nested_loops_with_break(x):
    for i in range(3):
        for j in range(3):
            if i + j == 3:
                break
            x = x + i * j
    return x


def enumerate_and_zip(xs, ws):
    out = xs[0] * 0
    for i, (x, w) in enumerate(zip(xs, ws)):  # noqa: B905 (the zip users write)
        out = out + x * w - i
    return out


def bool_ops_and_ternary(x, a, b):
    y = x if a and not b else -x
    k = (a or b) and 2
    return y * k, not a


def isinstance_dispatch(v):
    if isinstance(v, list | tuple):
        return torch.stack(list(v)).sum(0)
    return v * 2


def none_default(x, bias=None):
    if bias is not None:
        x = x + bias
    return x.tanh()


def loop_with_continue(x):
    for i in range(6):
        if i % 2:
            continue
        x = x * (i + 1)
    return x


def match_on_mode(x, mode):
    match mode:
        case "double":
            return x * 2
        case "square":
            return x * x
        case ("shift", amount):
            return x + amount
        case _:
            return x


def sizes_with_builtins(x):
    rows, cols = x.shape
    k = min(rows, cols)
    order = sorted([cols, rows, 3])
    return x[:k, :k] + max(order), order, abs(-k)


def iterate_over_tensor(x):
    out = []
    for row in x:
        out.append(row.max() - row.min())
    return torch.stack(out)


def compare_sizes(x, y):
    if x.shape == y.shape:
        return x + y
    if x.shape[::-1] == tuple(y.shape):
        return x + y.t()
    return x.sum() + y.sum()


def _pair(rng):
    return [randn(rng, 3, 2), randn(rng, 3, 2)]


CASES = [
    dict(fn=branch_on_flag, calls=lambda rng: [(randn(rng, 4), True), (randn(rng, 4), False)], graphs=2),
    dict(fn=loop_range, inputs=lambda rng: (randn(rng, 3, 3),), graphs=1),
    dict(fn=while_loop, inputs=lambda rng: (randn(rng, 5),), graphs=1),
    dict(fn=branch_on_shape, inputs=lambda rng: (randn(rng, 5, 2),), graphs=1),
    dict(fn=branch_on_rank_and_dtype, inputs=lambda rng: (randn(rng, 3, 4),), graphs=1),
    dict(fn=loop_over_rows, inputs=lambda rng: (randn(rng, 4, 3),), graphs=1),
    dict(fn=early_return, calls=lambda rng: [(randn(rng, 3), 1), (randn(rng, 3), 5)], graphs=2),
    dict(fn=nested_loops_with_break, inputs=lambda rng: (randn(rng, 2, 2),), graphs=1),
    dict(fn=enumerate_and_zip, inputs=lambda rng: (_pair(rng), [0.5, -2.0]), graphs=1),
    dict(fn=bool_ops_and_ternary, inputs=lambda rng: (randn(rng, 4), True, False), graphs=1),
    dict(fn=isinstance_dispatch, calls=lambda rng: [(randn(rng, 3, 2),), (tuple(_pair(rng)),)], graphs=2),
    dict(fn=none_default, calls=lambda rng: [(randn(rng, 3),), (randn(rng, 3), randn(rng, 3))], graphs=2),
    dict(fn=loop_with_continue, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(
        fn=match_on_mode,
        calls=lambda rng: [(randn(rng, 2), "double"), (randn(rng, 2), ("shift", 3)), (randn(rng, 2), "square")],
        graphs=3,
    ),
    dict(fn=iterate_over_tensor, inputs=lambda rng: (randn(rng, 3, 4),), graphs=1),
    dict(fn=compare_sizes, inputs=lambda rng: (randn(rng, 2, 3), randn(rng, 3, 2)), graphs=1),
    dict(fn=sizes_with_builtins, inputs=lambda rng: (randn(rng, 3, 5),), graphs=1),
]
