"""``Fuzzer``: random benchmark inputs (parameters, then tensors shaped by them), as
``torch.utils.benchmark.Fuzzer``.

A fuzzer draws every parameter from its distribution with one NumPy ``RandomState`` seeded by the
fuzzer's seed, resamples until the constraints and every tensor's size limits hold, then builds
the tensors. Parameter values follow PyTorch's draws exactly (same ``RandomState`` calls in the
same order), so a seed gives PyTorch's parameters, sizes, step patterns and memory layouts; the
tensors' values come from Ember's generator, seeded from the same state.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import ember

__all__ = ["FuzzedParameter", "FuzzedTensor", "Fuzzer", "ParameterAlias"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """One named parameter: ``uniform`` or ``loguniform`` between ``minval`` and ``maxval``
    (integers when both bounds are), or a dict of ``{value: probability}``. A ``strict`` parameter
    keeps its first draw while the fuzzer resamples the others."""

    def __init__(
        self,
        name: str,
        minval: int | float | None = None,
        maxval: int | float | None = None,
        distribution: str | dict[Any, float] | None = None,
        strict: bool = False,
    ) -> None:
        self._name = name
        self._minval = minval
        self._maxval = maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self) -> str:
        return self._name

    def _check_distribution(self, distribution):
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(f"Unknown distribution: {distribution}")
            return distribution
        if any(p < 0 for p in distribution.values()):
            raise AssertionError("Probabilities cannot be negative")
        # PyTorch 2.13 inverts this test (it refuses the normalized dicts); we check what its docs say.
        if abs(sum(distribution.values()) - 1) > 1e-5:
            raise AssertionError("Distribution is not normalized")
        if self._minval is not None:
            raise AssertionError("When passing a custom distribution, 'minval' must be None")
        if self._maxval is not None:
            raise AssertionError("When passing a custom distribution, 'maxval' must be None")
        return distribution

    def sample(self, state: np.random.RandomState):
        if isinstance(self._distribution, dict):
            choices = list(self._distribution)
            return choices[state.choice(np.arange(len(choices)), p=tuple(self._distribution.values()))]
        if self._distribution == "uniform":
            if isinstance(self._minval, int) and isinstance(self._maxval, int):
                return int(state.randint(low=self._minval, high=self._maxval + 1))
            return state.uniform(low=self._minval, high=self._maxval)
        # loguniform: uniform in log2 space, truncated to an int and clamped into the bounds
        low = np.log2(self._minval) if self._minval is not None else None
        high = np.log2(self._maxval) if self._maxval is not None else None
        value = int(2 ** state.uniform(low=low, high=high))
        if self._minval is not None and value < self._minval:
            return self._minval
        if self._maxval is not None and value > self._maxval:
            return self._maxval
        return value


class ParameterAlias:
    """A parameter value that takes another parameter's value (useful as a choice of a custom
    distribution, to make two sizes sometimes equal). Chains are allowed, cycles are not."""

    def __init__(self, alias_to: str) -> None:
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def dtype_size(dtype) -> int:
    """Bytes per element, as PyTorch counts them for allocation limits: a complex dtype counts the
    bits of one part (its ``finfo``), so complex64 counts 4."""
    return dtype.itemsize // 2 if dtype.is_complex else dtype.itemsize


def prod(values, base: int = 1) -> int:
    """The product as a Python int (no overflow that would pass a size check)."""
    return functools.reduce(lambda x, y: int(x) * int(y), values, base)


class FuzzedTensor:
    """A tensor whose sizes (``size``, ints or parameter names) and optional ``steps`` (slice
    strides over a larger allocation) come from the parameters; with probability
    ``1 - probability_contiguous`` its memory order is a random permutation. ``min_elements``,
    ``max_elements`` and ``max_allocation_bytes`` reject parameter sets; ``dim_parameter`` names
    a parameter that truncates or pads (with 1) the number of dimensions."""

    def __init__(
        self,
        name: str,
        size: tuple[str | int, ...],
        steps: tuple[str | int, ...] | None = None,
        probability_contiguous: float = 0.5,
        min_elements: int | None = None,
        max_elements: int | None = None,
        max_allocation_bytes: int | None = None,
        dim_parameter: str | None = None,
        roll_parameter: str | None = None,
        dtype=ember.float32,
        cuda: bool = False,
        tensor_constructor: Callable | None = None,
    ) -> None:
        self._name = name
        self._size = size
        self._steps = steps
        self._probability_contiguous = probability_contiguous
        self._min_elements = min_elements
        self._max_elements = max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = dtype
        self._cuda = cuda
        self._tensor_constructor = tensor_constructor

    @property
    def name(self) -> str:
        return self._name

    @staticmethod
    def default_tensor_constructor(size, dtype, **kwargs):
        if dtype.is_floating_point or dtype.is_complex:
            return ember.rand(size=size, dtype=dtype, device="cpu")
        return ember.randint(1, 127, size=size, dtype=dtype, device="cpu")

    def _make_tensor(self, params: dict, state: np.random.RandomState):
        size, steps, allocation_size = self._get_size_and_steps(params)
        constructor = self._tensor_constructor or self.default_tensor_constructor
        raw = constructor(size=allocation_size, dtype=self._dtype, **params)
        if self._cuda:
            raw = raw.cuda()
        dim = len(size)
        order = np.arange(dim)
        if state.rand() > self._probability_contiguous:
            while dim > 1 and np.all(order == np.arange(dim)):
                order = state.permutation(raw.dim())
            raw = raw.permute(tuple(int(i) for i in order)).contiguous()
            raw = raw.permute(tuple(int(i) for i in np.argsort(order)))
        tensor = raw[tuple(slice(0, n * step, step) for n, step in zip(size, steps, strict=True))]
        properties = {
            "numel": int(tensor.numel()),
            "order": order,
            "steps": steps,
            "is_contiguous": tensor.is_contiguous(),
            "dtype": str(self._dtype),
        }
        return tensor, properties

    def _get_size_and_steps(self, params: dict):
        dim = params[self._dim_parameter] if self._dim_parameter is not None else len(self._size)

        def resolve(values):
            values = tuple(params.get(v, v) for v in values)[:dim]
            return values + (1,) * (dim - len(values))

        size = resolve(self._size)
        steps = resolve(self._steps or ())
        allocation_size = tuple(n * step for n, step in zip(size, steps, strict=True))
        return size, steps, allocation_size

    def satisfies_constraints(self, params: dict) -> bool:
        size, _, allocation_size = self._get_size_and_steps(params)
        elements = prod(size)
        if elements < 0:
            raise AssertionError("Computed number of elements is negative")
        allocation_bytes = prod(allocation_size, base=dtype_size(self._dtype))

        def above(value, bound):
            return value is not None and bound is not None and value > bound

        return not (
            above(elements, self._max_elements)
            or above(self._min_elements, elements)
            or above(allocation_bytes, self._max_allocation_bytes)
        )


class Fuzzer:
    """Draws parameter sets that satisfy the ``constraints`` (callables of the parameters as
    keywords) and the tensors' limits, and builds the tensors: ``take(n)`` yields ``n`` triples
    ``(tensors, tensor_properties, params)``, the same ones for the same ``seed``."""

    def __init__(
        self,
        parameters: list[FuzzedParameter | list[FuzzedParameter]],
        tensors: list[FuzzedTensor | list[FuzzedTensor]],
        constraints: list[Callable] | None = None,
        seed: int | None = None,
    ) -> None:
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2**32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = Fuzzer._unpack(parameters, FuzzedParameter)
        self._tensors = Fuzzer._unpack(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        overlap = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {overlap}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _unpack(values, cls) -> tuple:
        return tuple(itertools.chain.from_iterable([v] if isinstance(v, cls) else v for v in values))

    def take(self, n: int) -> Iterator[tuple[dict, dict, dict]]:
        state = np.random.RandomState(self._seed)
        ember.manual_seed(int(state.randint(low=0, high=2**63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            tensors, properties = {}, {}
            for t in self._tensors:
                tensors[t.name], properties[t.name] = t._make_tensor(params, state)
            yield tensors, properties, params

    @property
    def rejection_rate(self) -> float:
        return self._rejections / self._total_generated if self._total_generated else 0.0

    def _generate(self, state: np.random.RandomState) -> dict:
        strict: dict[str, Any] = {}
        for _ in range(1000):
            candidate: dict[str, Any] = {}
            for p in self._parameters:
                if p.strict and p.name in strict:
                    candidate[p.name] = strict[p.name]
                else:
                    candidate[p.name] = p.sample(state)
                    if p.strict:
                        strict[p.name] = candidate[p.name]
            candidate = self._resolve_aliases(candidate)
            self._total_generated += 1
            if not all(f(candidate) for f in self._constraints) or not all(
                t.satisfies_constraints(candidate) for t in self._tensors
            ):
                self._rejections += 1
                continue
            return candidate
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params: dict) -> dict:
        params = dict(params)
        remaining = sum(isinstance(v, ParameterAlias) for v in params.values())
        while remaining:
            for key, value in params.items():
                if isinstance(value, ParameterAlias):
                    params[key] = params[value.alias_to]
            now = sum(isinstance(v, ParameterAlias) for v in params.values())
            if now == remaining:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            remaining = now
        return params
