"""``ember.fft``'s functions over the three transform ops (``transforms.py``), with PyTorch's
arguments: ``n``/``s`` (a signal length per transformed dim: the input is cut or padded with zeros to
it), ``dim`` and ``norm`` (``"backward"``, the default, scales the inverse by ``1/n``; ``"ortho"``
both ways by ``1/sqrt(n)``; ``"forward"`` the forward by ``1/n``). Integer and bool inputs become the
default floating dtype first, as in PyTorch.

The Hermitian family (``hfft``, ``ihfft`` and their 2-D and n-D forms) is written with the other
direction's transform and a reindexing ``k -> -k``, which for these signals does what the complex
conjugate (which Ember does not have) does in PyTorch's.
"""

from __future__ import annotations

from collections.abc import Sequence

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.aten.fft import transforms as T
from ember.core.dispatch import ops
from ember.core.pointwise import type_name
from ember.core.tensor import Tensor

aten = ops.aten


def _code(norm: str | None, forward: bool) -> int:
    if norm is None or norm == "backward":
        return 0 if forward else 2
    if norm == "ortho":
        return 1
    if norm == "forward":
        return 2 if forward else 0
    raise ValueError(f"Invalid normalization mode: {norm}")


def _floating(x: Tensor) -> Tensor:
    if x.dtype.category <= D.INTEGRAL:
        from ember.core.promotion import get_default_dtype

        return x.to(get_default_dtype())
    return x


def _complex(x: Tensor) -> Tensor:
    x = _floating(x)
    return x if x.dtype.category == D.COMPLEX else x.to(x.dtype.to_complex())


def _resized(x: Tensor, dims: Sequence[int], sizes: Sequence[int]) -> Tensor:
    """``x`` cut or padded with zeros (at the end) to ``sizes`` along ``dims``."""
    for d, size in zip(dims, sizes, strict=True):
        if size == -1:
            continue
        if size < 1:
            raise RuntimeError(f"Invalid number of data points ({size}) specified")
        current = x.shape[d]
        if size < current:
            x = x.narrow(d, 0, size)
        elif size > current:
            pad = [0, 0] * (x.ndim - 1 - d) + [0, size - current]
            x = aten.constant_pad_nd.default(x, pad, 0)
    return x


def _out(result: Tensor, out):
    if out is None:
        return result
    from ember.core.aten.linalg.linalg_functions import write_out

    return write_out(result, out)


