"""Samples for the complex views and ops (``ember.core.aten.shape.complex_views``,
``ember.core.aten.pointwise.complex_ops``) and for ``stft``/``istft`` (``ember.core.aten.fft.stft``):
every layout the views accept, the view errors, broadcasting parts and ``out=``."""

from __future__ import annotations

import numpy as np
from opinfo import ErrorSample, OpInfo, Sample, T, layouts_of, make

COMPLEX = ("complex64", "complex128")
REAL = ("float32", "float64")
TOL = {"float32": (1e-5, 1e-5), "complex64": (1e-5, 1e-5), "float64": (1e-10, 1e-10), "complex128": (1e-10, 1e-10)}


def _each_layout(shapes):
    def samples(dtype, rng):
        return [Sample((spec,), name=repr(spec)) for shape in shapes for spec in layouts_of(shape, dtype, rng)]

    return samples


def _pairs_of_floats(dtype, rng):
    out = []
    for a, b in (((3, 4), (3, 4)), ((3, 1), (4,)), ((), (2, 3)), ((0, 2), (2,))):
        first = make(a, dtype, rng, low=0.1, high=3)
        out.append(Sample((first, make(b, dtype, rng, low=-3, high=3)), name=f"{a} {b}"))
    out.append(Sample((make((3, 4), dtype, rng, layout="transposed"), make((3, 4), dtype, rng)), name="transposed"))
    return out


def _pairs_errors():
    ints = T(np.zeros((2,), np.int64))
    return [
        ErrorSample(Sample((ints, ints)), RuntimeError, "Expected both inputs to be Half, Float or Double tensors"),
        ErrorSample(
            Sample((T(np.zeros(2, np.float32)), T(np.zeros(2, np.float64)))),
            RuntimeError,
            "Expected object of scalar type Float but got scalar type Double for second argument",
        ),
    ]


def _pairs_of_reals(dtype, rng):
    # (..., 2) with the last dim contiguous: as the views need it, in several layouts of the other dims.
    out = [Sample((make(shape, dtype, rng),), name=str(shape)) for shape in ((2,), (3, 2), (2, 3, 2), (0, 2))]
    sliced = make((4, 3, 2), dtype, rng)
    out.append(Sample((sliced,), {"start": 1}, name="rows from the second"))
    return out


def _view_as_complex(lib, x, start=0):
    return lib.view_as_complex(x[start:] if start else x)


def _complex_view_errors():
    return [
        ErrorSample(Sample((T(np.zeros((3, 3), np.float32)),)), RuntimeError, "last dimension of size 2"),
        ErrorSample(Sample((T(np.zeros((3, 2), np.int64)),)), RuntimeError, "only supported for half, float"),
        ErrorSample(Sample((T(np.zeros((2, 2), np.float32), "transposed"),)), RuntimeError, "stride 1"),
        ErrorSample(Sample((T(np.zeros((), np.float32)),)), RuntimeError, "one or more dimensions"),
    ]


def _real_errors():
    return [ErrorSample(Sample((T(np.zeros(3, np.float32)),)), RuntimeError, "only supported for complex tensors")]


def _signals(dtype, rng):
    out = []
    for shape, kwargs in (
        ((40,), {"n_fft": 8}),
        ((2, 40), {"n_fft": 8, "hop_length": 3, "center": False}),
        ((2, 33), {"n_fft": 10, "win_length": 7, "normalized": True}),
        ((30,), {"n_fft": 8, "pad_mode": "constant", "onesided": False}),
    ):
        out.append(Sample((make(shape, dtype, rng, low=-2, high=2),), kwargs, name=f"{shape} {kwargs}"))
    return out


def _stft(lib, x, **kwargs):
    window = lib.hann_window(kwargs.get("win_length", kwargs["n_fft"]), dtype=x.real.dtype, device=x.device)
    return lib.stft(x, window=window, return_complex=True, **kwargs)


def _spectra(dtype, rng):
    out = []
    for shape, kwargs in (
        ((9, 11), {"n_fft": 16, "hop_length": 4}),
        ((2, 9, 6), {"n_fft": 16, "hop_length": 4, "length": 30}),
        ((5, 7), {"n_fft": 8, "hop_length": 2, "center": False}),
    ):
        out.append(Sample((make(shape, dtype, rng, low=-2, high=2),), kwargs, name=f"{shape} {kwargs}"))
    return out


def _istft(lib, spectrum, **kwargs):
    window = (
        lib.hann_window(kwargs["n_fft"], dtype=spectrum.real.dtype, device=spectrum.device) + 0.1
    )  # no zeros: NOLA holds
    return lib.istft(spectrum, window=window, **kwargs)


OPS = [
    OpInfo("view_as_real", lambda lib, x: lib.view_as_real(x), COMPLEX, _each_layout([(3, 4), (5,), (), (0, 3)])),
    OpInfo("view_as_real_errors", lambda lib, x: lib.view_as_real(x), COMPLEX, lambda d, r: [], errors=_real_errors),
    OpInfo("view_as_complex", _view_as_complex, REAL, _pairs_of_reals, errors=_complex_view_errors),
    OpInfo("real", lambda lib, x: x.real, COMPLEX, _each_layout([(3, 4), (5,), ()])),
    OpInfo("imag", lambda lib, x: lib.imag(x), COMPLEX, _each_layout([(3, 4), (5,), ()])),
    OpInfo(
        "conj_physical",
        lambda lib, x, **k: lib.conj_physical(x, **k),
        COMPLEX,
        _each_layout([(3, 4), (5,), ()]),
        inplace=lambda lib, x: x.conj_physical_(),
        out=True,
    ),
    OpInfo("conj_physical_of_reals", lambda lib, x: lib.conj_physical(x), REAL, _each_layout([(3, 4), ()])),
    OpInfo("conj", lambda lib, x: x.conj().resolve_conj(), COMPLEX, _each_layout([(3, 4), ()]), check_strides=False),
    OpInfo("complex", lambda lib, a, b, **k: lib.complex(a, b, **k), REAL, _pairs_of_floats, _pairs_errors, out=True),
    OpInfo(
        "polar",
        lambda lib, a, b, **k: lib.polar(a, b, **k),
        REAL,
        _pairs_of_floats,
        _pairs_errors,
        out=True,
        tolerances=TOL,
    ),
    OpInfo("stft", _stft, (*REAL, *COMPLEX), _signals, tolerances=TOL, check_strides=False),
    OpInfo("istft", _istft, COMPLEX, _spectra, tolerances=TOL, check_strides=False),
]
