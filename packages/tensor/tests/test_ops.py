"""Every op of every ``opinfo_*`` table, against PyTorch and against itself on the meta device."""

from __future__ import annotations

import importlib
import pathlib
import warnings

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, TOLERANCES, OpInfo, build, dtype_name, first_tensor, to_numpy, torch

import ember

TABLES = sorted(p.stem for p in pathlib.Path(__file__).parent.glob("opinfo_*.py"))
OPS: list[OpInfo] = [op for table in TABLES for op in importlib.import_module(table).OPS]
CASES = [pytest.param(op, dtype, id=f"{op.name}-{dtype}") for op in OPS for dtype in op.dtypes]
needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def samples(op: OpInfo, dtype: str):
    return op.samples(dtype, np.random.default_rng(1234))


def run(call, lib, sample, *extra, **extra_kwargs):
    args, kwargs = build(sample.args, lib), build(sample.kwargs, lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(lib, *extra, *args, **kwargs, **extra_kwargs)


def outcome(call, lib, sample, *extra, **extra_kwargs):
    try:
        return run(call, lib, sample, *extra, **extra_kwargs), None
    except Exception as error:  # compared against the oracle's behaviour below
        return None, error


def assert_same(ours, theirs, op: OpInfo, dtype: str, sample, check_strides: bool) -> None:
    if isinstance(theirs, list | tuple):
        assert isinstance(ours, list | tuple) and len(ours) == len(theirs), f"{sample}: {ours!r} vs {theirs!r}"
        for a, b in zip(ours, theirs, strict=True):
            assert_same(a, b, op, dtype, sample, check_strides)
        return
    if not isinstance(theirs, torch.Tensor):
        assert ours == theirs, f"{sample}: {ours!r} != {theirs!r}"
        return
    assert isinstance(ours, ember.Tensor), f"{sample}: expected a tensor, got {type(ours).__name__}"
    assert dtype_name(ours) == dtype_name(theirs), f"{sample}: dtype {ours.dtype} != {theirs.dtype}"
    assert tuple(ours.shape) == tuple(theirs.shape), f"{sample}: shape {tuple(ours.shape)} != {tuple(theirs.shape)}"
    if check_strides and op.check_strides and theirs.numel() > 1:
        assert ours.stride() == theirs.stride(), f"{sample}: strides {ours.stride()} != {theirs.stride()}"
    name = dtype_name(theirs)
    rtol, atol = op.tolerances.get(name) or TOLERANCES.get(name, (0, 0))
    np.testing.assert_allclose(
        to_numpy(ours), op.expected(sample, to_numpy(theirs)), rtol=rtol, atol=atol, equal_nan=True, err_msg=str(sample)
    )


@needs_torch
@pytest.mark.parametrize("op, dtype", CASES)
def test_matches_pytorch(op: OpInfo, dtype: str):
    for sample in samples(op, dtype):
        theirs, their_error = outcome(op.call, torch, sample)
        ours, our_error = outcome(op.call, ember, sample)
        if their_error is not None:
            assert our_error is not None, f"{sample}: PyTorch raised {their_error!r}, we returned {ours!r}"
            assert isinstance(our_error, type(their_error)), f"{sample}: {our_error!r} vs PyTorch's {their_error!r}"
            continue
        if our_error is not None:
            raise AssertionError(f"{sample}: we raised {our_error!r}; PyTorch returned a result") from our_error
        assert_same(ours, theirs, op, dtype, sample, check_strides=True)


@needs_torch
@pytest.mark.parametrize("op, dtype", [c for c in CASES if c.values[0].inplace is not None])
def test_inplace_matches_pytorch(op: OpInfo, dtype: str):
    for sample in samples(op, dtype):
        if first_tensor(sample.args) is None:
            continue
        results = {}
        for lib in (torch, ember):
            args, kwargs = build(sample.args, lib), build(sample.kwargs, lib)
            target = args[0]
            try:
                version = target._version
                returned = op.inplace(lib, *args, **kwargs)
                results[lib.__name__] = (returned is target, to_numpy(target), dtype_name(target), None)
                if lib is ember:
                    assert target._version > version, f"{sample}: in-place op did not bump the version"
            except Exception as error:
                results[lib.__name__] = (None, None, None, type(error))
        (their_same, their_values, their_dtype, their_error) = results["torch"]
        (our_same, our_values, our_dtype, our_error) = results["ember"]
        if their_error is not None:
            assert our_error is not None and issubclass(our_error, their_error), (
                f"{sample}: {our_error} vs {their_error}"
            )
            continue
        assert our_error is None, f"{sample}: we raised {our_error}"
        assert their_same and our_same and our_dtype == their_dtype
        rtol, atol = op.tolerances.get(their_dtype) or TOLERANCES.get(their_dtype, (0, 0))
        expected = op.expected(sample, their_values)
        np.testing.assert_allclose(our_values, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=str(sample))


@needs_torch
@pytest.mark.parametrize("op, dtype", [c for c in CASES if c.values[0].out])
def test_out_matches_pytorch(op: OpInfo, dtype: str):
    for sample in samples(op, dtype):
        expected, their_error = outcome(op.call, torch, sample)
        if their_error is not None or not isinstance(expected, torch.Tensor):
            continue
        out_dtype = getattr(ember, dtype_name(expected))
        out = ember.empty(0, dtype=out_dtype)
        result = run(op.call, ember, sample, out=out)
        assert result is out
        assert_same(out, expected, op, dtype, sample, check_strides=False)


@pytest.mark.parametrize("op, dtype", [c for c in CASES if c.values[0].meta])
def test_meta_matches_cpu(op: OpInfo, dtype: str):
    for sample in samples(op, dtype):
        cpu, cpu_error = outcome(op.call, ember, sample)
        meta_sample = type(sample)(
            _to_meta(build(sample.args, ember)), _to_meta(build(sample.kwargs, ember)), sample.name
        )
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                meta = op.call(ember, *meta_sample.args, **meta_sample.kwargs)
        except Exception as error:
            if cpu_error is None:
                raise AssertionError(f"{sample}: meta raised {error!r}, CPU did not") from error
            continue
        if cpu_error is not None:
            # Data-dependent errors (integer division by zero) are the CPU's alone, as in PyTorch.
            continue
        _assert_meta_like(meta, cpu, sample)


def _to_meta(value):
    if isinstance(value, ember.Tensor):
        elements = value.untyped_storage().nbytes() // value.element_size()
        base = ember.empty(elements, dtype=value.dtype, device="meta")
        return base.as_strided(value.shape, value.stride(), value.storage_offset())
    if isinstance(value, list | tuple):
        return type(value)(_to_meta(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_meta(v) for k, v in value.items()}
    return value


def _assert_meta_like(meta, cpu, sample) -> None:
    if isinstance(cpu, list | tuple):
        assert len(meta) == len(cpu)
        for m, c in zip(meta, cpu, strict=True):
            _assert_meta_like(m, c, sample)
        return
    if not isinstance(cpu, ember.Tensor):
        return
    assert meta.device.type == "meta", f"{sample}: result on {meta.device}"
    assert (tuple(meta.shape), meta.dtype, meta.stride()) == (tuple(cpu.shape), cpu.dtype, cpu.stride()), (
        f"{sample}: meta {tuple(meta.shape)} {meta.dtype} {meta.stride()} vs cpu {tuple(cpu.shape)} {cpu.dtype} {cpu.stride()}"
    )


@pytest.mark.parametrize("op", [pytest.param(op, id=op.name) for op in OPS if op.errors])
def test_errors(op: OpInfo):
    for case in op.errors():
        with pytest.raises(case.error, match=case.match):
            run(op.call, ember, case.sample)
        if torch is not None:
            with pytest.raises(case.error):
                run(op.call, torch, case.sample)
