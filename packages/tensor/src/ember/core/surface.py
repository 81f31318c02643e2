"""PyTorch's names that are no new computation: the top-level forms of in-place methods
(``ember.abs_(x)`` is ``x.abs_()``), the predicates (``is_tensor``, ``is_nonzero``, ...), and the
Tensor methods about a tensor itself rather than its values (``H``, ``get_device``, ``sum_to_size``,
``fill_diagonal_``, ``apply_``, ``new``, ...).

Ember's tensors hold real numbers or complex FFT results without a conjugation bit: ``conj``,
``real`` and ``conj_physical`` answer for real tensors as PyTorch does (the tensor itself) and refuse
complex ones with a message rather than give a wrong answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ember.core.api import method, public
from ember.core.memory_formats import memory_format
from ember.core.promotion import get_default_dtype
from ember.core.storage import Storage
from ember.core.tensor import Tensor

# -- top-level forms of in-place methods -------------------------------------------------------------------

_INPLACE_FUNCTIONS = [
    "abs_",
    "acos_",
    "acosh_",
    "addmv_",
    "arccos_",
    "arccosh_",
    "arcsin_",
    "arcsinh_",
    "arctan_",
    "arctanh_",
    "asin_",
    "asinh_",
    "atan_",
    "atanh_",
    "ceil_",
    "clamp_",
    "clamp_max_",
    "clamp_min_",
    "clip_",
    "cos_",
    "cosh_",
    "deg2rad_",
    "detach_",
    "erf_",
    "exp2_",
    "exp_",
    "expm1_",
    "fill_",
    "fix_",
    "floor_",
    "frac_",
    "gcd_",
    "lcm_",
    "ldexp_",
    "log10_",
    "log1p_",
    "log2_",
    "log_",
    "nan_to_num_",
    "neg_",
    "negative_",
    "rad2deg_",
    "reciprocal_",
    "relu_",
    "round_",
    "rsqrt_",
    "sigmoid_",
    "sin_",
    "sinh_",
    "sqrt_",
    "square_",
    "tan_",
    "tanh_",
    "trunc_",
    "zero_",
]


def _inplace_function(name: str) -> Callable:
    def function(input: Tensor, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``ember.{name}(input, ...)`` is ``input.{name}(...)``."
    return function


for _name in _INPLACE_FUNCTIONS:
    public(_name)(_inplace_function(_name))


@public("fill")
def fill(input: Tensor, value) -> Tensor:
    return input.clone().fill_(value)


# -- predicates --------------------------------------------------------------------------------------------


@public("is_tensor")
def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


@public("is_storage")
def is_storage(obj) -> bool:
    return isinstance(obj, Storage)


@public("is_complex")
def is_complex(input: Tensor) -> bool:
    return input.dtype.is_complex


@public("is_floating_point")
def is_floating_point(input: Tensor) -> bool:
    return input.dtype.is_floating_point


@public("is_signed")
@method("is_signed")
def is_signed(input: Tensor) -> bool:
    return input.dtype.is_signed


@public("is_nonzero")
@method("is_nonzero")
def is_nonzero(input: Tensor) -> bool:
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


@public("is_same_size")
@method("is_same_size")
def is_same_size(input: Tensor, other: Tensor) -> bool:
    return tuple(input.shape) == tuple(other.shape)


@public("numel")
def numel(input: Tensor) -> int:
    return input.numel()


@public("typename")
def typename(obj) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__qualname__
    return f"{module}.{qualname}" if module and module != "builtins" else qualname


@public("scalar_tensor")
def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad: bool = False) -> Tensor:
    from ember.core.creation import tensor  # creation imports the op families

    return tensor(s, dtype=dtype or get_default_dtype(), device=device, requires_grad=requires_grad)


# -- real tensors: conjugates and parts --------------------------------------------------------------------


def _real_only(name: str, input: Tensor) -> Tensor:
    if input.dtype.is_complex:
        raise NotImplementedError(f"{name}() of a complex tensor: Ember's complex tensors have no conjugation")
    return input


@public("conj")
@method("conj")
def conj(input: Tensor) -> Tensor:
    return _real_only("conj", input)


@public("conj_physical")
@method("conj_physical")
def conj_physical(input: Tensor) -> Tensor:
    return _real_only("conj_physical", input)


@method("conj_physical_")
def _conj_physical_(self: Tensor) -> Tensor:
    return _real_only("conj_physical_", self)


@public("real")
def real(input: Tensor) -> Tensor:
    return _real_only("real", input)


@public("imag")
def imag(input: Tensor) -> Tensor:
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    raise NotImplementedError("imag() of a complex tensor is not available in Ember")


def _real_property(self: Tensor) -> Tensor:
    return real(self)


def _imag_property(self: Tensor) -> Tensor:
    return imag(self)


@public("adjoint")
@method("adjoint")
def adjoint(input: Tensor) -> Tensor:
    return _mH(input)


def _mH(self: Tensor) -> Tensor:
    return _real_only("mH", self).mT


def _H(self: Tensor) -> Tensor:
    if self.ndim not in (0, 2):
        raise RuntimeError(
            f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor."
            + (" For batches of matrices, consider using tensor.mH" if self.ndim > 2 else "")
        )
    return _real_only("H", self).t() if self.ndim == 2 else self


# -- layouts and memory formats ----------------------------------------------------------------------------


class layout:
    """A tensor layout (``ember.strided``): Ember's tensors are all strided (dense)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return self.name  # pickles as the module-level object


