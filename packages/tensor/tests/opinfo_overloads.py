"""Samples for overloads the public functions do not route to, called by name in both libraries.

``ember.softmax`` calls ``_softmax`` and ``ember.sort(out=...)`` calls ``sort.values_stable``, so
``softmax.int`` and ``sort.values`` would go unsampled; here each is called as
``lib.ops.aten.<op>.<overload>`` in Ember and in PyTorch alike. Where a public function does route
to the overload (``pow(2, x)``, ``rsub``), the public function is called instead. ``out=`` tensors are
made with ``new_empty`` so that the meta check allocates them on the meta device.
"""

from __future__ import annotations

import numpy as np
from opinfo import ErrorSample, OpInfo, Sample, T, layouts_of, make

FLOAT = ("float32", "float64")


def aten(name: str, **outs: str):
    """``lib.ops.aten.<name>(*args, **kwargs)``, with an empty ``out`` tensor per keyword of ``outs``
    (``values="self"``: the dtype of the first argument, else a dtype name)."""
    op, _, which = name.partition(".")

    def call(lib, *args, **kwargs):
        first = args[0]
        for keyword, dtype in outs.items():
            kwargs[keyword] = first.new_empty(0, dtype=first.dtype if dtype == "self" else getattr(lib, dtype))
        return getattr(getattr(lib.ops.aten, op), which)(*args, **kwargs)

    return call


def with_dim(dims=(0, -1), *extra):
    def samples(dtype: str, rng) -> list[Sample]:
        return [Sample((t, d, *extra)) for t in layouts_of((3, 4), dtype, rng) for d in dims]

    return samples


def _distinct(shape, dtype, rng) -> T:
    """Values without ties, so that every index result is unique in both libraries."""
    n = int(np.prod(shape))
    return T(rng.permutation(n).reshape(shape).astype(dtype))


def _tuple_out_samples(*extra):
    def samples(dtype: str, rng) -> list[Sample]:
        return [Sample((_distinct((3, 4), dtype, rng), d, *extra)) for d in (0, 1)]

    return samples


def layer_norm_samples(dtype: str, rng) -> list[Sample]:
    x = make((2, 3, 4), dtype, rng)
    w, b = make((4,), dtype, rng), make((4,), dtype, rng)
    return [Sample((x, [4])), Sample((x, [3, 4])), Sample((x, [4], w, b, 1e-3))]


def nll_loss_samples(dtype: str, rng) -> list[Sample]:
    logp = make((3, 5), dtype, rng, low=-3, high=0)
    target = T(rng.integers(0, 5, size=(3,)).astype(np.int64))
    w = make((5,), dtype, rng, low=0, high=2)
    return [
        Sample((logp, target)),
        Sample((logp, target, w, 2)),
        Sample((logp, target, None, 0)),
        Sample((logp, target, w, 1, int(target.array[0]))),
    ]


def upsample_samples(*between):
    def samples(dtype: str, rng) -> list[Sample]:
        x = make((1, 2, 3, 4), dtype, rng)
        return [Sample((x, [6, 8], *between, None)), Sample((x, None, *between, [2.0, 1.5]))]

    return samples


def index_samples(dtype: str, rng) -> list[Sample]:
    x = make((4, 5), dtype, rng)
    idx = T(np.array([3, 0, 3], np.int64))
    mask = T(rng.integers(0, 2, size=(4,)).astype(np.bool_))
    return [Sample((x, [idx])), Sample((x, [None, idx])), Sample((x, [mask])), Sample((x, [idx, idx]))]


def scalar_base_samples(dtype: str, rng) -> list[Sample]:
    # Every layout of the exponent: PyTorch's result is contiguous whatever it is.
    exponents = [*layouts_of((3, 4), dtype, rng, low=0, high=3), make((), dtype, rng, low=0, high=3)]
    return [Sample((base, exponent)) for exponent in exponents for base in (2, 0.5)]


def pair_samples(dtype: str, rng) -> list[Sample]:
    return [Sample((a, make((4,), dtype, rng))) for a in layouts_of((3, 4), dtype, rng)]


def alpha_samples(dtype: str, rng) -> list[Sample]:
    return [*pair_samples(dtype, rng), Sample((make((3, 4), dtype, rng), make((3, 4), dtype, rng)), {"alpha": 2})]


def scatter_reduce_samples(value: bool):
    def samples(dtype: str, rng) -> list[Sample]:
        x = make((3, 4), dtype, rng)
        index = T(np.array([[0, 2, 1, 0], [2, 2, 0, 1]], np.int64))
        src = 1.5 if value else make((2, 4), dtype, rng)
        return [Sample((x, 0, index, src), {"reduce": reduce}) for reduce in ("add", "multiply")]

    return samples


def _out_overloads(*entries: OpInfo) -> list[OpInfo]:
    """Entries that call an out= overload: the transform sweeps leave them out."""
    for entry in entries:
        entry.transforms = False
    return list(entries)


