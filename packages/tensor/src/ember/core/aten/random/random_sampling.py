"""Samplers that take their parameters from tensors: ``bernoulli`` (``p`` the input or a float),
``normal`` (its four overloads: tensor or float mean and std, or a size) and ``multinomial``.

Each result is a new tensor filled by the in-place samplers of ``random_fill``, so it uses one
counter per element in row-major order. ``multinomial`` uses one counter per probability without
replacement (an exponential race: the categories with the ``k`` largest ``p / E``, ``E`` standard
exponential, are a sample without replacement drawn in order, as PyTorch's CPU kernel computes it),
and one per sample with replacement (a float64 uniform placed in the normalized cumulative sum).

Each op's meta function allocates the result and runs the checks that need no data (dtypes, shapes,
``std`` and ``p`` given as numbers); the checks of values (``std >= 0`` as a tensor, probabilities
in range) are the CPU kernels' alone, as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core import random_bits as B
from ember.core import reduction as R
from ember.core.api import method, public
from ember.core.aten.factories.factories import _device, _dtype, _finish, _size_args
from ember.core.aten.random.random_fill import (
    _compute,
    bernoulli_float,
    bernoulli_meta,
    bernoulli_tensor,
    bernoulli_tensor_meta,
    check_p,
    check_std,
    check_tensor_p,
    normal_,
    normal_meta,
    standard_normal,
    tensor_p,
)
from ember.core.dispatch import define
from ember.core.generator import reserve
from ember.core.layout import broadcast_shapes, numel
from ember.core.pointwise import check_same_device, resize_out, type_name, unsupported
from ember.core.tensor import Tensor, from_array
from ember.core.tensor import empty as allocate

TAGS = ("random", "core")
OUT = ("random", "out")
_GEN = "Generator? generator=None"


def _like(self: Tensor) -> Tensor:
    return allocate(self._shape, self.dtype, self.device)  # contiguous, as PyTorch's bernoulli allocates


# -- bernoulli --------------------------------------------------------------------------------------------

bernoulli_op = define(f"bernoulli(Tensor self, *, {_GEN}) -> Tensor", TAGS)
bernoulli_out = define(f"bernoulli.out(Tensor self, *, {_GEN}, Tensor(a!) out) -> Tensor(a!)", OUT)
bernoulli_p = define(f"bernoulli.p(Tensor self, float p, *, {_GEN}) -> Tensor", TAGS)


@bernoulli_op.register_meta
def _bernoulli_meta(self: Tensor, *, generator=None) -> Tensor:
    check_tensor_p(self, self._shape)
    return bernoulli_tensor_meta(_like(self), self)


@bernoulli_op.register_kernel("cpu")
def _bernoulli(self: Tensor, *, generator=None) -> Tensor:
    """Each element 1 with the probability that ``self`` holds there, in ``self``'s dtype."""
    tensor_p(self, self._shape)
    return bernoulli_tensor(_like(self), self, generator=generator)


@bernoulli_out.register_meta
def _bernoulli_out_meta(self: Tensor, *, generator=None, out) -> Tensor:
    return R.fit_out(out, _bernoulli_meta(self))


@bernoulli_out.register_kernel("cpu")
def _bernoulli_out(self: Tensor, *, generator=None, out) -> Tensor:
    return R.write_out(out, _bernoulli(self, generator=generator))


@bernoulli_p.register_meta
def _bernoulli_p_meta(self: Tensor, p: float, *, generator=None) -> Tensor:
    check_p(p)
    return bernoulli_meta(_like(self), p)


@bernoulli_p.register_kernel("cpu")
def _bernoulli_p(self: Tensor, p: float, *, generator=None) -> Tensor:
    check_p(p)
    return bernoulli_float(_like(self), p, generator=generator)


@public("bernoulli")
def bernoulli(input, p=None, *, generator=None, out=None):
    """``ember.bernoulli(input)``: 0/1 draws with probabilities ``input``; ``bernoulli(input, p)``: with ``p``."""
    if p is not None:
        if out is not None:
            raise TypeError("bernoulli(): out= is not accepted together with p")
        return bernoulli_p(input, float(p), generator=generator)
    if out is not None:
        return bernoulli_out(input, generator=generator, out=out)
    return bernoulli_op(input, generator=generator)


@method("bernoulli")
def _bernoulli_method(self, p=None, *, generator=None):
    return bernoulli(self, p, generator=generator)


# -- normal -----------------------------------------------------------------------------------------------