strided = public("strided")(layout("strided"))
public("layout")(layout)
public("memory_format")(memory_format)


def _layout_property(self: Tensor) -> layout:
    return strided


# -- housekeeping methods ----------------------------------------------------------------------------------


@method("swapdims_")
def swapdims_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    return self.transpose_(dim0, dim1)


@method("dim_order")
def dim_order(self: Tensor, *, ambiguity_check: bool = False) -> tuple[int, ...]:
    """The dims from outermost to innermost in memory (PyTorch's order: a contiguous tensor's is
    ``0..n-1``; otherwise larger strides first, zero strides and ties left in place)."""
    if ambiguity_check:
        raise NotImplementedError("dim_order(ambiguity_check=True) is not available in Ember")
    ndim, shape, stride = self.ndim, tuple(self.shape), self.stride()
    if ndim <= 1 or self.is_contiguous():
        return tuple(range(ndim))

    def should_swap(a: int, b: int) -> int:
        if stride[a] == 0 or stride[b] == 0:
            return 0
        if stride[a] != stride[b]:
            return -1 if stride[a] < stride[b] else 1
        return 1 if shape[a] > shape[b] else 0

    # Insertion sort from the innermost dim outwards, as PyTorch's elementwise output layout does.
    perm = list(reversed(range(ndim)))
    for i in range(1, ndim):
        dim1 = i
        for dim0 in reversed(range(i)):
            comparison = should_swap(perm[dim0], perm[dim1])
            if comparison > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif comparison < 0:
                break
    return tuple(reversed(perm))


