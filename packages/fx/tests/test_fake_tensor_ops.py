"""Every op of the core's OpInfo tables on fakes: the fake result has the real result's shape, dtype,
strides, storage offset and device, and aliases the input the real result aliases. The real Ember
result is the reference (the ops are tested against PyTorch in the tensor package)."""

from __future__ import annotations

import importlib
import pathlib
import sys
import warnings

import numpy as np
import pytest

import ember
from ember._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensor,
    FakeTensorMode,
)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tensor" / "tests"))
from opinfo import OpInfo, build

TABLES = sorted(p.stem for p in (pathlib.Path(__file__).resolve().parents[2] / "tensor" / "tests").glob("opinfo_*.py"))
OPS: list[OpInfo] = [op for table in TABLES for op in importlib.import_module(table).OPS]

# Ops whose output shape depends on the input's values.
DATA_DEPENDENT = {
    name: DynamicOutputShapeException
    for name in (
        "nonzero",
        "nonzero_as_tuple",
        "argwhere",
        "where_condition",
        "masked_select",
        "unique",
        "unique_consecutive",
        "F.one_hot inferred",
        "bincount",
        "Tensor.bincount",
    )
}
# Entries that answer with a Python bool read from the values (allclose, equal), or split where a
# tensor's values say (tensor_split with a tensor of sections or indices).
DATA_DEPENDENT.update(
    dict.fromkeys(
        [
            *("allclose", "Tensor.allclose", "equal", "Tensor.equal", "tensor_split_tensor", "cov_weighted"),
            # q checked in [0, 1], the range's ends, Euclid's steps until all remainders are zero,
            # repeats summed, indices checked against the shape: each read on the host, as in PyTorch.
            *(
                "quantile_tensor_q",
                "histogram_auto_range",
                "histogramdd_auto_range",
                "gcd",
                "lcm",
                "repeat_interleave_tensor",
                "unravel_index",
            ),
        ],
        DataDependentOutputException,
    )
)
# Entries whose test call reads the results' values in some samples (where indices may differ
# among ties): on fakes that call raises.
READS_VALUES = {"sort", "topk", "kthvalue", "median_dim", "nanmedian_dim"}
# The decomposition that modes see lays out its result unlike the CPU kernel (and PyTorch), which
# keep the input's dense layout (strides (4, 1) for a transposed 3x4 input, the decomposition (1, 3)).
WRONG_STRIDES = {"F.rms_norm"}


def _dtypes(op: OpInfo) -> list[str]:
    # One dtype, and float32 or int64 too where the op takes them: the meta kernels branch on the
    # dtype's category more than on the dtype, and the sweep stays quick.
    chosen = [op.dtypes[0]]
    for extra in ("float32", "int64"):
        if extra in op.dtypes and extra not in chosen:
            chosen.append(extra)
            break
    return chosen


def _marks(op: OpInfo) -> list:
    if op.name in WRONG_STRIDES:
        return [pytest.mark.xfail(reason="the op's decomposition gives other strides than its kernel", strict=True)]
    return []


CASES = [pytest.param(op, dtype, id=f"{op.name}-{dtype}", marks=_marks(op)) for op in OPS for dtype in _dtypes(op)]


def _fake(value, mode: FakeTensorMode):
    if isinstance(value, ember.Tensor):
        return mode.from_tensor(value)
    if isinstance(value, list | tuple):
        return type(value)(_fake(v, mode) for v in value)
    if isinstance(value, dict):
        return {k: _fake(v, mode) for k, v in value.items()}
    return value


