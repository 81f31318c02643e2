"""The dtypes PyTorch supports only in part, kept out of ``ember.core.dtypes.ALL``.

- ``uint16``, ``uint32``, ``uint64``: factories, conversions, copies, views and the few ops NumPy
  computes exactly; they promote only with floating types (PyTorch refuses the rest).
- the float8 family (``float8_e4m3fn``, ``float8_e5m2``, their ``fnuz`` variants, ``float8_e8m0fnu``)
  stored through ml_dtypes: creation, conversions, copies and views; no promotion with any other dtype.
- ``float4_e2m1fn_x2``: two packed 4-bit floats per byte, and the storage-only types ``bits8``,
  ``bits16``, ``bits1x8``, ``bits2x4``, ``bits4x2``, ``int1``..``int7``, ``uint1``..``uint7``: a tensor
  of them can be made (``empty``, ``zeros``), copied and viewed as bytes, nothing more. They are
  stored as NumPy void elements, so that no arithmetic runs on them by accident.
- ``complex32`` (``chalf``): a pair of float16 per element (a NumPy structured element), created,
  converted and copied.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ember.core.dtypes import BOOL, COMPLEX, FLOATING, INTEGRAL, dtype

# Storage-only kinds: no category of promotion applies; BOOL is a placeholder never compared.
_STORAGE = BOOL


class _bits_dtype(dtype):
    """A bits type: PyTorch leaves its signedness undefined and raises when asked."""

    __slots__ = ()

    @property
    def is_signed(self) -> bool:  # type: ignore[override]
        raise RuntimeError("Bits types are undefined")


def _make(name: str, np_type, category: int, is_signed: bool, cls: type = dtype) -> dtype:
    d = dtype.__new__(cls)
    d.name = name
    d.np = np.dtype(np_type)
    d.itemsize = d.np.itemsize
    d.category = category
    dtype.is_signed.__set__(d, is_signed)  # the slot itself: _bits_dtype's property shadows it
    return d


uint16 = _make("uint16", np.uint16, INTEGRAL, False)
uint32 = _make("uint32", np.uint32, INTEGRAL, False)
uint64 = _make("uint64", np.uint64, INTEGRAL, False)
WIDE_UNSIGNED = (uint16, uint32, uint64)

float8_e4m3fn = _make("float8_e4m3fn", ml_dtypes.float8_e4m3fn, FLOATING, True)
float8_e5m2 = _make("float8_e5m2", ml_dtypes.float8_e5m2, FLOATING, True)
float8_e4m3fnuz = _make("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, FLOATING, True)
float8_e5m2fnuz = _make("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, FLOATING, True)
float8_e8m0fnu = _make("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, FLOATING, False)
FLOAT8 = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)

float4_e2m1fn_x2 = _make("float4_e2m1fn_x2", "V1", FLOATING, True)
complex32 = _make("complex32", np.dtype([("real", np.float16), ("imag", np.float16)]), COMPLEX, True)

_BITS = tuple(
    _make(name, f"V{size}", _STORAGE, False, _bits_dtype)
    for name, size in (("bits8", 1), ("bits16", 2), ("bits1x8", 1), ("bits2x4", 1), ("bits4x2", 1))
)
bits8, bits16, bits1x8, bits2x4, bits4x2 = _BITS
# int1..int7, then uint1..uint7: sub-byte integers, one element per byte of storage.
_SUB_BYTE = tuple(_make(f"int{n}", "V1", _STORAGE, True) for n in range(1, 8)) + tuple(
    _make(f"uint{n}", "V1", _STORAGE, False) for n in range(1, 8)
)
# Types that are only storage: a tensor of them is made, copied and viewed, never computed with.
STORAGE_ONLY = (float4_e2m1fn_x2, *_BITS, *_SUB_BYTE)

EXTRA = (*WIDE_UNSIGNED, *FLOAT8, complex32, *STORAGE_ONLY)
# Those whose NumPy element type is their own, so that a NumPy array of it converts back.
NUMPY_EXTRA = (*WIDE_UNSIGNED, *FLOAT8)

EXTRA_ALIASES = {"chalf": complex32, "bit": _SUB_BYTE[7]}  # torch.bit is torch.uint1

_SUB_BYTE_NAMES = {d: f"Int{d.name[3:]}" if d.is_signed else f"UInt{d.name[4:]}" for d in _SUB_BYTE}
EXTRA_SCALAR_TYPE_NAMES = {
    uint16: "UInt16",
    uint32: "UInt32",
    uint64: "UInt64",
    float8_e4m3fn: "Float8_e4m3fn",
    float8_e5m2: "Float8_e5m2",
    float8_e4m3fnuz: "Float8_e4m3fnuz",
    float8_e5m2fnuz: "Float8_e5m2fnuz",
    float8_e8m0fnu: "Float8_e8m0fnu",
    float4_e2m1fn_x2: "Float4_e2m1fn_x2",
    complex32: "ComplexHalf",
    bits8: "Bits8",
    bits16: "Bits16",
    bits1x8: "Bits1x8",
    bits2x4: "Bits2x4",
    bits4x2: "Bits4x2",
    **_SUB_BYTE_NAMES,
}
_EXTRA_SET = frozenset(EXTRA)


def is_extra(d: dtype) -> bool:
    return d in _EXTRA_SET


def promote_extra(a: dtype, b: dtype, promote) -> dtype:
    """PyTorch's promotion of two different dtypes of which one at least is in ``EXTRA``.

    ``promote`` is the table for the fully supported dtypes (``ember.core.promotion._promote``).
    """
    from ember.core import dtypes as D

    pair = f"{D.SCALAR_TYPE_NAMES[a]} and {D.SCALAR_TYPE_NAMES[b]}"
    unsigned = (*WIDE_UNSIGNED, *_SUB_BYTE[7:])
    if a in FLOAT8 or b in FLOAT8:
        raise RuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote {pair}")
    if a in unsigned or b in unsigned:
        # Unsigned integers other than uint8 promote only with the real floating types.
        other = b if a in unsigned else a
        if other in (D.float16, D.bfloat16, D.float32, D.float64, float4_e2m1fn_x2):
            return other
        if a in WIDE_UNSIGNED or b in WIDE_UNSIGNED:
            raise RuntimeError(
                f"Promotion for uint16, uint32, uint64 types is not supported, attempted to promote {pair}"
            )
    if a in STORAGE_ONLY or b in STORAGE_ONLY:
        raise RuntimeError(f"Promotion from {pair} is unsupported.")
    # complex32 with a fully supported dtype: promote the real parts, then take the complex type.
    real = promote(a.to_real(), b.to_real())
    return {D.float16: complex32, D.float32: D.complex64, D.float64: D.complex128}[real]


# -- copies and fills ---------------------------------------------------------------------------------
# The kernels of copy_, _to_copy and fill_ hand over to these when a dtype of this module is involved
# that NumPy cannot convert by itself: complex32 (a structured element) and the storage-only types.

SPECIAL_STORAGE = frozenset((complex32, *STORAGE_ONLY))
# The dtypes whose conversions go through copy_special: those above and the float8 types, whose
# rounding of out-of-range values PyTorch does its own way.
CONVERTED = SPECIAL_STORAGE | frozenset(FLOAT8)


def _not_implemented(kernel: str, d: dtype) -> NotImplementedError:
    from ember.core import dtypes as D

    return NotImplementedError(f"\"{kernel}\" not implemented for '{D.SCALAR_TYPE_NAMES[d]}'")


def complex32_as_complex64(array: np.ndarray) -> np.ndarray:
    """The values of a complex32 array as a complex64 array (a copy)."""
    out = np.empty(array.shape, np.complex64)
    out.real = array["real"]
    out.imag = array["imag"]
    return out


def copy_special(dst: np.ndarray, src: np.ndarray, dst_dtype: dtype, src_dtype: dtype) -> None:
    """``dst[...] = src`` converting between dtypes, where one of them is in ``CONVERTED``.

    ``src_dtype`` is the dtype of the tensor the values come from; ``src`` may hold them wider (a
    list's numbers read as complex128 for a complex32 tensor)."""
    if dst_dtype is not src_dtype:
        for d in (src_dtype, dst_dtype):
            if d in STORAGE_ONLY:
                raise _not_implemented("copy_kernel", d)
    if dst.dtype == src.dtype:
        np.copyto(dst, src)
        return
    if src.dtype.names:  # complex32
        src = complex32_as_complex64(src)
        if dst_dtype.category != COMPLEX:
            src = src.real  # PyTorch drops the imaginary part, as for any complex source
        np.copyto(dst, src, casting="unsafe")
        return
    if dst_dtype in FLOAT8:
        _to_float8(dst, src.real if src.dtype.kind == "c" else src, dst_dtype)
        return
    if dst_dtype is not complex32:  # from a float8 type: NumPy converts exactly
        np.copyto(dst, src, casting="unsafe")
        return
    values = src.astype(np.complex64) if src.dtype.kind == "c" else src
    np.copyto(dst["real"], values.real, casting="unsafe")
    np.copyto(dst["imag"], values.imag if src.dtype.kind == "c" else 0, casting="unsafe")


def _to_float8(dst: np.ndarray, src: np.ndarray, d: dtype) -> None:
    """Round ``src`` into the float8 array ``dst`` as PyTorch does: e4m3fn saturates at its largest
    finite value (infinities included), e8m0fnu takes the magnitude (zero becomes its smallest value,
    2**-127), and e5m2 writes NaN as 0x7F."""
    x = np.asarray(src, np.float64)  # exact for float sources; float8 is far coarser than any rounding here
    if d is float8_e4m3fn:
        x = np.where(np.isnan(x), x, np.clip(x, -448.0, 448.0))
    elif d is float8_e8m0fnu:
        x = np.abs(x)
    np.copyto(dst, x, casting="unsafe")
    bits = dst.view(np.uint8)
    if d is float8_e8m0fnu:
        bits[...] = np.where(x == 0, 0, bits)
    elif d is float8_e5m2:
        bits[...] = np.where(np.isnan(x), 0x7F, bits)


def fill_special(dst: np.ndarray, d: dtype, value) -> None:
    """``dst[...] = value`` for a dtype of ``SPECIAL_STORAGE``."""
    if d is not complex32:
        raise _not_implemented("fill_cpu", d)
    value = complex(value)
    dst["real"] = value.real
    dst["imag"] = value.imag


def refused_dtypes(op_key: str) -> frozenset:
    """The dtypes of this module whose CPU kernel PyTorch lacks for the pointwise op ``op_key``
    (``"add.Tensor"``): calls with them raise, as PyTorch's do (``ember.core.dtypes_refusals``)."""
    from ember.core.dtypes_refusals import COMPLEX32_REFUSED, FLOAT8_REFUSED, WIDE_UNSIGNED_REFUSED

    refused: set = set()
    if op_key in WIDE_UNSIGNED_REFUSED:
        refused.update(WIDE_UNSIGNED)
    if op_key in FLOAT8_REFUSED:
        refused.update(FLOAT8)
    if op_key in COMPLEX32_REFUSED:
        refused.add(complex32)
    return frozenset(refused)
