"""Side effects replayed as eager does them: mutated lists, dicts, attributes, globals and closure
cells, in-place updates of the inputs, print and logging (which end the graph)."""

import logging
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch  # bound by the harness to PyTorch or to Ember


def randn(rng, *shape):
    return torch.tensor(rng.standard_normal(shape).astype(np.float32))


HISTORY = []
STATS = {"calls": 0}
COUNTER = 0
TOTAL = None


def append_to_argument(x, log):
    log.append(x.sum())
    log.append("seen")
    return x * 2


def update_dict_argument(x, d):
    d["double"] = x * 2
    d["count"] = d.get("count", 0) + 1
    del d["drop"]
    return x + 1


def global_list(x):
    HISTORY.append(x.mean())
    return x - HISTORY[-1]


def global_dict(x):
    STATS["calls"] += 1
    STATS["last"] = x.max()
    return x * STATS["calls"]


def global_rebind(x):
    global COUNTER, TOTAL
    COUNTER += 1
    TOTAL = x.sum() if TOTAL is None else TOTAL + x.sum()
    return x * COUNTER


class Tracker:
    def __init__(self):
        self.steps = 0
        self.last = None


def object_attributes(x, tracker):
    tracker.steps += 1
    tracker.last = x.relu()
    tracker.note = "updated"
    return tracker.last + tracker.steps


def closure_cell(x):
    state = {"n": 0}
    hits = 0

    def hit(t):
        nonlocal hits
        hits += 1
        state["n"] += 2
        return t * hits

    y = hit(x) + hit(x)
    return y, hits, state


def inplace_on_input(x):
    x.add_(1)
    x.mul_(2)
    return x.sum()


def inplace_slice_of_input(x, y):
    x[0].copy_(y[0])
    y[:, 1] = 0.0
    return x + y


def print_in_middle(x):
    y = x * 2
    print("halfway", y.shape[0])
    return y + 1


def print_python_values(x, n):
    y = x * n
    print("scaled by", n, "into", y.dim(), "dims", [n] * 2, {"n": n})
    return y.sum()


LOGGED = []


class _ListHandler(logging.Handler):
    def emit(self, record):
        LOGGED.append((record.levelname, record.getMessage()))


# One logger per load of this module (its name is unique), recording into this load's LOGGED.
_LOG = logging.getLogger(__name__)
_LOG.setLevel(logging.INFO)
_LOG.propagate = False
_LOG.addHandler(_ListHandler())


def logging_call(x):
    y = x.exp()
    _LOG.info("exp done, %d values", y.numel())
    return y.sum()


CACHE = {}


def global_cache(x):
    if "w" not in CACHE:
        CACHE["w"] = x * 0 + 1
    CACHE["w"] = CACHE["w"] + x
    CACHE.pop("stale", None)
    return CACHE["w"].sum()


def aliased_list(x, xs):
    ys = xs
    ys.append(x * 2)
    nested = {"inner": xs}
    nested["inner"].append(len(ys))
    return xs is ys, len(xs)


def delete_attribute(x, obj):
    del obj.temporary
    obj.result = x + obj.base
    return obj.result.sum()


def mutation_then_return_alias(xs):
    xs[0] = xs[0] * 10
    xs.reverse()
    return xs


def _holder(rng):
    obj = Tracker()
    obj.temporary = "drop me"
    obj.base = randn(rng, 2)
    return obj


def _with_tracker(f, rng):
    tracker = Tracker()
    out = [f(randn(rng, 3), tracker), f(randn(rng, 3), tracker)]
    return [*out, tracker]


CASES = [
    dict(fn=append_to_argument, inputs=lambda rng: (randn(rng, 3), []), graphs=1),
    dict(
        fn=update_dict_argument,
        inputs=lambda rng: (randn(rng, 2), {"drop": 1, "keep": randn(rng, 1)}),
        graphs=1,
    ),
    dict(fn=global_list, calls=lambda rng: [(randn(rng, 3),), (randn(rng, 3),)], graphs=2),
    dict(fn=global_dict, calls=lambda rng: [(randn(rng, 3),), (randn(rng, 3),)], graphs=2),
    dict(fn=global_rebind, calls=lambda rng: [(randn(rng, 3),), (randn(rng, 3),), (randn(rng, 3),)], graphs=3),
    dict(fn=object_attributes, driver=_with_tracker, graphs=2),
    dict(fn=closure_cell, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=inplace_on_input, inputs=lambda rng: (randn(rng, 4),), graphs=1),
    dict(fn=inplace_slice_of_input, inputs=lambda rng: (randn(rng, 3, 3), randn(rng, 3, 3)), graphs=1),
    dict(fn=print_in_middle, inputs=lambda rng: (randn(rng, 4),), graphs=2),
    dict(fn=print_python_values, inputs=lambda rng: (randn(rng, 2), 3), graphs=2),
    dict(fn=logging_call, inputs=lambda rng: (randn(rng, 3),), graphs=2),
    dict(fn=global_cache, calls=lambda rng: [(randn(rng, 3),), (randn(rng, 3),)], graphs=2),
    dict(fn=aliased_list, inputs=lambda rng: (randn(rng, 2), [1]), graphs=1),
    dict(fn=delete_attribute, inputs=lambda rng: (randn(rng, 2), _holder(rng)), graphs=1),
    dict(fn=mutation_then_return_alias, inputs=lambda rng: ([randn(rng, 2), randn(rng, 2), randn(rng, 2)],), graphs=1),
]
