"""Helpers shared by the distributions: broadcasting of parameters, probabilities and logits, the special
functions the densities need (log-gamma, digamma, xlogy: the core's ``ember.special`` ops, with their
derivatives) and Gamma sampling."""

from __future__ import annotations

from functools import update_wrapper
from numbers import Number
from typing import Any

from ember.core.tensor import Tensor

from ._ember import ember

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
    "tril_matrix_to_vec",
    "vec_to_tril_matrix",
]

euler_constant = 0.57721566490153286060


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Broadcast numbers and tensors to one shape; numbers take the dtype of the first tensor (or the default)."""
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError(
            "Input arguments must all be instances of numbers.Number, torch.Tensor or objects implementing __torch_function__."
        )
    if not all(isinstance(v, Tensor) for v in values):
        options: dict[str, Any] = {"dtype": ember.get_default_dtype()}
        for v in values:
            if isinstance(v, Tensor):
                options = {"dtype": v.dtype, "device": v.device}
                break
        values = tuple(v if isinstance(v, Tensor) else ember.tensor(v, **options) for v in values)
    shape = ember.broadcast_shapes(*(v.shape for v in values))
    return tuple(v.expand(shape) for v in values)


def _standard_normal(shape, dtype, device) -> Tensor:
    return ember.randn(shape, dtype=dtype, device=device)


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    if dim == 0:
        return value
    return value.reshape(value.shape[: value.dim() - dim] + (-1,)).sum(-1)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


class lazy_property:
    """A property computed on first access and then stored on the instance (as PyTorch's)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)  # type: ignore[arg-type]

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    arange = ember.arange(n, device=mat.device)
    tril_mask = arange < arange.reshape(-1, 1) + (diag + 1)
    return mat[..., tril_mask]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    # the size n of the matrix solves n * (n + 1) / 2 + n * diag = len(vec) (diag <= 0)
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = ember.finfo(vec.dtype).eps
    if not round(n) - n < eps:
        raise ValueError(
            f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as the lower triangular part of a square D x D matrix."
        )
    n = round(n.item()) if isinstance(n, Tensor) else round(n)
    mat = vec.new_zeros(vec.shape[:-1] + (n, n))
    arange = ember.arange(n, device=vec.device)
    tril_mask = arange < arange.reshape(-1, 1) + (diag + 1)
    mat[..., tril_mask] = vec
    return mat


# --- special functions: the core's (ember.special), with their derivatives ---


def lgamma(x: Tensor) -> Tensor:
    """log |Gamma(x)|."""
    return ember.lgamma(x)


def digamma(x: Tensor) -> Tensor:
    return ember.digamma(x)


def mvlgamma(x: Tensor, p: int) -> Tensor:
    return ember.mvlgamma(x, p)


def xlogy(x: Tensor, y: Tensor) -> Tensor:
    """x * log(y), 0 where x is 0."""
    return ember.special.xlogy(x, y)


def standard_gamma(concentration: Tensor) -> Tensor:
    """Gamma(concentration, 1) samples (Marsaglia and Tsang), drawn with ember's default generator."""
    with ember.no_grad():
        alpha = concentration.detach()
        boost = alpha < 1
        a = ember.where(boost, alpha + 1, alpha)
        d = a - 1 / 3
        c = 1 / ember.sqrt(9 * d)
        out = ember.zeros_like(a)
        done = ember.zeros(a.shape, dtype=ember.bool)
        while not bool(done.all()):
            z = ember.randn(a.shape, dtype=a.dtype, device=a.device)
            u = ember.rand(a.shape, dtype=a.dtype, device=a.device)
            v = (1 + c * z) ** 3
            ok = (v > 0) & (
                ember.log(u)
                < 0.5 * z * z + d - d * v + d * ember.log(v.clamp(min=1e-300 if a.dtype == ember.float64 else 1e-38))
            )
            take = ok & ~done
            out = ember.where(take, d * v, out)
            done = done | ok
        u = ember.rand(a.shape, dtype=a.dtype, device=a.device)
        out = ember.where(boost, out * u ** (1 / alpha), out)
        return out.clamp(min=ember.finfo(a.dtype).tiny)
