"""Ops whose output shape depends on the input's values (nonzero, unique, masked_select, indexing by
a mask, one_hot without num_classes).

Without a ``ShapeEnv`` that allows it, a fake cannot run them: ``DynamicOutputShapeException``.
With ``shape_env.allow_dynamic_output_shape_ops``, each unknown size is a fresh unbacked SymInt
from ``shape_env.create_unbacked_symint()``, and the results are laid out as the CPU kernels lay
them out (``nonzero``'s result is column-major).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember._subclasses.fake_tensor import DynamicOutputShapeException, FakeTensor, FakeTensorMode
from ember.core import dtypes as D
from ember.core.devices import device
from ember.core.dispatch import OpOverload
from ember.core.layout import normalize_dim
from ember.core.symbolic import _check_is_size
from ember.core.tensor import Tensor
from ember.ops import aten


def dynamic_output(mode: FakeTensorMode, func: OpOverload, dev: device, args: tuple, kwargs: dict) -> Any:
    env = mode.shape_env
    rule = _RULES.get(func.name)
    if env is None or not getattr(env, "allow_dynamic_output_shape_ops", False) or rule is None:
        # Indexing by a mask runs nonzero on it, and PyTorch names that op.
        raise DynamicOutputShapeException(aten.nonzero.default if func.name == "index" else func)
    if func.schema.is_out:
        raise DynamicOutputShapeException(func)
    return rule(_Maker(mode, env, dev), func, *args, **kwargs)


class _Maker:
    def __init__(self, mode: FakeTensorMode, env: Any, dev: device) -> None:
        self.mode, self.env, self.device = mode, env, dev

    def size(self):
        n = self.env.create_unbacked_symint()
        # A count of elements: at least 0, and a size for size-oblivious reasoning (PyTorch's
        # _constrain_range_for_size).
        _check_is_size(n)
        return n

    def empty(self, shape: tuple, dtype: D.dtype, stride: tuple | None = None) -> FakeTensor:
        from ember._subclasses.fake_impls import fresh_fake

        return fresh_fake(self.mode, tuple(shape), dtype, self.device, stride)


def _nonzero(make: _Maker, func, self: Tensor) -> FakeTensor:
    n = make.size()
    return make.empty((n, self.ndim), D.int64, (1, n))


def _nonzero_numpy(make: _Maker, func, self: Tensor) -> list[FakeTensor]:
    n = make.size()
    return [make.empty((n,), D.int64) for _ in range(max(self.ndim, 1))]


def _masked_select(make: _Maker, func, self: Tensor, mask: Tensor) -> FakeTensor:
    return make.empty((make.size(),), self.dtype)


def _unique2(make: _Maker, func, self: Tensor, sorted=True, return_inverse=False, return_counts=False):
    n = make.size()
    return (
        make.empty((n,), self.dtype),
        make.empty(self._shape if return_inverse else (0,), D.int64),
        make.empty((n,) if return_counts else (0,), D.int64),
    )


def _unique_dim(make: _Maker, func, self: Tensor, dim, sorted=True, return_inverse=False, return_counts=False):
    d = normalize_dim(dim, self.ndim)
    n = make.size()
    shape = (*self._shape[:d], n, *self._shape[d + 1 :])
    return (
        make.empty(shape, self.dtype),
        make.empty((self._shape[d],) if return_inverse else (0,), D.int64),
        make.empty((n,) if return_counts else (0,), D.int64),
    )


def _unique_consecutive(make: _Maker, func, self: Tensor, return_inverse=False, return_counts=False, dim=None):
    if dim is None:
        return _unique2(make, func, self, True, return_inverse, return_counts)
    return _unique_dim(make, func, self, dim, True, return_inverse, return_counts)


def _one_hot(make: _Maker, func, self: Tensor, num_classes: int = -1) -> FakeTensor:
    return make.empty((*self._shape, make.size()), D.int64)


def _index(make: _Maker, func, self: Tensor, indices) -> Any:
    from ember._subclasses.fake_impls import run_op

    indices = list(indices)
    first = indices[0] if indices else None
    if len(indices) == 1 and isinstance(first, Tensor) and first.dtype in (D.bool_, D.uint8):
        # ``x[mask]``, the common case: the selected rows, one after another.
        return make.empty((make.size(), *self._shape[first.ndim :]), self.dtype)
    # Each mask stands for the nonzero() of itself: one long index per dimension it covers.
    long_indices = []
    for index in indices:
        if isinstance(index, Tensor) and index.dtype in (D.bool_, D.uint8):
            n = make.size()
            long_indices.extend(make.empty((n,), D.int64) for _ in range(max(index.ndim, 1)))
        else:
            long_indices.append(index)
    return run_op(make.mode, func, (self, long_indices), {})


_RULES: dict[str, Callable] = {
    "nonzero": _nonzero,
    "argwhere": _nonzero,
    "nonzero_numpy": _nonzero_numpy,
    "masked_select": _masked_select,
    "_unique2": _unique2,
    "unique_dim": _unique_dim,
    "unique_consecutive": _unique_consecutive,
    "one_hot": _one_hot,
    "index": _index,
}
