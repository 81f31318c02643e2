"""Random factories: ``rand``, ``randn``, ``randint``, ``randperm`` and the ``*_like`` forms, each
with a ``generator=`` and an ``out=`` form.

A factory allocates (contiguously, or like its input for ``*_like``) and fills with the in-place
sampler of ``random_fill``, so it uses the same counters: ``rand(n)`` after ``manual_seed(s)`` equals
``empty(n).uniform_()`` after the same seed. ``randperm(n)`` draws ``n`` 64-bit keys (``n`` counters)
and returns their stable ascending order, a uniformly random permutation.

Each op has a pure meta function beside its CPU kernel: the same allocation and the sampler's
checks (``random_fill``'s ``*_meta``), with no draws and no counters reserved.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core import random_bits as B
from ember.core.api import public
from ember.core.aten.factories.factories import _device, _dtype, _finish, _size_args
from ember.core.aten.random.random_fill import (
    fill_integers,
    fill_integers_meta,
    normal_,
    normal_meta,
    uniform_,
    uniform_meta,
)
from ember.core.dispatch import define
from ember.core.generator import reserve
from ember.core.layout import contiguous_strides, dense_strides_like
from ember.core.pointwise import resize_out
from ember.core.symbolic import INT_LIKE, SymInt
from ember.core.tensor import Tensor
from ember.core.tensor import empty as allocate

FACTORY = ("random", "factory", "core")
OUT = ("random", "out")
_OPTIONS = "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None"
_LONG_OPTIONS = "ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None"
_LIKE = f"{_OPTIONS}, MemoryFormat? memory_format=None"


def _sizes(size) -> tuple:
    size = tuple(size)
    for s in size:
        if isinstance(s, bool) or not isinstance(s, int | np.integer | SymInt):
            raise TypeError(f"argument 'size' must be tuple of ints, but found element of type {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    # Only NumPy integers are converted: a Python int (or, later, a symbolic size) stays as given.
    return tuple(s if isinstance(s, INT_LIKE) else int(s) for s in size)


def _register(ops, meta, cpu) -> None:
    for op in ops:
        op.register_meta(meta)
        op.register_kernel("cpu")(cpu)


def _pair(name: str, schema_args: str, returns: str = "Tensor", tags=FACTORY):
    """The plain overload and its ``.generator`` twin (PyTorch keeps both)."""
    plain = define(f"{name}({schema_args}) -> {returns}", tags)
    head, _, rest = schema_args.partition("*, ")
    with_generator = define(f"{name}.generator({head}*, Generator? generator, {rest}) -> {returns}", tags)
    return plain, with_generator


def _out_pair(name: str, schema_args: str):
    plain = define(f"{name}.out({schema_args}, *, Tensor(a!) out) -> Tensor(a!)", OUT)
    with_generator = define(
        f"{name}.generator_out({schema_args}, *, Generator? generator, Tensor(a!) out) -> Tensor(a!)", OUT
    )
    return plain, with_generator


def _resized(out: Tensor, size: tuple) -> Tensor:
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    if out._shape != size:
        resize_out(out, size)
    return out


# -- rand, randn ----------------------------------------------------------------------------------------

rand_ops = _pair("rand", f"SymInt[] size, *, {_OPTIONS}")
randn_ops = _pair("randn", f"SymInt[] size, *, {_OPTIONS}")
rand_outs = _out_pair("rand", "SymInt[] size")
randn_outs = _out_pair("randn", "SymInt[] size")


def _allocated(size, dtype, device) -> Tensor:
    return allocate(_sizes(size), _dtype(dtype), _device(device))


def _rand_meta(size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return uniform_meta(_allocated(size, dtype, device), 0.0, 1.0)


def _rand(size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return uniform_(_allocated(size, dtype, device), 0.0, 1.0, generator=generator)


def _randn_meta(size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return normal_meta(_allocated(size, dtype, device), 0.0, 1.0)


def _randn(size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return normal_(_allocated(size, dtype, device), 0.0, 1.0, generator=generator)


def _rand_out_meta(size, *, generator=None, out) -> Tensor:
    return uniform_meta(_resized(out, _sizes(size)), 0.0, 1.0)


def _rand_out(size, *, generator=None, out) -> Tensor:
    return uniform_(_resized(out, _sizes(size)), 0.0, 1.0, generator=generator)


def _randn_out_meta(size, *, generator=None, out) -> Tensor:
    return normal_meta(_resized(out, _sizes(size)), 0.0, 1.0)


def _randn_out(size, *, generator=None, out) -> Tensor:
    return normal_(_resized(out, _sizes(size)), 0.0, 1.0, generator=generator)


_register(rand_ops, _rand_meta, _rand)
_register(randn_ops, _randn_meta, _randn)
_register(rand_outs, _rand_out_meta, _rand_out)
_register(randn_outs, _randn_out_meta, _randn_out)


def _fresh(t: Tensor) -> Tensor:
    t._storage.version = 0
    return t


def _required_size(args: tuple, size, name: str) -> tuple:
    """The size given as ``*args`` (ints or one sequence) or as ``size=``, exactly one of them."""
    if size is not None:
        if args:
            raise TypeError(f"{name}() got multiple values for argument 'size'")
        return _size_args((size,))
    if not args:
        raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
    return _size_args(args)


def _size_sampler(name: str, ops, outs, doc: str):
    """``ember.rand``/``ember.randn``: the same Python surface over their own ops."""

    def sampler(
        *args,
        size=None,
        generator=None,
        out=None,
        dtype=None,
        layout=None,
        device=None,
        requires_grad=False,
        pin_memory=False,
    ):
        size = _required_size(args, size, name)
        if out is not None:
            return outs[1](size, generator=generator, out=out)
        return _finish(_fresh(ops[1](size, generator=generator, dtype=dtype, device=device)), requires_grad, None)

    sampler.__name__ = sampler.__qualname__ = name
    sampler.__doc__ = doc
    return public(name)(sampler)


rand = _size_sampler(
    "rand", rand_ops, rand_outs, "``ember.rand``: uniform numbers in [0, 1) from the generator's Philox stream."
)
randn = _size_sampler(
    "randn", randn_ops, randn_outs, "``ember.randn``: standard normal numbers from the generator's Philox stream."
)


def _like(self: Tensor, dtype, device, memory_format) -> Tensor:
    dtype = self.dtype if dtype is None else D.to_dtype(dtype)
    device = self.device if device is None else _device(device)
    if memory_format in (None, "preserve_format"):
        strides = dense_strides_like(self._shape, self._stride)
    else:
        strides = contiguous_strides(self._shape)
    return allocate(self._shape, dtype, device, strides)


rand_like_ops = _pair("rand_like", f"Tensor self, *, {_LIKE}")
randn_like_ops = _pair("randn_like", f"Tensor self, *, {_LIKE}")


def _rand_like_meta(self, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return uniform_meta(_like(self, dtype, device, memory_format), 0.0, 1.0)


def _rand_like(self, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return uniform_(_like(self, dtype, device, memory_format), 0.0, 1.0, generator=generator)


def _randn_like_meta(
    self, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    return normal_meta(_like(self, dtype, device, memory_format), 0.0, 1.0)


def _randn_like(self, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return normal_(_like(self, dtype, device, memory_format), 0.0, 1.0, generator=generator)


_register(rand_like_ops, _rand_like_meta, _rand_like)
_register(randn_like_ops, _randn_like_meta, _randn_like)


@public("rand_like")
def rand_like(input, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    out = rand_like_ops[1](input, generator=generator, dtype=dtype, device=device, memory_format=memory_format)
    return _finish(_fresh(out), requires_grad, None)


@public("randn_like")
def randn_like(input, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    out = randn_like_ops[1](input, generator=generator, dtype=dtype, device=device, memory_format=memory_format)
    return _finish(_fresh(out), requires_grad, None)


# -- randint ----------------------------------------------------------------------------------------------

randint_ops = _pair("randint", f"SymInt high, SymInt[] size, *, {_LONG_OPTIONS}")
randint_low_ops = (
    define(f"randint.low(SymInt low, SymInt high, SymInt[] size, *, {_LONG_OPTIONS}) -> Tensor", FACTORY),
    define(
        f"randint.low_generator(SymInt low, SymInt high, SymInt[] size, *, Generator? generator, {_LONG_OPTIONS}) "
        "-> Tensor",
        FACTORY,
    ),
)
randint_outs = _out_pair("randint", "SymInt high, SymInt[] size")
randint_low_outs = (
    define("randint.low_out(SymInt low, SymInt high, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)", OUT),
    define(
        "randint.low_generator_out(SymInt low, SymInt high, SymInt[] size, *, Generator? generator, Tensor(a!) out) "
        "-> Tensor(a!)",
        OUT,
    ),
)


def _integers(size, dtype, device) -> Tensor:
    return allocate(_sizes(size), D.int64 if dtype is None else D.to_dtype(dtype), _device(device))


def _randint_low_meta(low, high, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    return fill_integers_meta(_integers(size, dtype, device), int(low), int(high))


def _randint_low(low, high, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    return fill_integers(_integers(size, dtype, device), int(low), int(high), generator)


def _randint_meta(high, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    return _randint_low_meta(0, high, size, dtype=dtype, device=device)


def _randint(high, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    return _randint_low(0, high, size, generator=generator, dtype=dtype, device=device)


def _randint_low_out_meta(low, high, size, *, generator=None, out):
    return fill_integers_meta(_resized(out, _sizes(size)), int(low), int(high))


def _randint_low_out(low, high, size, *, generator=None, out):
    return fill_integers(_resized(out, _sizes(size)), int(low), int(high), generator)


def _randint_out_meta(high, size, *, generator=None, out):
    return _randint_low_out_meta(0, high, size, out=out)


def _randint_out(high, size, *, generator=None, out):
    return _randint_low_out(0, high, size, generator=generator, out=out)


_register(randint_ops, _randint_meta, _randint)
_register(randint_low_ops, _randint_low_meta, _randint_low)
_register(randint_outs, _randint_out_meta, _randint_out)
_register(randint_low_outs, _randint_low_out_meta, _randint_low_out)


def _bound(value, name: str) -> int:
    if isinstance(value, Tensor):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(
            f"randint(): argument '{name}' must be int, not {type(value).__name__} (expected (int high, tuple of ints "
            "size) or (int low, int high, tuple of ints size))"
        )
    value = int(value)
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError("Overflow when unpacking long long")
    return value


def _randint_args(args: tuple, low, high, size) -> tuple:
    if len(args) == 3:
        low, high, size = args
    elif len(args) == 2:
        if size is None:
            high, size = args
        else:
            low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif len(args) > 3:
        raise TypeError(f"randint() takes at most 3 positional arguments ({len(args)} given)")
    if high is None or size is None:
        raise TypeError("randint() missing required arguments: expected (high, size) or (low, high, size)")
    if not isinstance(size, list | tuple):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    return (0 if low is None else _bound(low, "low")), _bound(high, "high"), _sizes(size)


@public("randint")
def randint(
    *args,
    low=None,
    high=None,
    size=None,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
):
    """``ember.randint([low=0,] high, size)``: integers uniform in ``[low, high)``."""
    low, high, size = _randint_args(args, low, high, size)
    if out is not None:
        return randint_low_outs[1](low, high, size, generator=generator, out=out)
    t = randint_low_ops[1](low, high, size, generator=generator, dtype=dtype, device=device)
    return _finish(_fresh(t), requires_grad, None)


randint_like_ops = (
    define(f"randint_like(Tensor self, SymInt high, *, {_LIKE}) -> Tensor", FACTORY),
    define(f"randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, {_LIKE}) -> Tensor", FACTORY),
    define(f"randint_like.generator(Tensor self, SymInt high, *, Generator? generator, {_LIKE}) -> Tensor", FACTORY),
    define(
        f"randint_like.low_generator_dtype(Tensor self, SymInt low, SymInt high, *, Generator? generator, {_LIKE}) "
        "-> Tensor",
        FACTORY,
    ),
)


def _randint_like_low_meta(
    self, low, high, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    return fill_integers_meta(_like(self, dtype, device, memory_format), int(low), int(high))


def _randint_like_low(
    self, low, high, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    return fill_integers(_like(self, dtype, device, memory_format), int(low), int(high), generator)


def _randint_like_meta(
    self, high, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    return _randint_like_low_meta(self, 0, high, dtype=dtype, device=device, memory_format=memory_format)


def _randint_like(
    self, high, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    return _randint_like_low(
        self, 0, high, generator=generator, dtype=dtype, device=device, memory_format=memory_format
    )


_register(randint_like_ops[0::2], _randint_like_meta, _randint_like)
_register(randint_like_ops[1::2], _randint_like_low_meta, _randint_like_low)


@public("randint_like")
def randint_like(
    input,
    *args,
    low=None,
    high=None,
    generator=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    memory_format=None,
):
    """``ember.randint_like(input, [low=0,] high)``: integers in ``[low, high)`` shaped like ``input``."""
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif len(args) > 2:
        raise TypeError("randint_like() takes at most 3 positional arguments")
    if high is None:
        raise TypeError("randint_like() missing required argument 'high'")
    low = 0 if low is None else _bound(low, "low")
    t = randint_like_ops[3](
        input, low, _bound(high, "high"), generator=generator, dtype=dtype, device=device, memory_format=memory_format
    )
    return _finish(_fresh(t), requires_grad, None)


# -- randperm ---------------------------------------------------------------------------------------------

randperm_ops = _pair("randperm", f"SymInt n, *, {_LONG_OPTIONS}")
randperm_outs = _out_pair("randperm", "SymInt n")
_PERM_LIMITS = {D.float16: 2049, D.bfloat16: 257, D.float32: (1 << 24) + 1, D.float64: (1 << 53) + 1}


def _check_n(n: int, dtype: D.dtype) -> None:
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    if dtype is D.bool_ or dtype.category == D.COMPLEX:
        raise NotImplementedError(f"\"randperm\" not implemented for '{D.SCALAR_TYPE_NAMES[dtype]}'")
    limit = _PERM_LIMITS.get(dtype)
    if limit is not None and n > limit:
        raise RuntimeError(f"n cannot be greater than {limit} for {D.SCALAR_TYPE_NAMES[dtype]} type.")
    if dtype.category == D.INTEGRAL and n - 1 > np.iinfo(dtype.np).max:
        raise RuntimeError(f"value cannot be converted to type {dtype.name}_t without overflow")


def _permute_into(out: Tensor, n: int, generator) -> Tensor:
    seed, offset = reserve(generator, n)
    order = np.argsort(B.keys64(seed, offset, n), kind="stable")
    np.copyto(out._array, order.astype(out.dtype.np))
    out._storage.version += 1
    return out


def _randperm_meta(n, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = D.int64 if dtype is None else D.to_dtype(dtype)
    _check_n(n, dtype)
    return allocate((n,), dtype, _device(device))


def _randperm(n, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    n = int(n)
    out = _randperm_meta(n, dtype=dtype, device=device)
    return _permute_into(out, n, generator)


def _randperm_out_meta(n, *, generator=None, out):
    _check_n(n, out.dtype)
    return _resized(out, (n,))


def _randperm_out(n, *, generator=None, out):
    n = int(n)
    return _permute_into(_randperm_out_meta(n, out=out), n, generator)


_register(randperm_ops, _randperm_meta, _randperm)
_register(randperm_outs, _randperm_out_meta, _randperm_out)


@public("randperm")
def randperm(
    n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
):
    """``ember.randperm(n)``: a random permutation of ``0 .. n-1``."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer | SymInt):
        raise TypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
    if isinstance(n, np.integer):
        n = int(n)
    if out is not None:
        return randperm_outs[1](n, generator=generator, out=out)
    t = randperm_ops[1](n, generator=generator, dtype=dtype, device=device)
    return _finish(_fresh(t), requires_grad, None)


# Importing it here offers ``ember.random`` (PyTorch's ``torch.random``) with the core.
import ember.random  # noqa: E402, F401
