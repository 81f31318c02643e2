"""The ``Distribution`` base class: batch and event shapes, argument and sample validation, and the
interface every distribution fills in (sample/rsample, log_prob, cdf/icdf, entropy, moments, expand)."""

from __future__ import annotations

import warnings
from typing import Any

from ember.core.tensor import Size, Tensor

from . import constraints
from ._ember import ember
from .utils import lazy_property

__all__ = ["Distribution"]


class Distribution:
    """Abstract base class for probability distributions (PyTorch's ``torch.distributions.Distribution``)."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument and sample validation on or off for distributions built afterwards."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: tuple = Size(), event_shape: tuple = Size(), validate_args: bool | None = None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(
                    f"{self.__class__} does not define `arg_constraints`. "
                    + "Please set `arg_constraints = {}` or initialize the distribution "
                    + "with `validate_args=False` to turn off validation.",
                    stacklevel=2,
                )
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # skip checking lazily-constructed args
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(
                        f"Expected parameter {param} "
                        f"({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} "
                        f"to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{value}"
                    )
        super().__init__()

    def expand(self, batch_shape, _instance=None) -> Distribution:
        """A new distribution with parameters expanded to ``batch_shape`` (no copy)."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        raise NotImplementedError

    @property
    def support(self) -> Any:
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: tuple = ()) -> Tensor:
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: tuple = ()) -> Tensor:
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return ember.exp(self.entropy())

    def _extended_shape(self, sample_shape: tuple = ()) -> Size:
        if not isinstance(sample_shape, Size):
            sample_shape = Size(sample_shape)
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.shape) - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(
                f"The right-most size of value must match event_shape: {value.shape} vs {self._event_shape}."
            )
        actual_shape = value.shape
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape), strict=False):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs {expected_shape}."
                )
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{self.__class__} does not define `support` to enable "
                + "sample validation. Please initialize the distribution with "
                + "`validate_args=False` to turn off validation.",
                stacklevel=2,
            )
            return
        assert support is not None
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(
                "Expected value argument "
                f"({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) "
                f"of the distribution {self!r}, "
                f"but found invalid values:\n{value}"
            )

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom __init__ method "
                "must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def _expand_params(self, cls, batch_shape, _instance, names, event_dims=None):
        """The common ``expand``: a new instance whose named parameters are expanded to ``batch_shape``."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(batch_shape)
        for name in names:
            if name in self.__dict__:
                value = getattr(self, name)
                extra = (event_dims or {}).get(name, 0)
                shape = batch_shape + (value.shape[value.dim() - extra :] if extra else Size())
                setattr(new, name, value.expand(shape))
        super(cls, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __repr__(self) -> str:
        param_names = [k for k, _ in self.arg_constraints.items() if k in self.__dict__]
        args_string = ", ".join(
            [
                f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
                for p in param_names
            ]
        )
        return self.__class__.__name__ + "(" + args_string + ")"