@method("is_set_to")
def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors view the same storage with the same offset, sizes and strides."""
    return (
        self.untyped_storage() is tensor.untyped_storage()
        and self.storage_offset() == tensor.storage_offset()
        and tuple(self.shape) == tuple(tensor.shape)
        and self.stride() == tensor.stride()
    )


@public("is_inference")
@method("is_inference")
def is_inference(input: Tensor) -> bool:
    """Whether the tensor was made under ``inference_mode`` (the autograd package marks it)."""
    try:
        return bool(input._inference)
    except (AttributeError, RuntimeError):  # no autograd package: no inference mode either
        return False


@public("is_distributed")
@method("is_distributed")
def is_distributed(input: Tensor) -> bool:
    return False  # PyTorch's legacy flag; a DTensor is a subclass with its own answer


@method("cuda")
def cuda(self: Tensor, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
    target = "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device)
    return self.to(target, non_blocking=non_blocking)


@method("hardshrink")
def hardshrink(self: Tensor, lambd: float = 0.5) -> Tensor:
    return _where(self.abs() > lambd, self, 0.0)


@method("prelu")
def prelu(self: Tensor, weight: Tensor) -> Tensor:
    if weight.numel() > 1 and self.ndim >= 2:
        shape = [1] * self.ndim
        shape[1] = weight.numel()
        weight = weight.reshape(shape)
    return _where(self > 0, self, weight * self)


def _where(condition: Tensor, a, b) -> Tensor:
    from ember.core.api import functions

    return functions["where"](condition, a, b)


@method("get_device")
def get_device(self: Tensor) -> int:
    if self.device.type == "cpu":
        return -1
    return self.device.index if self.device.index is not None else 0


@public("get_device")
def _get_device_function(input: Tensor) -> int:
    return get_device(input)


@method("is_pinned")
def is_pinned(self: Tensor, device=None) -> bool:
    return False  # Ember allocates no page-locked host memory


@method("is_shared")
def is_shared(self: Tensor) -> bool:
    return False  # Ember's CPU storages are private to the process (no share_memory_)


@method("sum_to_size")
def sum_to_size(self: Tensor, *size) -> Tensor:
    if len(size) == 1 and isinstance(size[0], Sequence):
        size = tuple(size[0])
    size = tuple(size)
    lead = self.ndim - len(size)
    if lead < 0 or any(s not in (1, have) for s, have in zip(size, self.shape[lead:], strict=True)):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(self.shape)}}}.")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and self.shape[lead + i] != 1]
    result = self.sum(dims, keepdim=True) if dims else self
    return result.reshape(size) if lead else result


@method("fill_diagonal_")
def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    from ember.core.creation import tensor

    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if self.ndim == 2:
        h, w = self.shape
        count = min(h, w)
        if wrap and h > w + 1:  # continue below the square, every w + 1 elements in row-major order
            positions = range(0, h * w, w + 1)
        else:
            positions = [i * (w + 1) for i in range(count)]
        index = (tensor([p // w for p in positions]), tensor([p % w for p in positions]))
    else:
        diagonal = tensor(list(range(self.shape[0])))
        index = tuple(diagonal for _ in range(self.ndim))
    value = tensor(fill_value, dtype=self.dtype)
    return self.index_put_(index, value)


def _require_cpu(name: str, self: Tensor) -> None:
    if self.device.type != "cpu":
        raise RuntimeError(f"{name} is only implemented on CPU tensors")


@method("apply_")
def apply_(self: Tensor, callable: Callable) -> Tensor:
    _require_cpu("apply_", self)
    values = self.detach().numpy()
    result = np.vectorize(callable, otypes=[values.dtype])(values) if values.size else values
    return self.copy_(_tensor_of(result, self))


def _tensor_of(array: np.ndarray, like: Tensor) -> Tensor:
    from ember.core.creation import tensor

    return tensor(array, dtype=like.dtype)


@method("map_")
def map_(self: Tensor, tensor: Tensor, callable: Callable) -> Tensor:
    _require_cpu("map_", self)
    values = self.detach().numpy()
    other = np.broadcast_to(tensor.detach().numpy(), values.shape)
    result = np.vectorize(callable, otypes=[values.dtype])(values, other) if values.size else values
    return self.copy_(_tensor_of(result, self))


@method("map2_")
def map2_(self: Tensor, x: Tensor, y: Tensor, callable: Callable) -> Tensor:
    _require_cpu("map2_", self)
    values = self.detach().numpy()
    a = np.broadcast_to(x.detach().numpy(), values.shape)
    b = np.broadcast_to(y.detach().numpy(), values.shape)
    result = np.vectorize(callable, otypes=[values.dtype])(values, a, b) if values.size else values
    return self.copy_(_tensor_of(result, self))


@method("new")
def new(self: Tensor, *args, **kwargs) -> Tensor:
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"new() got unexpected keyword arguments {sorted(kwargs)}")
    if device is not None and str(device) != str(self.device):
        raise RuntimeError(f"Expected device {self.device} but got {device}")
    if not args:
        return self.new_empty((0,))
    if all(isinstance(a, int) for a in args):
        return self.new_empty(tuple(args))
    if len(args) == 1 and isinstance(args[0], (tuple, list)) and not args[0]:
        return self.new_empty((0,))
    if len(args) == 1 and isinstance(args[0], type(self.shape)):
        return self.new_empty(tuple(args[0]))
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].view(args[0].shape)  # PyTorch's legacy new(tensor) aliases it
    if len(args) == 1:
        return self.new_tensor(args[0])
    raise TypeError("new() received an invalid combination of arguments")


def attach_properties(cls) -> None:
    """The attribute-style members (``t.H``, ``t.mH``, ``t.real``, ``t.imag``), set once on ``Tensor``."""
    cls.H = property(_H)
    cls.layout = property(_layout_property)
    cls.mH = property(_mH)
    if not hasattr(cls, "real"):
        cls.real = property(_real_property)
    if not hasattr(cls, "imag"):
        cls.imag = property(_imag_property)


# -- conversions -------------------------------------------------------------------------------------------


@public("asarray")
def asarray(obj, *, dtype=None, device=None, copy: bool | None = None, requires_grad: bool = False) -> Tensor:
    """``obj`` as a tensor, sharing its memory where it can (a tensor, a NumPy array) unless ``copy``."""
    from ember.core.creation import as_tensor, tensor

    if isinstance(obj, Tensor):
        result = obj.to(device=device if device is not None else obj.device, dtype=dtype or obj.dtype)
        if copy and result is obj:
            result = obj.clone()
        elif copy is False and result is not obj:
            raise ValueError("can't alias tensor from a different dtype or device without copying")
    elif copy:
        result = tensor(obj, dtype=dtype, device=device)
    else:
        result = as_tensor(obj, dtype=dtype, device=device)
    return result.requires_grad_(requires_grad) if requires_grad else result


@public("frombuffer")
def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-D tensor over the bytes of ``buffer`` (which it shares, as PyTorch's does)."""
    from ember.core.creation import from_numpy, tensor

    itemsize = dtype.itemsize
    length = len(memoryview(buffer).cast("B"))
    if offset < 0 or offset >= length:
        raise ValueError(f"both buffer length ({length}) and offset ({offset}) must be greater than 0")
    if count == 0 or (count < 0 and (length - offset) % itemsize):
        raise ValueError(
            f"buffer length ({length - offset} after offset) must be a multiple of element size ({itemsize})"
        )
    numpy_dtype = tensor([], dtype=dtype).numpy().dtype
    array = np.frombuffer(buffer, dtype=numpy_dtype, count=count, offset=offset)
    result = from_numpy(array)
    return result.requires_grad_(requires_grad) if requires_grad else result