normal_tensor_float = define(f"normal.Tensor_float(Tensor mean, float std=1, *, {_GEN}) -> Tensor", TAGS)
normal_float_tensor = define(f"normal.float_Tensor(float mean, Tensor std, *, {_GEN}) -> Tensor", TAGS)
normal_tensor_tensor = define(f"normal.Tensor_Tensor(Tensor mean, Tensor std, *, {_GEN}) -> Tensor", TAGS)
normal_float_float = define(
    f"normal.float_float(float mean, float std, SymInt[] size, *, {_GEN}, ScalarType? dtype=None, "
    "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    ("random", "factory", "core"),
)
normal_outs = {
    "Tensor_float": define(
        f"normal.Tensor_float_out(Tensor mean, float std=1, *, {_GEN}, Tensor(a!) out) -> Tensor(a!)", OUT
    ),
    "float_Tensor": define(
        f"normal.float_Tensor_out(float mean, Tensor std, *, {_GEN}, Tensor(a!) out) -> Tensor(a!)", OUT
    ),
    "Tensor_Tensor": define(
        f"normal.Tensor_Tensor_out(Tensor mean, Tensor std, *, {_GEN}, Tensor(a!) out) -> Tensor(a!)", OUT
    ),
    "float_float": define(
        f"normal.float_float_out(float mean, float std, SymInt[] size, *, {_GEN}, Tensor(a!) out) -> Tensor(a!)", OUT
    ),
}


def _check_floating(t: Tensor) -> None:
    if t.dtype.category < D.FLOATING:
        raise unsupported("normal_kernel", t.dtype)


def _check_std_tensor(std: Tensor) -> None:
    """The CPU kernels' check of ``std``'s values."""
    if numel(std._shape) and not (std._require_data("normal").astype(np.float64) >= 0).all():
        raise RuntimeError("normal expects all elements of std >= 0.0")


def _shifted(shape: tuple, dtype: D.dtype, device, mean, std, generator) -> Tensor:
    """``mean + std * z`` with mean and std arrays (or numbers) broadcast to ``shape``."""
    out = allocate(shape, dtype, device)
    z = standard_normal(out, generator)
    work = _compute(dtype.to_real() if dtype.category == D.COMPLEX else dtype)
    mean = mean.astype(work) if isinstance(mean, np.ndarray) else work(mean)
    std = std.astype(work) if isinstance(std, np.ndarray) else work(std)
    with np.errstate(all="ignore"):
        out._array[...] = (z.astype(work).reshape(shape) * std + mean).astype(dtype.np)
    return out


@normal_tensor_float.register_meta
def _normal_tensor_float_meta(mean: Tensor, std: float = 1, *, generator=None) -> Tensor:
    check_std(std)
    _check_floating(mean)
    return allocate(mean._shape, mean.dtype, mean.device)


@normal_tensor_float.register_kernel("cpu")
def _normal_tensor_float(mean: Tensor, std: float = 1, *, generator=None) -> Tensor:
    check_std(std)
    _check_floating(mean)
    return _shifted(mean._shape, mean.dtype, mean.device, mean._array, std, generator)


@normal_float_tensor.register_meta
def _normal_float_tensor_meta(mean: float, std: Tensor, *, generator=None) -> Tensor:
    _check_floating(std)
    return allocate(std._shape, std.dtype, std.device)


@normal_float_tensor.register_kernel("cpu")
def _normal_float_tensor(mean: float, std: Tensor, *, generator=None) -> Tensor:
    _check_floating(std)
    _check_std_tensor(std)
    return _shifted(std._shape, std.dtype, std.device, mean, std._array, generator)


def _normal_tensor_tensor_plan(mean: Tensor, std: Tensor) -> Tensor:
    """The result of ``normal(mean, std)``, allocated, after the checks that need no data."""
    from ember.core.promotion import result_type

    dtype = result_type(mean, std)
    shape = broadcast_shapes(mean._shape, std._shape)
    out = allocate(shape, dtype, mean.device)
    _check_floating(out)
    return out


@normal_tensor_tensor.register_meta
def _normal_tensor_tensor_meta(mean: Tensor, std: Tensor, *, generator=None) -> Tensor:
    return _normal_tensor_tensor_plan(mean, std)


