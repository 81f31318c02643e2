"""Ember's dtypes: one object per element type, each knowing its NumPy storage type.

``bfloat16`` is stored through ml_dtypes. The objects are singletons compared by identity;
``ember.float32 is ember.float`` holds, as in PyTorch.

``ALL`` holds the dtypes with full support. ``EXTRA`` holds those PyTorch supports only in part
(see ``ember.core.dtypes_extra``): the wide unsigned integers, float8/float4, complex32 and the
storage-only bit types. They are kept apart because tests and tables iterate over ``ALL``.
"""

from __future__ import annotations

import builtins

import ml_dtypes
import numpy as np

# Categories in promotion order: bool < integral < floating < complex.
BOOL, INTEGRAL, FLOATING, COMPLEX = 0, 1, 2, 3


class dtype:
    __slots__ = ("category", "is_signed", "itemsize", "name", "np")

    def __init__(self, name: str, np_type, category: int, is_signed: bool) -> None:
        self.name = name
        self.np = np.dtype(np_type)
        self.itemsize = self.np.itemsize
        self.category = category
        self.is_signed = is_signed

    @property
    def is_floating_point(self) -> bool:
        return self.category == FLOATING

    @property
    def is_complex(self) -> bool:
        return self.category == COMPLEX

    def to_real(self) -> dtype:
        return _TO_REAL.get(self, self)

    def to_complex(self) -> dtype:
        return {float32: complex64, float64: complex128, float16: complex64, bfloat16: complex64}.get(self, self)

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


def _by_name(name: str) -> dtype:  # pickles of dtypes name this function: keep its name
    return BY_NAME[name]


bool_ = dtype("bool", np.bool_, BOOL, False)
uint8 = dtype("uint8", np.uint8, INTEGRAL, False)
int8 = dtype("int8", np.int8, INTEGRAL, True)
int16 = dtype("int16", np.int16, INTEGRAL, True)
int32 = dtype("int32", np.int32, INTEGRAL, True)
int64 = dtype("int64", np.int64, INTEGRAL, True)
float16 = dtype("float16", np.float16, FLOATING, True)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, FLOATING, True)
float32 = dtype("float32", np.float32, FLOATING, True)
float64 = dtype("float64", np.float64, FLOATING, True)
complex64 = dtype("complex64", np.complex64, COMPLEX, True)
complex128 = dtype("complex128", np.complex128, COMPLEX, True)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, complex128)

from ember.core.dtypes_extra import (  # noqa: E402  (they are made of `dtype`, defined above)
    EXTRA,
    EXTRA_ALIASES,
    EXTRA_SCALAR_TYPE_NAMES,
    NUMPY_EXTRA,
    STORAGE_ONLY,
    complex32,
    uint16,
    uint32,
    uint64,
)

BY_NAME = {d.name: d for d in ALL + EXTRA}
STORAGE_ONLY = frozenset(STORAGE_ONLY)  # for membership tests in the kernels
_TO_REAL = {complex64: float32, complex128: float64, complex32: float16}
# PyTorch's ScalarType names, which its error messages use.
SCALAR_TYPE_NAMES = {
    bool_: "Bool",
    uint8: "Byte",
    int8: "Char",
    int16: "Short",
    int32: "Int",
    int64: "Long",
    float16: "Half",
    bfloat16: "BFloat16",
    float32: "Float",
    float64: "Double",
    complex64: "ComplexFloat",
    complex128: "ComplexDouble",
    **EXTRA_SCALAR_TYPE_NAMES,
}


def legacy_type_name(d: dtype, device_type: str = "cpu", prefix: str = "torch") -> str:
    """The legacy tensor type name of ``Tensor.type()``: 'torch.FloatTensor', 'torch.cuda.LongTensor'."""
    name = f"{SCALAR_TYPE_NAMES[d]}Tensor"
    return f"{prefix}.{name}" if device_type == "cpu" else f"{prefix}.{device_type}.{name}"


# PyTorch's other spellings of the same objects.
ALIASES = {
    "bool": bool_,
    "half": float16,
    "float": float32,
    "double": float64,
    "short": int16,
    "int": int32,
    "long": int64,
    "cfloat": complex64,
    "cdouble": complex128,
    **EXTRA_ALIASES,
}
# The C++ element types PyTorch's kernels name in some messages.
CPP_TYPE_NAMES = {
    float32: "float",
    float64: "double",
    float16: "c10::Half",
    bfloat16: "c10::BFloat16",
    int8: "signed char",
    int16: "short int",
    int32: "int",
    int64: "long int",
    uint8: "unsigned char",
    bool_: "bool",
    complex64: "c10::complex<float>",
    complex128: "c10::complex<double>",
    uint16: "unsigned short",
    uint32: "unsigned int",
    uint64: "unsigned long",
}
_FROM_NP = {d.np: d for d in ALL + NUMPY_EXTRA}


def from_numpy_dtype(np_dtype) -> dtype:
    try:
        return _FROM_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}; the supported types are: "
            + ", ".join(d.np.name for d in ALL)
        ) from None


def to_dtype(value) -> dtype:
    """An ember dtype from a dtype, a NumPy dtype or a Python type (``float``, ``int``, ``bool``)."""
    if isinstance(value, dtype):
        return value
    if value is builtins.float:
        return float64
    if value is builtins.int:
        return int64
    if value is builtins.bool:
        return bool_
    if value is builtins.complex:
        return complex128
    try:
        return from_numpy_dtype(value)
    except TypeError:
        raise TypeError(f"{value!r} is not a dtype") from None
