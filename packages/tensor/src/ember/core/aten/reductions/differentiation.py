"""``gradient``: derivatives estimated from samples by central differences, as NumPy's and PyTorch's.

Inside, each point takes the second-order central difference of its neighbours; at the two ends a
one-sided difference of order ``edge_order`` (1 or 2). The samples are uniformly spaced (``spacing`` a
number per dimension) or lie at given coordinates (``spacing`` a 1-D tensor per dimension), where
the weights come from the unequal steps around each point. Composed of slices and arithmetic, so
autograd and the compiler see ordinary ops.
"""

from __future__ import annotations

from ember.core.api import public
from ember.core.layout import normalize_dim
from ember.core.tensor import Tensor


def _cat(parts: list, dim: int) -> Tensor:
    from ember.core.aten.shape.joining import cat

    return cat(parts, dim)


def _at(t: Tensor, dim: int, start: int, length: int) -> Tensor:
    return t.narrow(dim, start % t._shape[dim] if start < 0 else start, length)


def _uniform(f: Tensor, dim: int, h, edge_order: int) -> Tensor:
    inner = (_at(f, dim, 2, f._shape[dim] - 2) - _at(f, dim, 0, f._shape[dim] - 2)) / (2 * h)
    if edge_order == 1:
        first = (_at(f, dim, 1, 1) - _at(f, dim, 0, 1)) / h
        last = (_at(f, dim, -1, 1) - _at(f, dim, -2, 1)) / h
    else:
        first = (-1.5 * _at(f, dim, 0, 1) + 2 * _at(f, dim, 1, 1) - 0.5 * _at(f, dim, 2, 1)) / h
        last = (0.5 * _at(f, dim, -3, 1) - 2 * _at(f, dim, -2, 1) + 1.5 * _at(f, dim, -1, 1)) / h
    return _cat([first, inner, last], dim)


def _coordinates(f: Tensor, dim: int, x: Tensor, edge_order: int) -> Tensor:
    n = f._shape[dim]
    shape = [1] * f.ndim
    shape[dim] = n - 1
    dx = (x[1:] - x[:-1]).reshape(tuple(shape))
    d1, d2 = _at(dx, dim, 0, n - 2), _at(dx, dim, 1, n - 2)
    a = -d2 / (d1 * (d1 + d2))
    b = (d2 - d1) / (d1 * d2)
    c = d1 / (d2 * (d1 + d2))
    inner = a * _at(f, dim, 0, n - 2) + b * _at(f, dim, 1, n - 2) + c * _at(f, dim, 2, n - 2)
    if edge_order == 1:
        first = (_at(f, dim, 1, 1) - _at(f, dim, 0, 1)) / _at(dx, dim, 0, 1)
        last = (_at(f, dim, -1, 1) - _at(f, dim, -2, 1)) / _at(dx, dim, -1, 1)
    else:
        d1, d2 = _at(dx, dim, 0, 1), _at(dx, dim, 1, 1)
        first = (
            -(2 * d1 + d2) / (d1 * (d1 + d2)) * _at(f, dim, 0, 1)
            + (d1 + d2) / (d1 * d2) * _at(f, dim, 1, 1)
            - d1 / (d2 * (d1 + d2)) * _at(f, dim, 2, 1)
        )
        d1, d2 = _at(dx, dim, -2, 1), _at(dx, dim, -1, 1)
        last = (
            d2 / (d1 * (d1 + d2)) * _at(f, dim, -3, 1)
            - (d2 + d1) / (d1 * d2) * _at(f, dim, -2, 1)
            + (2 * d2 + d1) / (d2 * (d1 + d2)) * _at(f, dim, -1, 1)
        )
    return _cat([first, inner, last], dim)


@public("gradient")
def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple[Tensor, ...]:
    """The derivative of ``input`` along each of ``dim`` (every dimension when None), one tensor each."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = (
        list(range(input.ndim))
        if dim is None
        else [normalize_dim(d, input.ndim) for d in ([dim] if isinstance(dim, int) else dim)]
    )
    if isinstance(spacing, list | tuple):
        if len(spacing) != len(dims):
            given = "since dim argument was not given" if dim is None else "to match the dim argument"
            what = f"'self.dim() = {input.ndim}'" if dim is None else f"the length of 'dim' = {len(dims)}"
            raise RuntimeError(
                f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal to {what}, "
                f"{given}, but got a list of length {len(spacing)}"
            )
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    for d in dims:
        if input._shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    f = input if input.is_floating_point() or input.is_complex() else input.to(_default_float())
    out = []
    for d, h in zip(dims, spacings, strict=True):
        if isinstance(h, Tensor):
            if h.ndim != 1 or h._shape[0] != input._shape[d]:
                raise RuntimeError(
                    f"torch.gradient expected each tensor to be on the same device as the input and of size "
                    f"{input._shape[d]} along dim {d}, got a tensor of shape {list(h.shape)}"
                )
            out.append(_coordinates(f, d, h, edge_order))
        else:
            out.append(_uniform(f, d, h, edge_order))
    return tuple(out)


def _default_float():
    from ember.core.promotion import get_default_dtype

    return get_default_dtype()
