"""``ember.types``: the type aliases PyTorch's signatures use (``torch.types``).

``Number``, ``Device``, ``FileLike`` and the ``Storage`` protocol, and the private aliases that
annotations in PyTorch code import from here (``_int``, ``_size``, ``IntLikeType``, ...).
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Sequence
from typing import IO, Any, TypeAlias

from ember.core.devices import device as _device
from ember.core.dtypes import dtype as _dtype
from ember.core.symbolic import SymBool, SymFloat, SymInt
from ember.core.tensor import Size, Tensor

__all__ = ["Device", "FileLike", "Number", "Storage"]

_bool = builtins.bool
_complex = builtins.complex
_float = builtins.float
_int = builtins.int
_str = builtins.str

_TensorOrTensors: TypeAlias = Tensor | Sequence[Tensor]
_TensorOrOptionalTensors: TypeAlias = Tensor | Sequence[Tensor | None]
_size: TypeAlias = Size | list[int] | tuple[int, ...]
_symsize: TypeAlias = Size | Sequence[int | SymInt]
_dispatchkey: TypeAlias = str

IntLikeType: TypeAlias = int | SymInt
FloatLikeType: TypeAlias = float | SymFloat
BoolLikeType: TypeAlias = bool | SymBool
py_sym_types = (SymInt, SymFloat, SymBool)
PySymType: TypeAlias = SymInt | SymFloat | SymBool

Number: TypeAlias = int | float | bool
_Number = (int, float, bool)  # for isinstance checks
FileLike: TypeAlias = str | os.PathLike[str] | IO[bytes]
# Anything that names a device; None is the default device.
Device: TypeAlias = _device | str | int | None


class Storage:
    """The protocol of storages, for annotations (``ember.UntypedStorage`` implements it)."""

    device: _device
    dtype: _dtype

    def element_size(self) -> int:
        raise NotImplementedError

    def nbytes(self) -> int:
        raise NotImplementedError

    def data_ptr(self) -> int:
        raise NotImplementedError

    def cpu(self) -> Any:
        raise NotImplementedError

    def is_shared(self) -> bool:
        raise NotImplementedError

    def share_memory_(self) -> Any:
        raise NotImplementedError
