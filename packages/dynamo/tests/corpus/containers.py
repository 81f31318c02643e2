"""Containers: lists, tuples, dicts, sets, the ``collections`` types, dataclasses and mappings."""

import collections
import dataclasses
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import torch  # bound by the harness to PyTorch or to Ember


def randn(rng, *shape):
    return torch.tensor(rng.standard_normal(shape).astype(np.float32))


def list_ops(xs):
    ys = [x * 2 for x in xs]
    ys.append(xs[0].sum())
    ys.insert(0, xs[-1])
    ys.extend(reversed(xs))
    last = ys.pop()
    return ys[1:3], last, len(ys)


def tuple_unpacking(pair, triple):
    a, b = pair
    first, *rest = triple
    return a @ b + first, rest, (*pair, first)


def dict_ops(d):
    out = {k: v.relu() for k, v in d.items()}
    out["sum"] = sum(d.values())
    out.update(extra=d["a"] * 3)
    keys = sorted(out.keys())
    return out, keys, out.get("missing", 7), "a" in out


def dict_pop_setdefault(d):
    d = dict(d)
    w = d.pop("w")
    d.setdefault("b", w * 0)
    d.setdefault("c", w + 1)
    return d, list(d)


def set_ops(x, names):
    seen = set(names)
    seen.add("z")
    seen.discard("a")
    scale = len(seen | {"q"}) - len(seen & {"b", "c"})
    return x * scale, "b" in seen


def ordered_dict(x):
    od = collections.OrderedDict()
    od["second"] = x + 2
    od["first"] = x + 1
    od.move_to_end("second")
    return list(od.keys()), od["first"] * od["second"]


def default_dict(xs):
    groups = collections.defaultdict(list)
    for i, x in enumerate(xs):
        groups[i % 2].append(x)
    return {k: torch.stack(v).sum(0) for k, v in groups.items()}


class Point(NamedTuple):
    x: object
    y: object


Pair = collections.namedtuple("Pair", ["left", "right"])


def named_tuples(p, q):
    moved = p._replace(x=p.x + q.left)
    return Point(moved.x * moved.y, q.right), moved.x.sum() + q[1].sum(), len(q)


def deque_ops(x):
    window = collections.deque(maxlen=3)
    for i in range(5):
        window.append(x * i)
    window.appendleft(x)
    return sum(window), len(window)


@dataclasses.dataclass
class Batch:
    inputs: object
    targets: object
    weight: float = 1.0


def dataclass_program(batch):
    loss = ((batch.inputs - batch.targets) ** 2).mean() * batch.weight
    return loss, Batch(batch.inputs * 2, batch.targets, weight=batch.weight + 1)


@dataclasses.dataclass(frozen=True)
class Config:
    width: int
    scale: float


def frozen_dataclass(x, config):
    return x[:, : config.width] * config.scale, dataclasses.replace(config, width=1).width


class Registry(MutableMapping):
    def __init__(self):
        self._data = {}

    def __getitem__(self, key):
        return self._data[key]

    def __setitem__(self, key, value):
        self._data[key] = value

    def __delitem__(self, key):
        del self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)


def mutable_mapping(x):
    reg = Registry()
    reg["a"] = x + 1
    reg["b"] = x * 2
    total = sum(reg[k] for k in reg)
    return total, len(reg), "a" in reg


def nested_structures(tree):
    out = []
    for name, (w, bs) in tree.items():
        out.append(w @ bs[0] + bs[1])
        out.append(name)
    return out


def list_of_tensors_stats(xs):
    sizes = [x.shape[0] for x in xs]
    return torch.cat(xs), max(sizes), sizes.index(max(sizes)), [x.mean() for x in xs]


def list_sort_and_slices(xs):
    ys = list(xs)
    ys.sort(key=lambda t: t.shape[0])
    ys[1:3] = [ys[1] * 2]
    doubled = ys * 2
    return ys, len(doubled), [t.shape[0] for t in doubled]


def zip_star_transpose(rows):
    cols = list(zip(*rows))  # noqa: B905 (the zip users write)
    return [torch.stack(list(c)).sum(0) for c in cols]


def counter_and_fromkeys(x, words):
    counts = collections.Counter(words)
    flags = dict.fromkeys(sorted(counts), 0)
    frozen = frozenset(words)
    return x * counts["a"] + len(counts), flags, "b" in frozen


def _tree(rng):
    return {
        "l1": (randn(rng, 2, 3), [randn(rng, 3, 2), randn(rng, 2, 2)]),
        "l2": (randn(rng, 2, 2), [randn(rng, 2, 4), 1.5]),
    }


CASES = [
    dict(fn=list_ops, inputs=lambda rng: ([randn(rng, 3), randn(rng, 3), randn(rng, 3)],), graphs=1),
    dict(
        fn=tuple_unpacking,
        inputs=lambda rng: ((randn(rng, 2, 2), randn(rng, 2, 2)), (randn(rng, 2, 2), 3, "s")),
        graphs=1,
    ),
    dict(fn=dict_ops, inputs=lambda rng: ({"a": randn(rng, 3), "b": randn(rng, 3)},), graphs=1),
    dict(fn=dict_pop_setdefault, inputs=lambda rng: ({"w": randn(rng, 2), "b": randn(rng, 2)},), graphs=1),
    dict(fn=set_ops, inputs=lambda rng: (randn(rng, 3), ["a", "b", "c"]), graphs=1),
    dict(fn=ordered_dict, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=default_dict, inputs=lambda rng: ([randn(rng, 2) for _ in range(5)],), graphs=1),
    dict(
        fn=named_tuples,
        inputs=lambda rng: (Point(randn(rng, 3), randn(rng, 3)), Pair(randn(rng, 3), randn(rng, 3))),
        graphs=1,
    ),
    dict(fn=deque_ops, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=dataclass_program, inputs=lambda rng: (Batch(randn(rng, 4), randn(rng, 4), 0.5),), graphs=1),
    dict(fn=frozen_dataclass, inputs=lambda rng: (randn(rng, 3, 4), Config(2, 1.5)), graphs=1),
    dict(fn=mutable_mapping, inputs=lambda rng: (randn(rng, 3),), graphs=1),
    dict(fn=nested_structures, inputs=lambda rng: (_tree(rng),), graphs=1),
    dict(fn=list_sort_and_slices, inputs=lambda rng: ([randn(rng, n) for n in (4, 2, 3, 1)],), graphs=1),
    dict(fn=zip_star_transpose, inputs=lambda rng: ([[randn(rng, 2), randn(rng, 2)] for _ in range(3)],), graphs=1),
    dict(fn=counter_and_fromkeys, inputs=lambda rng: (randn(rng, 2), ["a", "b", "a", "c", "a"]), graphs=1),
    dict(fn=list_of_tensors_stats, inputs=lambda rng: ([randn(rng, 2), randn(rng, 4), randn(rng, 3)],), graphs=1),
]
