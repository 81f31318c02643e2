"""The derivative table: one entry per differentiable op, keyed by the op object.

A formula is registered next to nothing else, in ``derivatives/<family>.py``::

    @derivative(aten.mul.Tensor, save=("self", "other"))
    def _(grad, self, other, **_):
        return grad * other.conj(), grad * self.conj()

The engine calls it with the incoming gradient (a tuple, with ``None`` for outputs that got none,
when the op has several outputs) and every schema argument by name: saved tensors as they were,
the others as ``TensorMeta`` (shape, dtype, device), non-tensor arguments as given, defaults filled
in, and ``result`` (the output, or the tuple of outputs) when ``save`` names it. A formula taking
``needs`` gets a tuple of bools, one per tensor argument, saying which gradients are wanted.

It returns one gradient per Tensor-typed argument in schema order (a list for a ``Tensor[]``, a
single value when the op has one tensor argument); ``None`` means zero. The engine sums a gradient
down to its input's shape where the input was broadcast, and casts it to the input's dtype.

In-place ops (``add_.Tensor``) use their functional op's entry unless they have their own; ``out=``
overloads refuse to record. Ops whose outputs carry no gradient (comparisons, argmax, random
sampling) are listed with ``nondifferentiable``. Ops with neither but with a decomposition are
differentiated through it. ``jvp=`` gives the forward-mode rule (``forward_ad``): a function of
(tangents, ...) like the formula's, or ``"linear"`` (the op applied to the tangents) or
``"elementwise"`` (the formula itself applied to the tangent, valid where the Jacobian is diagonal
and real). ``refuse=("weight",)`` names tensor arguments the op is not differentiable in: a call
where one of them requires grad raises, as PyTorch's does (the formula returns None for them).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from ember.core.dispatch import OpOverload, all_ops

_TENSOR_BASES = ("Tensor",)


@dataclass
class Derivative:
    op: OpOverload
    formula: Callable
    save: frozenset[str]
    wants_needs: bool
    jvp: Callable | str | None
    # Positions in schema order of the Tensor-typed arguments, and their names.
    tensor_args: tuple[str, ...]
    list_args: frozenset[str]
    output_differentiable: tuple[bool, ...] | None = None
    saves_result: bool = False
    refused: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self.saves_result = "result" in self.save


DERIVATIVES: dict[OpOverload, Derivative] = {}
NONDIFFERENTIABLE: set[OpOverload] = set()
DIFFERENTIABLE_DECOMPOSITIONS: dict[OpOverload, Callable] = {}


def tensor_arguments(op: OpOverload) -> tuple[tuple[str, ...], frozenset[str]]:
    names, lists = [], set()
    for a in op.schema.arguments:
        if a.type.base in _TENSOR_BASES and not (a.is_write and a.kwarg_only):
            names.append(a.name)
            if a.type.is_list:
                lists.add(a.name)
    return tuple(names), frozenset(lists)


def derivative(*ops: OpOverload, save=(), jvp: Callable | str | None = None, output_differentiable=None, refuse=()):
    """Register ``formula`` as the derivative of each op in ``ops``."""

    def register(formula: Callable) -> Callable:
        wants_needs = "needs" in inspect.signature(formula).parameters
        for op in ops:
            if not isinstance(op, OpOverload):
                raise TypeError(f"derivative(): expected an OpOverload, got {op!r}")
            if op in DERIVATIVES:
                raise RuntimeError(f"the derivative of {op} is defined twice")
            names, lists = tensor_arguments(op)
            unknown = set(save) - {a.name for a in op.schema.arguments} - {"result"}
            if unknown:
                raise ValueError(f"derivative({op}): save names {sorted(unknown)}, which the schema does not have")
            if set(refuse) - set(names):
                raise ValueError(f"derivative({op}): refuse names {sorted(set(refuse) - set(names))}, not tensors")
            DERIVATIVES[op] = Derivative(
                op,
                formula,
                frozenset(save),
                wants_needs,
                jvp,
                names,
                lists,
                None if output_differentiable is None else tuple(output_differentiable),
                refused=frozenset(refuse),
            )
            op.derivative_kind = "formula"
        return formula

    return register


def nondifferentiable(*ops: OpOverload) -> None:
    """Ops whose outputs never require grad (integer or bool results, sampling, ...)."""
    for op in ops:
        if op in DERIVATIVES:
            raise RuntimeError(f"{op} has a derivative and cannot be nondifferentiable")
        NONDIFFERENTIABLE.add(op)
        op.derivative_kind = "nondifferentiable"


def through_decomposition(*ops: OpOverload, via: Callable | None = None) -> None:
    """Backward ops whose own derivative (for double backward) is their decomposition's: autograd
    records their parts, while modes without grad see each as one op, as PyTorch's do. ``via``, a
    function of the op's arguments, stands in for the decomposition where the parts autograd should
    record differ from the decomposition's (statistics recomputed with their history)."""
    for op in ops:
        if op.decomposition is None:
            raise RuntimeError(f"{op} has no decomposition to differentiate through")
        if op in DERIVATIVES or op in NONDIFFERENTIABLE:
            raise RuntimeError(f"{op} already has a derivative")
        op.derivative_kind = "decomposition"
        if via is not None:
            DIFFERENTIABLE_DECOMPOSITIONS[op] = via


def differentiable_decomposition(op: OpOverload) -> Callable | None:
    """What autograd records an op through when it has no formula: ``through_decomposition``'s
    ``via``, else the op's decomposition."""
    return DIFFERENTIABLE_DECOMPOSITIONS.get(op, op.decomposition)


def functional_of(op: OpOverload) -> OpOverload | None:
    """``add_.Tensor`` → ``add.Tensor``: the op whose formula an in-place op uses."""
    return op.functional if op.form == "inplace" else None


def lookup(op: OpOverload) -> Derivative | None:
    entry = DERIVATIVES.get(op)
    if entry is None and op.schema.is_inplace:
        functional = functional_of(op)
        if functional is not None:
            entry = DERIVATIVES.get(functional)
    return entry


def is_nondifferentiable(op: OpOverload) -> bool:
    if op in NONDIFFERENTIABLE:
        return True
    functional = functional_of(op) if op.schema.is_inplace else None
    return functional is not None and functional in NONDIFFERENTIABLE


def missing() -> list[OpOverload]:
    """Ops that take a tensor and have no derivative, no nondifferentiable mark and no decomposition."""
    out = []
    for op in all_ops():
        if op.schema.is_out or op.namespace != "aten":
            continue
        if not tensor_arguments(op)[0]:
            continue
        if lookup(op) is None and not is_nondifferentiable(op) and op.decomposition is None:
            out.append(op)
    return out
