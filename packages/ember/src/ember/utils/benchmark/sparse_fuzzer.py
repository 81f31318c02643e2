"""``FuzzedSparseTensor``: a fuzzed sparse COO tensor, as ``torch.utils.benchmark.FuzzedSparseTensor``.

Its ``density``, ``coalesced`` and (optionally) ``sparse_dim`` come from fuzzer parameters of
those names. The number of specified elements is ``ceil(sum(size) * density)`` (PyTorch's rule:
the sum of the sizes, not their product); an uncoalesced tensor repeats every index once with
other values, so it holds the same pattern twice.
"""

from __future__ import annotations

import math
from numbers import Number

import numpy as np

import ember
from ember.utils.benchmark.fuzzer import FuzzedTensor

__all__ = ["FuzzedSparseTensor"]


class FuzzedSparseTensor(FuzzedTensor):
    def __init__(
        self,
        name: str,
        size: tuple[str | int, ...],
        min_elements: int | None = None,
        max_elements: int | None = None,
        dim_parameter: str | None = None,
        sparse_dim: str | None = None,
        nnz: str | None = None,
        density: str | None = None,
        coalesced: str | None = None,
        dtype=ember.float32,
        cuda: bool = False,
    ) -> None:
        super().__init__(
            name=name,
            size=size,
            min_elements=min_elements,
            max_elements=max_elements,
            dim_parameter=dim_parameter,
            dtype=dtype,
            cuda=cuda,
        )
        self._density = density
        self._coalesced = coalesced
        self._sparse_dim = sparse_dim

    @staticmethod
    def sparse_tensor_constructor(size, dtype, sparse_dim: int, nnz: int, is_coalesced: bool):
        """A sparse COO tensor of ``size`` with ``nnz`` random indices over its first ``sparse_dim``
        dimensions (duplicated, with other values, when not ``is_coalesced``)."""
        if isinstance(size, Number):
            size = [size] * sparse_dim
        if all(size[d] <= 0 for d in range(sparse_dim)) and nnz != 0:
            raise AssertionError("invalid arguments")
        value_size = [nnz, *size[sparse_dim:]]
        if dtype.is_floating_point:
            values = ember.rand(size=value_size, dtype=dtype, device="cpu")
        else:
            values = ember.randint(1, 127, size=value_size, dtype=dtype, device="cpu")
        scale = ember.tensor(list(size[:sparse_dim]), dtype=ember.float32).unsqueeze(1)
        indices = (ember.rand(sparse_dim, nnz, device="cpu") * scale).to(ember.int64)
        if not is_coalesced:
            values = ember.cat([values, ember.randn_like(values)], 0)
            indices = ember.cat([indices, indices], 1)
        tensor = ember.sparse_coo_tensor(indices, values, tuple(size))
        return tensor.coalesce() if is_coalesced else tensor

    def _make_tensor(self, params: dict, state: np.random.RandomState):
        size, _, _ = self._get_size_and_steps(params)
        density = params["density"]
        nnz = math.ceil(sum(size) * density)
        if nnz > sum(size):
            raise AssertionError("nnz cannot exceed total number of elements")
        is_coalesced = params["coalesced"]
        sparse_dim = params["sparse_dim"] if self._sparse_dim else len(size)
        sparse_dim = min(sparse_dim, len(size))
        tensor = self.sparse_tensor_constructor(size, self._dtype, sparse_dim, nnz, is_coalesced)
        if self._cuda:
            tensor = tensor.cuda()
        properties = {
            "numel": int(tensor.numel()),
            "shape": tensor.size(),
            "is_coalesced": tensor.is_coalesced(),
            "density": density,
            "sparsity": 1.0 - density,
            "sparse_dim": tensor.sparse_dim(),
            "dense_dim": tensor.dense_dim(),
            "is_hybrid": len(size[tensor.sparse_dim() :]) > 0,
            "dtype": str(self._dtype),
        }
        return tensor, properties