OPS = [
    OpInfo("aten.softmax.int", aten("softmax.int"), FLOAT, with_dim()),
    OpInfo("aten.log_softmax.int", aten("log_softmax.int"), FLOAT, with_dim()),
    OpInfo("aten.layer_norm.default", aten("layer_norm.default"), FLOAT, layer_norm_samples),
    OpInfo("aten.nll_loss.default", aten("nll_loss.default"), FLOAT, nll_loss_samples),
    OpInfo("aten.upsample_nearest2d.vec", aten("upsample_nearest2d.vec"), FLOAT, upsample_samples()),
    OpInfo("aten.upsample_bilinear2d.vec", aten("upsample_bilinear2d.vec"), FLOAT, upsample_samples(False)),
    OpInfo(
        "aten.upsample_bilinear2d.vec_align_corners", aten("upsample_bilinear2d.vec"), FLOAT, upsample_samples(True)
    ),
    OpInfo(
        "aten.alias.default",
        aten("alias.default"),
        ("float32", "int64"),
        lambda d, r: [Sample((t,)) for t in layouts_of((3, 4), d, r)],
    ),
    OpInfo("aten.argsort.default", aten("argsort.default"), FLOAT, _tuple_out_samples(True)),
    # A bool mask's result shape depends on the data: no meta check (as in PyTorch).
    OpInfo("aten.index.Tensor", aten("index.Tensor"), ("float32", "int64"), index_samples, meta=False),
    OpInfo("pow_scalar_base", lambda lib, *a, **k: lib.pow(*a, **k), FLOAT, scalar_base_samples, out=True),
    OpInfo(
        "rsub",
        lambda lib, *a, **k: lib.rsub(*a, **k),
        (*FLOAT, "int64"),
        alpha_samples,
        # torch.rsub takes no out=, though aten has rsub.Tensor_out (sampled below).
        errors=lambda: [ErrorSample(Sample((T(np.ones(2)), T(np.ones(2))), {"out": T(np.empty(2))}), TypeError)],
    ),
    *_out_overloads(
        OpInfo("aten.min.out", aten("min.out", out="self"), FLOAT, pair_samples),
        OpInfo(
            "aten.rsub.Tensor_out",
            aten("rsub.Tensor_out", out="self"),
            FLOAT,
            pair_samples,
            # PyTorch's rsub.Tensor_out copies the functional result into an out it resizes row-major;
            # Ember's lays the out like sub.out's (the inputs' order). The values are the same.
            check_strides=False,
        ),
        OpInfo(
            "aten.aminmax.out",
            lambda lib, x, d: aten("aminmax.out", min="self", max="self")(lib, x, dim=d),
            FLOAT,
            _tuple_out_samples(),
        ),
        OpInfo(
            "aten.kthvalue.values",
            lambda lib, x, d: aten("kthvalue.values", values="self", indices="int64")(lib, x, 2, d),
            FLOAT,
            _tuple_out_samples(),
        ),
        OpInfo("aten.max.dim_max", aten("max.dim_max", max="self", max_values="int64"), FLOAT, _tuple_out_samples()),
        OpInfo("aten.min.dim_min", aten("min.dim_min", min="self", min_indices="int64"), FLOAT, _tuple_out_samples()),
        OpInfo(
            "aten.median.dim_values",
            aten("median.dim_values", values="self", indices="int64"),
            FLOAT,
            _tuple_out_samples(),
        ),
        OpInfo(
            "aten.nanmedian.dim_values",
            aten("nanmedian.dim_values", values="self", indices="int64"),
            FLOAT,
            _tuple_out_samples(),
        ),
        OpInfo("aten.mode.values", aten("mode.values", values="self", indices="int64"), FLOAT, _tuple_out_samples()),
        OpInfo(
            "aten.sort.values", aten("sort.values", values="self", indices="int64"), FLOAT, _tuple_out_samples(True)
        ),
        OpInfo(
            "aten.sort.values_stable",
            lambda lib, x, d: aten("sort.values_stable", values="self", indices="int64")(lib, x, stable=True, dim=d),
            FLOAT,
            _tuple_out_samples(),
        ),
        OpInfo(
            "aten.topk.values",
            lambda lib, x, d: aten("topk.values", values="self", indices="int64")(lib, x, 2, d),
            FLOAT,
            _tuple_out_samples(),
        ),
        OpInfo("aten.scatter.reduce_out", aten("scatter.reduce_out", out="self"), FLOAT, scatter_reduce_samples(False)),
        OpInfo(
            "aten.scatter.value_reduce_out",
            aten("scatter.value_reduce_out", out="self"),
            FLOAT,
            scatter_reduce_samples(True),
        ),
        OpInfo(
            "aten.nuclear_norm.dim_out",
            aten("nuclear_norm.dim_out", out="self"),
            FLOAT,
            lambda d, r: [Sample((make((3, 4), d, r), [0, 1])), Sample((make((2, 3, 4), d, r), [1, 2], True))],
            meta=False,  # an SVD: no meta kernel behind the out form's shape
        ),
    ),
]