@normal_tensor_tensor.register_kernel("cpu")
def _normal_tensor_tensor(mean: Tensor, std: Tensor, *, generator=None) -> Tensor:
    out = _normal_tensor_tensor_plan(mean, std)
    check_same_device([mean, std])
    _check_std_tensor(std)
    shape = out._shape
    return _shifted(
        shape,
        out.dtype,
        mean.device,
        np.broadcast_to(mean._require_data("normal"), shape),
        np.broadcast_to(std._require_data("normal"), shape),
        generator,
    )


@normal_float_float.register_meta
def _normal_float_float_meta(mean, std, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    check_std(std)
    out = allocate(tuple(size), _dtype(dtype), _device(device))
    return normal_meta(out, float(mean), float(std))


@normal_float_float.register_kernel("cpu")
def _normal_float_float(mean, std, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    check_std(std)
    out = allocate(tuple(size), _dtype(dtype), _device(device))
    return normal_(out, float(mean), float(std), generator=generator)


@normal_outs["Tensor_float"].register_meta
def _normal_tensor_float_out_meta(mean: Tensor, std: float = 1, *, generator=None, out) -> Tensor:
    return R.fit_out(out, _normal_tensor_float_meta(mean, std))


@normal_outs["Tensor_float"].register_kernel("cpu")
def _normal_tensor_float_out(mean: Tensor, std: float = 1, *, generator=None, out) -> Tensor:
    return R.write_out(out, _normal_tensor_float(mean, std, generator=generator))


@normal_outs["float_Tensor"].register_meta
def _normal_float_tensor_out_meta(mean: float, std: Tensor, *, generator=None, out) -> Tensor:
    return R.fit_out(out, _normal_float_tensor_meta(mean, std))


@normal_outs["float_Tensor"].register_kernel("cpu")
def _normal_float_tensor_out(mean: float, std: Tensor, *, generator=None, out) -> Tensor:
    return R.write_out(out, _normal_float_tensor(mean, std, generator=generator))


@normal_outs["Tensor_Tensor"].register_meta
def _normal_tensor_tensor_out_meta(mean: Tensor, std: Tensor, *, generator=None, out) -> Tensor:
    return R.fit_out(out, _normal_tensor_tensor_meta(mean, std))


@normal_outs["Tensor_Tensor"].register_kernel("cpu")
def _normal_tensor_tensor_out(mean: Tensor, std: Tensor, *, generator=None, out) -> Tensor:
    return R.write_out(out, _normal_tensor_tensor(mean, std, generator=generator))


def _float_float_out(out, std, size) -> Tensor:
    check_std(std)
    size = tuple(size)
    if out._shape != size:
        resize_out(out, size)
    return out


@normal_outs["float_float"].register_meta
def _normal_float_float_out_meta(mean, std, size, *, generator=None, out):
    return normal_meta(_float_float_out(out, std, size), float(mean), float(std))


@normal_outs["float_float"].register_kernel("cpu")
def _normal_float_float_out(mean, std, size, *, generator=None, out):
    return normal_(_float_float_out(out, std, size), float(mean), float(std), generator=generator)


def _number(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"normal(): argument '{name}' must be float or Tensor, not {type(value).__name__}")
    return float(value)


@public("normal")
def normal(
    mean=0.0,
    std=1.0,
    size=None,
    *,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
):
    """``ember.normal``: normal numbers with tensor or float ``mean`` and ``std``, or of ``size``."""
    mean_is, std_is = isinstance(mean, Tensor), isinstance(std, Tensor)
    if size is not None:
        if mean_is or std_is:
            raise TypeError("normal(): size is accepted only with float mean and std")
        mean, std, size = (
            _number(mean, "mean"),
            _number(std, "std"),
            tuple(_size_args((size,)) if isinstance(size, int) else size),
        )
        if out is not None:
            return normal_outs["float_float"](mean, std, size, generator=generator, out=out)
        t = normal_float_float(mean, std, size, generator=generator, dtype=dtype, device=device)
        return _finish(t, requires_grad, None)
    if mean_is and std_is:
        kind, args = "Tensor_Tensor", (mean, std)
    elif mean_is:
        kind, args = "Tensor_float", (mean, _number(std, "std"))
    elif std_is:
        kind, args = "float_Tensor", (_number(mean, "mean"), std)
    else:
        raise TypeError("normal(): expected a Tensor mean or std, or a size")
    if out is not None:
        return normal_outs[kind](*args, generator=generator, out=out)
    functional = {"Tensor_float": normal_tensor_float, "float_Tensor": normal_float_tensor}.get(
        kind, normal_tensor_tensor
    )
    return functional(*args, generator=generator)


# -- multinomial ------------------------------------------------------------------------------------------

multinomial_op = define(
    f"multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, {_GEN}) -> Tensor", TAGS
)
multinomial_out = define(
    f"multinomial.out(Tensor self, SymInt num_samples, bool replacement=False, *, {_GEN}, Tensor(a!) out) "
    "-> Tensor(a!)",
    OUT,
)


def _check_multinomial(self: Tensor, n_sample: int, replacement: bool) -> None:
    if not 1 <= self.ndim <= 2:
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if self.dtype.category != D.FLOATING:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {type_name(self.dtype)}")
    if n_sample <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    categories = self._shape[-1]
    if not replacement and n_sample > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if categories > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")


def _check_distribution(p: np.ndarray, race: bool) -> None:
    """PyTorch's checks, whose messages differ between its two code paths."""
    if race:
        if not (np.isfinite(p) & (p >= 0)).all():
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    else:
        if (p < 0).any():
            raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
        if not np.isfinite(p).all():
            raise RuntimeError("invalid multinomial distribution (encountering probability entry = infinity or NaN)")
    if (p.sum(axis=-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


@multinomial_op.register_meta
def _multinomial_meta(self: Tensor, num_samples: int, replacement: bool = False, *, generator=None) -> Tensor:
    _check_multinomial(self, num_samples, replacement)
    return allocate((*self._shape[:-1], num_samples), D.int64, self.device)


@multinomial_op.register_kernel("cpu")
def _multinomial(self: Tensor, num_samples: int, replacement: bool = False, *, generator=None) -> Tensor:
    n_sample = int(num_samples)
    _check_multinomial(self, n_sample, replacement)
    shape = (*self._shape[:-1], n_sample)
    rows = self._array.astype(np.float64).reshape(-1, self._shape[-1])
    race = not replacement or n_sample == 1
    if not rows.shape[0]:
        return from_array(np.zeros(shape, np.int64))
    _check_distribution(rows, race)
    count, categories = rows.shape
    if race:
        seed, offset = reserve(generator, count * categories)
        u = B.uniform(seed, offset, count * categories, D.float64).reshape(count, categories)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = rows / -np.log1p(-u)  # p / E with E standard exponential; E = 0 only where u = 0
        keys = np.where(u > 0, keys, np.where(rows > 0, np.inf, 0.0))
        chosen = np.argsort(-keys, axis=1, kind="stable")[:, :n_sample]
    else:
        seed, offset = reserve(generator, count * n_sample)
        u = B.uniform(seed, offset, count * n_sample, D.float64).reshape(count, n_sample)
        cumulative = np.cumsum(rows, axis=1)
        cumulative /= cumulative[:, -1:]
        chosen = np.stack([np.searchsorted(c, v, side="right") for c, v in zip(cumulative, u, strict=True)])
        chosen = np.minimum(chosen, categories - 1)
    return from_array(chosen.astype(np.int64).reshape(shape))


def _check_multinomial_out(out) -> None:
    if isinstance(out, Tensor) and out.dtype is not D.int64:
        raise RuntimeError(f"multinomial expects Long tensor out, got: {type_name(out.dtype)}")


@multinomial_out.register_meta
def _multinomial_out_meta(self: Tensor, num_samples: int, replacement: bool = False, *, generator=None, out) -> Tensor:
    _check_multinomial_out(out)
    return R.fit_out(out, _multinomial_meta(self, num_samples, replacement))


@multinomial_out.register_kernel("cpu")
def _multinomial_out(self: Tensor, num_samples: int, replacement: bool = False, *, generator=None, out) -> Tensor:
    _check_multinomial_out(out)
    return R.write_out(out, _multinomial(self, num_samples, replacement, generator=generator))


@public("multinomial")
def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """``ember.multinomial``: ``num_samples`` category indices per row of probabilities ``input``."""
    if isinstance(num_samples, bool) or not isinstance(num_samples, int | np.integer):
        raise TypeError(f"multinomial(): argument 'num_samples' must be int, not {type(num_samples).__name__}")
    if not isinstance(replacement, bool):
        raise TypeError(f"multinomial(): argument 'replacement' must be bool, not {type(replacement).__name__}")
    if out is not None:
        return multinomial_out(input, int(num_samples), replacement, generator=generator, out=out)
    return multinomial_op(input, int(num_samples), replacement, generator=generator)


@method("multinomial")
def _multinomial_method(self, num_samples, replacement=False, *, generator=None):
    return multinomial(self, num_samples, replacement, generator=generator)
