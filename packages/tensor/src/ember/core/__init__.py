"""Ember's tensor core: dtypes and promotion, devices, ``Tensor``, storage and views, the op
registry and dispatcher, and every op family. ``ember`` (the meta-package) re-exports the public
names; ``ember.ops.aten.<name>.<overload>`` reaches each op."""

from ember.core import malloc_tuning as _malloc_tuning  # noqa: F401, I001  (first: before arrays are made)
from ember.core import aten as _aten  # noqa: F401  (registers every op)
from ember.core import printing as _printing  # noqa: F401  (set_printoptions, Tensor.__format__)
from ember.core import serialization as _serialization  # noqa: F401  (ember.save, ember.load)
from ember.core import storages as _storages  # noqa: F401  (ember.UntypedStorage, Tensor.storage())
from ember.core import subclassing as _subclassing  # __torch_dispatch__, __torch_function__, _make_subclass
from ember.core import surface as _surface  # aliases, predicates, housekeeping methods
from ember.core import surface_attributes as _surface_attributes  # noqa: F401  (output_nr, name, pin_memory, ...)
from ember.core.api import attach_methods as _attach_methods
from ember.core.api import functions
from ember.core.creation import as_tensor, from_dlpack, from_numpy, tensor
from ember.core.devices import device, get_default_device, register_backend, set_default_device
from ember.core.dispatch import DispatchMode, OpOverload, define, ops
from ember.core.dtype_info import finfo, iinfo
from ember.core.dtypes import dtype
from ember.core.legacy_types import LEGACY_TYPES as _LEGACY_TYPES
from ember.core.legacy_types import set_default_tensor_type, tensortype
from ember.core.promotion import can_cast, get_default_dtype, promote_types, result_type, set_default_dtype
from ember.core.symbolic import (
    SymBool,
    SymFloat,
    SymInt,
    _assert,
    _check,
    _check_index,
    _check_is_size,
    _check_type,
    _check_value,
    _check_with,
    sym_float,
    sym_int,
    sym_ite,
    sym_max,
    sym_min,
    sym_not,
)
from ember.core.tensor import Size, Tensor
from ember.core.interop_threads import get_num_interop_threads, set_num_interop_threads
from ember.core.threads import get_num_threads, set_num_threads

_attach_methods(Tensor)
_subclassing.install()
_surface.attach_properties(Tensor)
globals().update(_LEGACY_TYPES)

__all__ = [
    "DispatchMode",
    "OpOverload",
    "Size",
    "SymBool",
    "SymFloat",
    "SymInt",
    "Tensor",
    "_assert",
    "_check",
    "_check_index",
    "_check_is_size",
    "_check_type",
    "_check_value",
    "_check_with",
    "as_tensor",
    "can_cast",
    "define",
    "device",
    "dtype",
    "finfo",
    "from_dlpack",
    "from_numpy",
    "functions",
    "get_default_device",
    "get_default_dtype",
    "get_num_interop_threads",
    "get_num_threads",
    "iinfo",
    "ops",
    "promote_types",
    "register_backend",
    "result_type",
    "set_default_device",
    "set_default_dtype",
    "set_default_tensor_type",
    "set_num_interop_threads",
    "set_num_threads",
    "sym_float",
    "sym_int",
    "sym_ite",
    "sym_max",
    "sym_min",
    "sym_not",
    "tensor",
    "tensortype",
]
__all__ += list(_LEGACY_TYPES)  # FloatTensor, LongTensor, ...
