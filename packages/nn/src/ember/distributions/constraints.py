"""Constraints: objects that say which values a parameter or a sample may take (``check(value)`` gives a
boolean tensor over the batch), with ``is_discrete`` and ``event_dim`` as PyTorch's."""

from __future__ import annotations

from typing import Any

from ember.core.tensor import Tensor

from ._ember import ember

__all__ = [
    "Constraint",
    "MixtureSameFamilyConstraint",
    "boolean",
    "cat",
    "corr_cholesky",
    "dependent",
    "dependent_property",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "is_dependent",
    "less_than",
    "lower_cholesky",
    "lower_triangular",
    "multinomial",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_definite",
    "positive_integer",
    "positive_semidefinite",
    "real",
    "real_vector",
    "simplex",
    "square",
    "stack",
    "symmetric",
    "unit_interval",
]  # fmt: skip


class Constraint:
    """A region of values; ``check`` returns a bool tensor of shape ``sample_shape + batch_shape``."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """Placeholder for a support that depends on other parameters; it cannot be checked."""

    def __init__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> _Dependent:
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property whose value is a constraint that depends on the instance (``support`` of Uniform, ...)."""

    def __init__(self, fn=None, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented):
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn):  # type: ignore[override]
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """Treats ``reinterpreted_batch_ndims`` batch dims of a base constraint as event dims."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int):
        if not isinstance(base_constraint, Constraint):
            raise TypeError("base_constraint must be a Constraint")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError("reinterpreted_batch_ndims must be a non-negative int")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        result = result.reshape(result.shape[: result.dim() - self.reinterpreted_batch_ndims] + (-1,))
        return result.all(-1)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamilyConstraint(Constraint):
    """The support of a MixtureSameFamily: the component's, with the mixture dim reduced."""

    def __init__(self, base_constraint: Constraint):
        if not isinstance(base_constraint, Constraint):
            raise TypeError("base_constraint must be a Constraint")
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim

    def check(self, value: Tensor) -> Tensor:
        unsqueezed = value.unsqueeze(-1 - self.event_dim)
        result = self.base_constraint.check(unsqueezed)
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        num_dim_to_keep = value.dim() - self.event_dim
        result = result.reshape(result.shape[:num_dim_to_keep] + (-1,))
        return result.all(-1)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_constraint!r})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        is_boolean = (value == 0) | (value == 1)
        is_normalized = value.sum(-1).eq(1)
        return is_boolean.all(-1) & is_normalized


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerLessThan(Constraint):
    is_discrete = True

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return value == value  # false for NaN


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return self.lower_bound < value

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _GreaterThanEq(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return self.lower_bound <= value

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value < self.upper_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return ember.all(value >= 0, dim=-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x: Tensor) -> Tensor:
        return (x >= 0).all(dim=-1) & (x.sum(dim=-1) <= self.upper_bound)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        value_tril = value.tril()
        return (value_tril == value).reshape(value.shape[:-2] + (-1,)).min(-1)[0]


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        value_tril = value.tril()
        lower_triangular = (value_tril == value).reshape(value.shape[:-2] + (-1,)).min(-1)[0]
        positive_diagonal = (value.diagonal(dim1=-2, dim2=-1) > 0).min(-1)[0]
        return lower_triangular & positive_diagonal


class _CorrCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        tol = ember.finfo(value.dtype).eps * value.shape[-1] * 10
        row_norm = (value * value).sum(-1).sqrt()
        unit_row_norm = (row_norm - 1.0).abs().le(tol).all(dim=-1)
        return _LowerCholesky().check(value) & unit_row_norm


class _Square(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return ember.full(value.shape[:-2], value.shape[-2] == value.shape[-1], dtype=ember.bool, device=value.device)


class _Symmetric(_Square):
    def check(self, value: Tensor) -> Tensor:
        square_check = super().check(value)
        if not bool(square_check.all()):
            return square_check
        close = ((value - value.mT).abs() <= 1e-6 + 1e-6 * value.mT.abs()).reshape(value.shape[:-2] + (-1,))
        return close.all(-1)


def _eigvalsh(value: Tensor):
    import numpy as np

    return ember.tensor(np.linalg.eigvalsh(value.detach().numpy()))


class _PositiveSemidefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        sym_check = super().check(value)
        if not bool(sym_check.all()):
            return sym_check
        return _eigvalsh(value).ge(0).all(-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        sym_check = super().check(value)
        if not bool(sym_check.all()):
            return sym_check
        import numpy as np

        array = value.detach().numpy()
        batch = array.reshape((-1,) + array.shape[-2:])
        ok = []
        for m in batch:
            try:
                np.linalg.cholesky(m)
                ok.append(True)
            except np.linalg.LinAlgError:
                ok.append(False)
        return ember.tensor(ok, dtype=ember.bool).reshape(value.shape[:-2])


class _Cat(Constraint):
    """Applies a sequence of constraints to consecutive pieces along ``dim`` of sizes ``lengths``."""

    def __init__(self, cseq, dim: int = 0, lengths=None):
        assert all(isinstance(c, Constraint) for c in cseq)
        self.cseq = list(cseq)
        if lengths is None:
            lengths = [1] * len(self.cseq)
        self.lengths = list(lengths)
        assert len(self.lengths) == len(self.cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Tensor) -> Tensor:
        assert -value.dim() <= self.dim < value.dim()
        checks = []
        start = 0
        for constr, length in zip(self.cseq, self.lengths, strict=False):
            v = value.narrow(self.dim, start, length)
            checks.append(constr.check(v))
            start = start + length
        return ember.cat(checks, self.dim)


class _Stack(Constraint):
    """Applies a sequence of constraints to the slices along ``dim``."""

    def __init__(self, cseq, dim: int = 0):
        assert all(isinstance(c, Constraint) for c in cseq)
        self.cseq = list(cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value: Tensor) -> Tensor:
        assert -value.dim() <= self.dim < value.dim()
        vs = [value.select(self.dim, i) for i in range(value.shape[self.dim])]
        return ember.stack([constr.check(v) for v, constr in zip(vs, self.cseq, strict=False)], self.dim)


# Public interface, under PyTorch's names.
dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