def _one_dim(x: Tensor, n, dim: int) -> tuple[Tensor, int]:
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = dim % x.ndim if -x.ndim <= dim < x.ndim else None
    if d is None:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-x.ndim}, {x.ndim - 1}], but got {dim})"
        )
    return (x if n is None else _resized(x, [d], [n])), d


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    x, d = _one_dim(_floating(input), n, dim)
    if x.dtype.category == D.COMPLEX:
        return _out(T.c2c(x, [d], _code(norm, True), True), out)
    return _out(T.r2c(x, [d], _code(norm, True), False), out)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    x, d = _one_dim(_complex(input), n, dim)
    return _out(T.c2c(x, [d], _code(norm, False), False), out)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    x = _floating(input)
    if x.dtype.category == D.COMPLEX:
        raise RuntimeError(f"rfft expects a real input tensor, but got {type_name(x.dtype)}")
    x, d = _one_dim(x, n, dim)
    return _out(T.r2c(x, [d], _code(norm, True), True), out)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    x, d = _one_dim(_complex(input), None, dim)
    last = 2 * (x.shape[d] - 1) if n is None else n
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    x = _resized(x, [d], [last // 2 + 1])
    return _out(T.c2r(x, [d], _code(norm, False), last), out)


def _plan(x: Tensor, s, dim, name: str) -> tuple[list[int], list[int]]:
    """The transformed dims and their sizes, PyTorch's defaults filled in."""
    if dim is None:
        dims = list(range(x.ndim)) if s is None else list(range(x.ndim - len(s), x.ndim))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [d % x.ndim if x.ndim else d for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is None:
        sizes = [x.shape[d] for d in dims]
    else:
        if len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        sizes = [x.shape[d] if size == -1 else size for d, size in zip(dims, s, strict=True)]
    return dims, sizes


def fftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    x = _floating(input)
    dims, sizes = _plan(x, s, dim, "fftn")
    x = _resized(x, dims, sizes)
    if x.dtype.category == D.COMPLEX:
        return _out(T.c2c(x, dims, _code(norm, True), True), out)
    return _out(T.r2c(x, dims, _code(norm, True), False), out)


def ifftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    x = _complex(input)
    dims, sizes = _plan(x, s, dim, "ifftn")
    return _out(T.c2c(_resized(x, dims, sizes), dims, _code(norm, False), False), out)


def rfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    x = _floating(input)
    if x.dtype.category == D.COMPLEX:
        raise RuntimeError(f"rfftn expects a real-valued input tensor, but got {type_name(x.dtype)}")
    dims, sizes = _plan(x, s, dim, "rfftn")
    return _out(T.r2c(_resized(x, dims, sizes), dims, _code(norm, True), True), out)


def irfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    x = _complex(input)
    dims, sizes = _plan(x, s, dim, "irfftn")
    last = 2 * (x.shape[dims[-1]] - 1) if s is None or s[-1] == -1 else sizes[-1]
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    x = _resized(x, dims, [*sizes[:-1], last // 2 + 1])
    return _out(T.c2r(x, dims, _code(norm, False), last), out)


def fft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    return fftn(input, s, dim, norm, out=out)


def ifft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    return ifftn(input, s, dim, norm, out=out)


def rfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    return irfftn(input, s, dim, norm, out=out)


def _negated(x: Tensor, dims: Sequence[int]) -> Tensor:
    """``x`` at the indices ``-k mod n`` along each of ``dims``: a transform the other way round.
    With no complex conjugate at hand, a real signal's transforms in the two directions differ by
    this reindexing alone."""
    from ember.core.aten.shape.joining import cat

    for d in dims:
        n = x.shape[d]
        if n > 1:
            x = cat([x.narrow(d, 0, 1), x.narrow(d, 1, n - 1).flip([d])], d)
    return x


def hfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The forward transform of a Hermitian signal (given by its first half): real."""
    x = _complex(input)
    dims, sizes = _plan(x, s, dim, "hfftn")
    last = 2 * (x.shape[dims[-1]] - 1) if s is None or s[-1] == -1 else sizes[-1]
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    x = _resized(x, dims, [*sizes[:-1], last // 2 + 1])
    return _out(_negated(T.c2r(x, dims, _code(norm, True), last), dims), out)


def ihfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The inverse transform of a real signal, one-sided along the last of ``dim``."""
    x = _floating(input)
    if x.dtype.category == D.COMPLEX:
        raise RuntimeError(f"ihfftn expects a real-valued input tensor, but got {type_name(x.dtype)}")
    dims, sizes = _plan(x, s, dim, "ihfftn")
    x = _resized(x, dims, sizes)
    full = _negated(T.r2c(x, dims, _code(norm, False), False), dims)
    half = full.narrow(dims[-1], 0, x.shape[dims[-1]] // 2 + 1)
    # Laid out as PyTorch's one-sided transforms are: the transformed dims innermost.
    order = [d for d in range(half.ndim) if d not in dims] + list(dims)
    inverse = [order.index(d) for d in range(half.ndim)]
    return _out(half.permute(order).contiguous().permute(inverse), out)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    return hfftn(input, None if n is None else [n], [dim], norm, out=out)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    return ihfftn(input, None if n is None else [n], [dim], norm, out=out)


def hfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    return ihfftn(input, s, dim, norm, out=out)


def fftfreq(
    n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
) -> Tensor:
    """The sample frequencies ``[0, 1, ..., -(n // 2), ..., -1] / (d * n)``."""
    from ember.core.aten.factories.factories import arange_function

    k = arange_function(n, dtype=dtype, device=device)
    freqs = k.where(k < (n + 1) // 2, k - n) / (d * n)
    if freqs.dtype.category <= D.INTEGRAL:
        freqs = freqs.to(dtype)
    return _out(freqs.requires_grad_(requires_grad) if requires_grad else freqs, out)


def rfftfreq(
    n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
) -> Tensor:
    """The non-negative sample frequencies ``[0, 1, ..., n // 2] / (d * n)``."""
    from ember.core.aten.factories.factories import arange_function

    freqs = arange_function(n // 2 + 1, dtype=dtype, device=device) / (d * n)
    return _out(freqs.requires_grad_(requires_grad) if requires_grad else freqs, out)


def _shift_dims(x: Tensor, dim) -> list[int]:
    if dim is None:
        return list(range(x.ndim))
    return [dim] if isinstance(dim, int) else list(dim)


def fftshift(input: Tensor, dim=None) -> Tensor:
    dims = _shift_dims(input, dim)
    return input.roll([input.shape[d] // 2 for d in dims], dims)


def ifftshift(input: Tensor, dim=None) -> Tensor:
    dims = _shift_dims(input, dim)
    return input.roll([(input.shape[d] + 1) // 2 for d in dims], dims)


# -- conjugation bits -----------------------------------------------------------------------------
# PyTorch marks some results (ifft of a real signal, ...) as lazily conjugated or negated views.
# Ember computes every value eagerly: no tensor carries either bit, and resolving one is the identity.


@public("resolve_conj")
@method("resolve_conj")
def resolve_conj(input: Tensor) -> Tensor:
    return input


@public("resolve_neg")
@method("resolve_neg")
def resolve_neg(input: Tensor) -> Tensor:
    return input


@public("is_conj")
@method("is_conj")
def is_conj(input: Tensor) -> bool:
    return False


@public("is_neg")
@method("is_neg")
def is_neg(input: Tensor) -> bool:
    return False
