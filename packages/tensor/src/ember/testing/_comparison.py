"""``assert_close``: compare tensors, NumPy arrays, Python scalars and nested sequences/mappings of them.

The decisions and messages follow ``torch.testing.assert_close``: per-dtype default tolerances
(``|actual - expected| <= atol + rtol * |expected|``), attribute checks (shape, device, dtype,
stride) before values, and a mismatch report with the count of mismatched elements and the greatest
absolute and relative differences. A failure inside a container names the item where it occurred.
Values are compared with NumPy in the dtype both sides promote to, as PyTorch compares in that dtype.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ember.core import dtypes as D
from ember.core.promotion import promote_types
from ember.core.tensor import Tensor

# (rtol, atol) per dtype; every other dtype compares exactly.
_TOLERANCES = {
    D.float16: (1e-3, 1e-5),
    D.bfloat16: (1.6e-2, 1e-5),
    D.float32: (1.3e-6, 1e-5),
    D.float64: (1e-7, 1e-7),
    D.complex64: (1.3e-6, 1e-5),
    D.complex128: (1e-7, 1e-7),
}
_SCALAR_DTYPES = {bool: D.bool_, int: D.int64, float: D.float64, complex: D.complex128}


class _Mismatch(Exception):
    """A failed comparison: the exception type to raise and its message, before the item path is added."""

    def __init__(self, kind: type[Exception], message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _tolerances(*dtypes: D.dtype, rtol: float | None, atol: float | None) -> tuple[float, float]:
    if (rtol is None) ^ (atol is None):
        raise ValueError(
            f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {'rtol' if rtol is None else 'atol'}."
        )
    if rtol is not None:
        return rtol, atol
    pairs = [_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _mismatch_message(identifier: str, extra: str, abs_diff, abs_idx, rel_diff, rel_idx, rtol, atol) -> str:
    equal = rtol == 0 and atol == 0
    lines = [f"{identifier} are not {'equal' if equal else 'close'}!", "", extra]
    for kind, diff, idx, tol in (("absolute", abs_diff, abs_idx, atol), ("relative", rel_diff, rel_idx, rtol)):
        line = (
            f"{kind.title()} difference: {diff}"
            if idx is None
            else f"Greatest {kind} difference: {diff} at index {idx}"
        )
        lines.append(line if equal else f"{line} (up to {tol} allowed)")
    return "\n".join(lines)


def _close(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    if actual.dtype == np.bool_:
        return actual == expected
    if actual.dtype.kind in "iu":
        actual, expected = actual.astype(np.int64), expected.astype(np.int64)
    with np.errstate(invalid="ignore", over="ignore"):
        equal = actual == expected
        finite = np.isfinite(actual) & np.isfinite(expected) if actual.dtype.kind in "fc" else True
        close = equal | (finite & (np.abs(actual - expected) <= atol + rtol * np.abs(expected)))
    if equal_nan and actual.dtype.kind in "fc":
        close |= np.isnan(actual) & np.isnan(expected)
    return close


def _array(t: Tensor) -> np.ndarray:
    array = np.asarray(t.detach() if t.requires_grad else t)
    # bfloat16 and float16 compare in float32: NumPy has no bfloat16 arithmetic of its own.
    return array.astype(np.float32) if t.dtype in (D.bfloat16, D.float16) else array


def _compare_tensors(
    actual,
    expected,
    *,
    rtol,
    atol,
    equal_nan,
    check_device,
    check_dtype,
    check_stride,
    check_layout=True,
    identifier="Tensor-likes",
) -> None:
    from ember.core.creation import from_numpy

    if isinstance(actual, np.ndarray):
        actual, expected = from_numpy(np.ascontiguousarray(actual)), from_numpy(np.ascontiguousarray(expected))
    if actual.shape != expected.shape:
        raise _Mismatch(AssertionError, _attribute("shape", _torch_repr(actual.shape), _torch_repr(expected.shape)))
    if check_stride and actual.stride() != expected.stride():
        raise _Mismatch(AssertionError, _attribute("stride()", actual.stride(), expected.stride()))
    if check_device and actual.device != expected.device:
        raise _Mismatch(AssertionError, _attribute("device", _torch_repr(actual.device), _torch_repr(expected.device)))
    if check_dtype and actual.dtype is not expected.dtype:
        raise _Mismatch(AssertionError, _attribute("dtype", _torch_repr(actual.dtype), _torch_repr(expected.dtype)))
    if actual.is_sparse or expected.is_sparse:
        if actual.is_sparse != expected.is_sparse:
            if check_layout:
                layouts = _torch_repr(actual.layout), _torch_repr(expected.layout)
                raise _Mismatch(AssertionError, _attribute("layout", *layouts))
            actual, expected = actual.to_dense(), expected.to_dense()
        else:
            _compare_sparse_coo(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
            return
    rtol, atol = _tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol)
    dtype = promote_types(actual.dtype, expected.dtype)
    a = _array(actual.cpu().to(dtype))
    e = _array(expected.cpu().to(dtype))
    matches = _close(a, e, rtol, atol, equal_nan)
    if matches.all():
        return
    if a.ndim == 0:
        raise _Mismatch(AssertionError, _scalar_message(a.item(), e.item(), rtol=rtol, atol=atol))
    raise _Mismatch(AssertionError, _tensor_message(a, e, matches, rtol=rtol, atol=atol, identifier=identifier))


def _compare_sparse_coo(actual, expected, *, rtol, atol, equal_nan) -> None:
    """PyTorch's comparison of two sparse COO tensors: sparse dims, entry counts, indices (equal) and
    values (close), after coalescing both when only one of them is coalesced."""
    if actual.is_coalesced() != expected.is_coalesced():
        actual, expected = actual.coalesce(), expected.coalesce()
    if actual.sparse_dim() != expected.sparse_dim():
        raise _Mismatch(
            AssertionError,
            "The number of sparse dimensions in sparse COO tensors does not match: "
            f"{actual.sparse_dim()} != {expected.sparse_dim()}",
        )
    if actual._nnz() != expected._nnz():
        raise _Mismatch(
            AssertionError,
            f"The number of specified values in sparse COO tensors does not match: {actual._nnz()} != {expected._nnz()}",
        )
    plain = {"check_device": False, "check_dtype": False, "check_stride": False}
    _compare_tensors(
        actual._indices(),
        expected._indices(),
        rtol=0,
        atol=0,
        equal_nan=False,
        identifier="Sparse COO indices",
        **plain,
    )
    _compare_tensors(
        actual._values(),
        expected._values(),
        rtol=rtol,
        atol=atol,
        equal_nan=equal_nan,
        identifier="Sparse COO values",
        **plain,
    )


def _tensor_message(
    a: np.ndarray, e: np.ndarray, matches: np.ndarray, *, rtol: float, atol: float, identifier: str = "Tensor-likes"
) -> str:
    total, mismatched = matches.size, int(matches.size - matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    shape = matches.shape
    a, e, matches = a.ravel(), e.ravel(), matches.ravel()
    if a.dtype.kind in "biu":
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[matches] = 0
        if abs_diff.dtype.kind == "i":  # true division of integers gives the default float dtype, as in PyTorch
            rel_diff = abs_diff.astype(np.float32) / np.abs(e).astype(np.float32)
        else:
            rel_diff = abs_diff / np.abs(e)
        rel_diff[matches] = 0
    abs_i, rel_i = _argmax(abs_diff), _argmax(rel_diff)
    return _mismatch_message(
        identifier,
        extra,
        abs_diff[abs_i].item(),
        tuple(int(i) for i in np.unravel_index(abs_i, shape)),
        rel_diff[rel_i].item(),
        tuple(int(i) for i in np.unravel_index(rel_i, shape)),
        rtol,
        atol,
    )


def _argmax(values: np.ndarray) -> int:
    # A NaN is the greatest difference, as torch.max reports it.
    nans = np.flatnonzero(np.isnan(values)) if values.dtype.kind == "f" else ()
    return int(nans[0]) if len(nans) else int(np.argmax(values))


def _scalar_message(actual, expected, *, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = math.inf if expected == 0 else abs_diff / abs(expected)
    extra = f"Expected {expected} but got {actual}."
    return _mismatch_message("Scalars", extra, abs_diff, None, rel_diff, None, rtol, atol)


def _attribute(name: str, actual, expected) -> str:
    return f"The values for attribute '{name}' do not match: {actual} != {expected}."


def _torch_repr(value) -> str:
    # The messages name PyTorch's objects ("torch.float32", "torch.Size([2])") as scripts compare them.
    return repr(value).replace("ember.", "torch.") if not isinstance(value, str) else value


def _compare_scalars(actual, expected, *, rtol, atol, equal_nan, check_dtype) -> None:
    if isinstance(actual, bool) and isinstance(expected, bool):
        if actual is not expected:
            raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}")
        return
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    rtol, atol = _tolerances(_SCALAR_DTYPES[type(actual)], _SCALAR_DTYPES[type(expected)], rtol=rtol, atol=atol)
    if actual == expected:
        return
    if equal_nan and _isnan(actual) and _isnan(expected):
        return
    finite = all(math.isfinite(abs(v)) for v in (actual, expected))
    if finite and abs(actual - expected) <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_message(actual, expected, rtol=rtol, atol=atol))


def _isnan(value) -> bool:
    return isinstance(value, (float, complex)) and math.isnan(abs(value))


def _is_scalar(value) -> bool:
    return isinstance(value, (bool, int, float, complex))


def _compare(actual, expected, path: tuple, options: dict) -> None:
    """Compare one pair, recursing into sequences and mappings; raise _Mismatch with ``path`` on failure."""
    try:
        _compare_one(actual, expected, path, options)
    except _Mismatch as failure:
        if path and not getattr(failure, "located", False):
            failure.message += f"\n\nThe failure occurred for item {''.join(f'[{p!r}]' for p in path)}"
            failure.located = True
        raise


def _compare_one(actual, expected, path: tuple, options: dict) -> None:
    if actual is None or expected is None:
        if actual is not expected:
            raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}")
        return
    tensor_like = (Tensor, np.ndarray)
    if isinstance(actual, tensor_like) or isinstance(expected, tensor_like):
        same_kind = (isinstance(actual, Tensor) and isinstance(expected, Tensor)) or (
            isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray)
        )
        if not same_kind or (not options["allow_subclasses"] and type(actual) is not type(expected)):
            raise _unhandled(actual, expected)
        _compare_tensors(actual, expected, **{k: options[k] for k in _TENSOR_OPTIONS})
        return
    if _is_scalar(actual) and _is_scalar(expected):
        _compare_scalars(actual, expected, **{k: options[k] for k in _SCALAR_OPTIONS})
        return
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _compare(a, e, (*path, i), options)
        return
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        keys_a, keys_e = set(actual), set(expected)
        if keys_a != keys_e:
            missing, extra = sorted(keys_e - keys_a, key=repr), sorted(keys_a - keys_e, key=repr)
            raise _Mismatch(
                AssertionError,
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {missing}\n"
                f"Additional keys in the actual mapping: {extra}",
            )
        for key in actual:
            _compare(actual[key], expected[key], (*path, key), options)
        return
    raise _unhandled(actual, expected)


_TENSOR_OPTIONS = ("rtol", "atol", "equal_nan", "check_device", "check_dtype", "check_stride", "check_layout")
_SCALAR_OPTIONS = ("rtol", "atol", "equal_nan", "check_dtype")


def _is_sequence(value) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _unhandled(actual, expected) -> _Mismatch:
    return _Mismatch(
        TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}."
    )


def assert_close(
    actual: Any,
    expected: Any,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg: str | Callable[[str], str] | None = None,
) -> None:
    """Raise ``AssertionError`` unless ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``.

    Example::

        >>> ember.testing.assert_close(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0 + 1e-7]))
    """
    if (rtol is None) ^ (atol is None):
        _tolerances(rtol=rtol, atol=atol)  # raises the ValueError
    options = {
        "allow_subclasses": allow_subclasses,
        "rtol": rtol,
        "atol": atol,
        "equal_nan": equal_nan,
        "check_device": check_device,
        "check_dtype": check_dtype,
        "check_stride": check_stride,
        "check_layout": check_layout,
    }
    try:
        _compare(actual, expected, (), options)
    except _Mismatch as failure:
        message = failure.message
        if failure.kind is AssertionError and msg is not None:
            message = msg(message) if callable(msg) else msg
        raise failure.kind(message) from None
