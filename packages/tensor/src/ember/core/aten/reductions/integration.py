"""The trapezoidal rule: ``trapezoid`` (and its older name ``trapz``) and ``cumulative_trapezoid``.

Composites, in PyTorch's arithmetic: with a constant spacing ``dx`` the integral is ``(sum(y) -
(y[0] + y[-1]) / 2) * dx``; with sample points ``x`` each interval adds ``dx_i * (y_i + y_{i+1}) / 2``.
A 1-D ``x`` lies along ``dim``. Integer ``y`` gives the default float dtype.
"""

from __future__ import annotations

from ember.core.api import public
from ember.core.dispatch import define
from ember.core.layout import normalize_dim
from ember.core.tensor import Tensor

trapezoid_x = define("trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor")
trapezoid_dx = define("trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor")
cumulative_trapezoid_x = define("cumulative_trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor")
cumulative_trapezoid_dx = define("cumulative_trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor")


def _pairs(y: Tensor, dim: int) -> Tensor:
    n = y._shape[dim]
    return y.narrow(dim, 0, n - 1) + y.narrow(dim, 1, n - 1)


def _spacing(y: Tensor, x: Tensor, dim: int, name: str) -> Tensor:
    if x.ndim == 1:
        if x._shape[0] != y._shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[dim] = x._shape[0]
        x = x.reshape(tuple(shape))
    elif x._shape[dim if x.ndim == y.ndim else dim - y.ndim] != y._shape[dim]:
        raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
    n = x._shape[dim if x.ndim == y.ndim else dim - y.ndim]
    d = dim if x.ndim == y.ndim else dim - y.ndim
    return x.narrow(d, 1, n - 1) - x.narrow(d, 0, n - 1)


@trapezoid_dx.register_decomposition
def _trapezoid_dx(y: Tensor, *, dx=1, dim: int = -1) -> Tensor:
    dim = normalize_dim(dim, y.ndim)
    if y._shape[dim] == 0:
        return y.sum(dim, dtype=y.dtype) * 0  # PyTorch gives zeros of y's own dtype here
    ends = (y.select(dim, 0) + y.select(dim, -1)) * 0.5
    return (y.sum(dim) - ends) * dx


@trapezoid_x.register_decomposition
def _trapezoid_x(y: Tensor, x: Tensor, *, dim: int = -1) -> Tensor:
    dim = normalize_dim(dim, y.ndim)
    if y._shape[dim] == 0:
        return y.sum(dim, dtype=y.dtype) * 0  # PyTorch gives zeros of y's own dtype here
    dx = _spacing(y, x, dim, "trapezoid")
    return ((dx * _pairs(y, dim)) / 2.0).sum(dim)


@cumulative_trapezoid_dx.register_decomposition
def _cumulative_trapezoid_dx(y: Tensor, *, dx=1, dim: int = -1) -> Tensor:
    dim = normalize_dim(dim, y.ndim)
    if y._shape[dim] == 0:
        return (y * 0.0).narrow(dim, 0, 0)
    return ((dx / 2.0) * _pairs(y, dim)).cumsum(dim)


@cumulative_trapezoid_x.register_decomposition
def _cumulative_trapezoid_x(y: Tensor, x: Tensor, *, dim: int = -1) -> Tensor:
    dim = normalize_dim(dim, y.ndim)
    if y._shape[dim] == 0:
        return (y * 0.0).narrow(dim, 0, 0)
    dx = _spacing(y, x, dim, "cumulative_trapezoid")
    return (dx * _pairs(y, dim) / 2.0).cumsum(dim)


def _surface(name: str, with_x, with_dx):
    def function(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
        if isinstance(x, Tensor):
            if dx is not None:
                raise TypeError(f"{name}() received an invalid combination of arguments: both x and dx")
            return with_x(y, x, dim=dim)
        if x is not None:
            raise TypeError(
                f"{name}() received an invalid combination of arguments: x must be a Tensor (the spacing is "
                f"dx=, by keyword), not {type(x).__name__}"
            )
        return with_dx(y, dx=1 if dx is None else dx, dim=dim)

    function.__name__ = function.__qualname__ = name
    public(name)(function)


_surface("trapezoid", trapezoid_x, trapezoid_dx)
_surface("trapz", trapezoid_x, trapezoid_dx)
_surface("cumulative_trapezoid", cumulative_trapezoid_x, cumulative_trapezoid_dx)