def _tensors(value) -> list:
    if isinstance(value, ember.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _assert_like(fake, real, sample, real_inputs, fake_inputs) -> None:
    if isinstance(real, list | tuple):
        assert isinstance(fake, list | tuple) and len(fake) == len(real), f"{sample}: {fake!r} vs {real!r}"
        for f, r in zip(fake, real, strict=True):
            _assert_like(f, r, sample, real_inputs, fake_inputs)
        return
    if not isinstance(real, ember.Tensor):
        assert fake == real, f"{sample}: {fake!r} != {real!r}"
        return
    assert isinstance(fake, FakeTensor), f"{sample}: got {type(fake).__name__}"
    got = (tuple(fake.shape), fake.dtype, fake.stride(), fake.storage_offset(), fake.device)
    want = (tuple(real.shape), real.dtype, real.stride(), real.storage_offset(), real.device)
    assert got == want, f"{sample}: fake {got} vs real {want}"
    # The fake result aliases exactly the inputs the real result aliases.
    real_aliased = [i for i, t in enumerate(real_inputs) if t.untyped_storage() is real.untyped_storage()]
    fake_aliased = [i for i, t in enumerate(fake_inputs) if t.untyped_storage() is fake.untyped_storage()]
    assert real_aliased == fake_aliased, f"{sample}: aliases inputs {fake_aliased}, the real result {real_aliased}"


@pytest.mark.parametrize("op, dtype", CASES)
def test_fake_matches_real(op: OpInfo, dtype: str):
    for sample in op.samples(dtype, np.random.default_rng(1234)):
        args, kwargs = build(sample.args, ember), build(sample.kwargs, ember)
        real_inputs = _tensors((args, kwargs))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                real, real_error = op.call(ember, *args, **kwargs), None
            except Exception as error:  # the fake's behaviour is compared below
                real, real_error = None, error
            mode = FakeTensorMode()
            fargs, fkwargs = _fake(build(sample.args, ember), mode), _fake(build(sample.kwargs, ember), mode)
            fake_inputs = _tensors((fargs, fkwargs))
            try:
                with mode:
                    fake, fake_error = op.call(ember, *fargs, **fkwargs), None
            except Exception as error:
                fake, fake_error = None, error
        if op.name in DATA_DEPENDENT:
            expected = DATA_DEPENDENT[op.name]
            assert isinstance(fake_error, expected), f"{sample}: expected {expected.__name__}, got {fake_error!r}"
            continue
        if op.name == "aten.index.Tensor" and any(
            isinstance(i, ember.Tensor) and i.dtype == ember.bool for i in _tensors(args[1:])
        ):
            assert isinstance(fake_error, DynamicOutputShapeException), f"{sample}: got {fake_error!r}"
            continue
        if op.name in READS_VALUES and isinstance(fake_error, DataDependentOutputException):
            continue
        if real_error is not None:
            # Errors that only the data reveals (an index out of range) are the real kernel's alone;
            # others are the same error.
            if fake_error is not None:
                assert isinstance(fake_error, type(real_error)), f"{sample}: {fake_error!r} vs real {real_error!r}"
            continue
        if fake_error is not None:
            raise AssertionError(f"{sample}: the fake raised {fake_error!r}; the real op returned") from fake_error
        _assert_like(fake, real, sample, real_inputs, fake_inputs)


def _first_tensor_arg(args) -> int | None:
    return next((i for i, a in enumerate(args) if isinstance(a, ember.Tensor)), None)


@pytest.mark.parametrize("op, dtype", [c for c in CASES if c.values[0].inplace is not None])
def test_fake_in_place_matches_real(op: OpInfo, dtype: str):
    for sample in op.samples(dtype, np.random.default_rng(1234)):
        args, kwargs = build(sample.args, ember), build(sample.kwargs, ember)
        if _first_tensor_arg(args) != 0:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            version = args[0]._version
            try:
                returned = op.inplace(ember, *args, **kwargs)
            except Exception:  # an in-place call the real op refuses is not compared
                continue
            real_bumps = args[0]._version - version
            mode = FakeTensorMode()
            fargs, fkwargs = _fake(build(sample.args, ember), mode), _fake(build(sample.kwargs, ember), mode)
            target = fargs[0]
            version = target._version
            with mode:
                fake_returned = op.inplace(ember, *fargs, **fkwargs)
        assert (fake_returned is target) == (returned is args[0]), f"{sample}"
        got = (tuple(target.shape), target.dtype, target.stride(), target.storage_offset())
        want = (tuple(args[0].shape), args[0].dtype, args[0].stride(), args[0].storage_offset())
        assert got == want, f"{sample}: fake {got} vs real {want}"
        assert (target._version - version > 0) == (real_bumps > 0), f"{sample}: version bumps differ"


OUT_CASES = [pytest.param(op, dtype, id=f"{op.name}-{dtype}") for op in OPS if op.out for dtype in _dtypes(op)]


@pytest.mark.parametrize("op, dtype", OUT_CASES)
def test_fake_out_matches_real(op: OpInfo, dtype: str):
    for sample in op.samples(dtype, np.random.default_rng(1234)):
        args, kwargs = build(sample.args, ember), build(sample.kwargs, ember)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                expected = op.call(ember, *args, **kwargs)
            except Exception:  # the out= form of a call the op refuses is not compared
                continue
            if not isinstance(expected, ember.Tensor):
                continue
            out = ember.empty(0, dtype=expected.dtype)
            op.call(ember, *args, **kwargs, out=out)
            mode = FakeTensorMode()
            fargs, fkwargs = _fake(build(sample.args, ember), mode), _fake(build(sample.kwargs, ember), mode)
            with mode:
                fake_out = ember.empty(0, dtype=expected.dtype)
                if op.name in DATA_DEPENDENT:
                    with pytest.raises(DATA_DEPENDENT[op.name]):
                        op.call(ember, *fargs, **fkwargs, out=fake_out)
                    continue
                result = op.call(ember, *fargs, **fkwargs, out=fake_out)
        assert result is fake_out and isinstance(fake_out, FakeTensor), f"{sample}"
        got = (tuple(fake_out.shape), fake_out.dtype, fake_out.stride())
        want = (tuple(out.shape), out.dtype, out.stride())
        assert got == want, f"{sample}: fake {got} vs real {want}"
        assert fake_out._version > 0 and fake_out.untyped_storage().device.type == "meta"
