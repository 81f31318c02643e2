"""Samples for softmax and log_softmax (``ember.core.aten.nn.softmax``): ``torch.X``, ``Tensor.X`` and
``F.X`` (with the implicit-dim choice), over 0-dim, 1-d to 3-d and empty shapes in each layout, every
dim, ``dtype=``, and rows with infinities and NaNs."""

from __future__ import annotations

import numpy as np
from opinfo import FLOATS, ErrorSample, OpInfo, Sample, T, functional, layouts_of, make

SHAPES = [(), (5,), (3, 4), (2, 3, 4), (0, 3)]


def _dtype_arg(kwargs, lib):
    if isinstance(kwargs.get("dtype"), str):
        kwargs = {**kwargs, "dtype": getattr(lib, kwargs["dtype"])}
    return kwargs


def _samples(dtype: str, rng) -> list[Sample]:
    out = []
    for shape in SHAPES:
        for t in layouts_of(shape, dtype, rng, low=-20, high=20):
            for dim in range(-max(len(shape), 1), max(len(shape), 1)):
                out.append(Sample((t,), {"dim": dim}, name=f"{t} dim={dim}"))
    special = np.array([[1.0, np.inf, 3.0], [-np.inf, -np.inf, -np.inf], [np.nan, 1.0, 2.0], [1e4, -1e4, 0.0]])
    np_dtype = make((1,), dtype, rng).array.dtype
    out += [Sample((T(special.astype(np_dtype)),), {"dim": d}, name=f"special dim={d}") for d in (0, 1)]
    out += [Sample((T(np.array(v, np_dtype)),), {"dim": 0}, name=f"0-dim {v}") for v in (np.inf, -np.inf, np.nan, 3.0)]
    t = make((3, 4), dtype, rng)
    out += [Sample((t,), {"dim": 1, "dtype": d}, name=f"dtype={d}") for d in ("float64", "float32")]
    return out


def _implicit_samples(dtype: str, rng) -> list[Sample]:
    return [
        Sample((make(shape, dtype, rng),), {}, name=f"implicit dim {shape}")
        for shape in [(), (4,), (2, 3), (2, 3, 4), (2, 2, 2, 3)]
    ]


def _errors():
    f = T(np.ones((2, 3), np.float32))
    return [
        ErrorSample(Sample((T(np.arange(4)),), {"dim": 0}), NotImplementedError, "not implemented for 'Long'"),
        ErrorSample(Sample((T(np.ones(3, np.bool_)),), {"dim": 0}), NotImplementedError, "not implemented"),
        ErrorSample(Sample((f,), {"dim": 2}), IndexError, "Dimension out of range"),
        ErrorSample(Sample((f,), {"dim": 1.0}), TypeError),
        ErrorSample(Sample((f,), {"dim": 0, "dtype": "int64"}), NotImplementedError, "not implemented for 'Long'"),
    ]


def _calls(name: str):
    def torch_form(lib, x, **kwargs):
        return getattr(lib, name)(x, **_dtype_arg(kwargs, lib))

    def method_form(lib, x, **kwargs):
        return getattr(x, name)(**_dtype_arg(kwargs, lib))

    def f_form(lib, x, **kwargs):
        return getattr(functional(lib), name)(x, **_dtype_arg(kwargs, lib))

    return torch_form, method_form, f_form


OPS = []
for _name in ("softmax", "log_softmax"):
    _torch, _method, _f = _calls(_name)
    OPS += [
        OpInfo(_name, _torch, FLOATS, _samples, _errors, out=True),
        OpInfo(f"Tensor.{_name}", _method, ("float32",), _samples),
        OpInfo(f"F.{_name}", _f, FLOATS, lambda d, r: _samples(d, r)[:12] + _implicit_samples(d, r), _errors),
    ]
