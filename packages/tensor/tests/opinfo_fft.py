"""Samples for ``ember.fft`` (``ember.core.aten.fft``): each transform over real and complex
signals, with lengths cut and padded (``n``/``s``), chosen dims and the three ``norm`` modes; the
frequency helpers and the shifts."""

from __future__ import annotations

import numpy as np
from opinfo import ErrorSample, OpInfo, Sample, T, make

TOL = {"float32": (1e-5, 1e-5), "complex64": (1e-5, 1e-5), "float64": (1e-10, 1e-10), "complex128": (1e-10, 1e-10)}
REAL = ("float32", "float64")
COMPLEX = ("complex64", "complex128")


def _signal(shape, dtype, rng, layout="contiguous"):
    return make(shape, dtype, rng, low=-2, high=2, layout=layout)


def _one_dim_samples(dtype, rng):
    out = []
    for kwargs in (
        {},
        {"n": 6},
        {"n": 3, "dim": 0},
        {"dim": 0, "norm": "ortho"},
        {"norm": "forward"},
        {"norm": "backward"},
    ):
        out.append(Sample((_signal((4, 5), dtype, rng),), kwargs, name=str(kwargs)))
    out.append(Sample((_signal((3, 4), dtype, rng, "transposed"),), {"dim": 0}, name="transposed"))
    out.append(Sample((_signal((2, 3, 4), dtype, rng, "sliced"),), {"dim": 1}, name="sliced"))
    return out


def _n_dim_samples(dtype, rng):
    out = []
    for kwargs in (
        {},
        {"s": (3, 6)},
        {"dim": (0, 2)},
        {"s": (2, -1), "dim": (1, 0), "norm": "ortho"},
        {"norm": "forward"},
    ):
        out.append(Sample((_signal((4, 3, 5), dtype, rng),), kwargs, name=str(kwargs)))
    return out


def _two_dim_samples(dtype, rng):
    return [Sample((_signal((2, 4, 6), dtype, rng),), k, name=str(k)) for k in ({}, {"s": (3, 8)}, {"norm": "ortho"})]


def _errors():
    return [
        ErrorSample(Sample((T(np.ones(4)),), {"n": 0}), RuntimeError, "Invalid number of data points"),
        ErrorSample(Sample((T(np.ones(4)),), {"dim": 1}), IndexError, "out of range"),
        ErrorSample(Sample((T(np.ones(4) + 0j),)), RuntimeError, "real input"),
    ]


def _resolved(name):
    # PyTorch's ihfft results are conjugate views: resolved before they are compared. The layouts of
    # this family follow PyTorch's internal sequence of transforms; the values and shapes are compared.
    return lambda lib, x, **k: getattr(lib.fft, name)(x, **k).resolve_conj()


def _fft(name):
    return lambda lib, x, **k: getattr(lib.fft, name)(x, **k)


OPS = [
    OpInfo("fft.fft", _fft("fft"), (*REAL, *COMPLEX), _one_dim_samples, tolerances=TOL),
    OpInfo("fft.ifft", _fft("ifft"), COMPLEX, _one_dim_samples, tolerances=TOL),
    OpInfo("fft.rfft", _fft("rfft"), REAL, _one_dim_samples, errors=_errors, tolerances=TOL),
    OpInfo("fft.irfft", _fft("irfft"), COMPLEX, _one_dim_samples, tolerances=TOL),
    OpInfo("fft.fftn", _fft("fftn"), (*REAL, *COMPLEX), _n_dim_samples, tolerances=TOL),
    OpInfo("fft.ifftn", _fft("ifftn"), COMPLEX, _n_dim_samples, tolerances=TOL),
    OpInfo("fft.rfftn", _fft("rfftn"), REAL, _n_dim_samples, tolerances=TOL),
    OpInfo("fft.irfftn", _fft("irfftn"), COMPLEX, _n_dim_samples, tolerances=TOL),
    OpInfo("fft.fft2", _fft("fft2"), ("float64", "complex64"), _two_dim_samples, tolerances=TOL),
    OpInfo("fft.ifft2", _fft("ifft2"), ("complex128",), _two_dim_samples, tolerances=TOL),
    OpInfo("fft.rfft2", _fft("rfft2"), REAL, _two_dim_samples, tolerances=TOL),
    OpInfo("fft.irfft2", _fft("irfft2"), ("complex128",), _two_dim_samples, tolerances=TOL),
    OpInfo("fft.hfft", _resolved("hfft"), COMPLEX, _one_dim_samples, tolerances=TOL, check_strides=False),
    OpInfo("fft.ihfft", _resolved("ihfft"), REAL, _one_dim_samples, tolerances=TOL, check_strides=False),
    OpInfo("fft.hfftn", _resolved("hfftn"), COMPLEX, _n_dim_samples, tolerances=TOL, check_strides=False),
    OpInfo("fft.ihfftn", _resolved("ihfftn"), REAL, _n_dim_samples, tolerances=TOL, check_strides=False),
    OpInfo("fft.hfft2", _resolved("hfft2"), ("complex128",), _two_dim_samples, tolerances=TOL, check_strides=False),
    OpInfo("fft.ihfft2", _resolved("ihfft2"), REAL, _two_dim_samples, tolerances=TOL, check_strides=False),
    OpInfo(
        "fft.fftshift",
        lambda lib, x, **k: lib.fft.fftshift(x, **k),
        REAL,
        lambda d, r: [
            Sample((_signal((4, 5), d, r),)),
            Sample((_signal((4, 5), d, r),), {"dim": 1}),
            Sample((_signal((3, 5), d, r),), {"dim": (0,)}),
        ],
    ),
    OpInfo(
        "fft.ifftshift",
        lambda lib, x, **k: lib.fft.ifftshift(x, **k),
        REAL,
        lambda d, r: [Sample((_signal((4, 5), d, r),)), Sample((_signal((4, 5), d, r),), {"dim": -1})],
    ),
    OpInfo(
        "fft.fftfreq",
        lambda lib, n, **k: lib.fft.fftfreq(n, **({**k, "dtype": getattr(lib, k["dtype"])} if "dtype" in k else k)),
        ("float64",),
        lambda d, r: [Sample((n,), k) for n, k in [(5, {}), (8, {"d": 0.5}), (1, {}), (6, {"dtype": "float64"})]],
        meta=False,
        transforms=False,
    ),
    OpInfo(
        "fft.rfftfreq",
        lambda lib, n, **k: lib.fft.rfftfreq(n, **k),
        ("float64",),
        lambda d, r: [Sample((n,), k) for n, k in [(5, {}), (8, {"d": 0.25}), (1, {})]],
        meta=False,
        transforms=False,
    ),
]
