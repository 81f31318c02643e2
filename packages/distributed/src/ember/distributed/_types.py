"""The small value types of ``torch.distributed``: ``ReduceOp``, ``Backend``, ``GroupMember`` and the
default timeout."""

from __future__ import annotations

import enum
from collections.abc import Callable
from datetime import timedelta
from typing import Any, ClassVar

__all__ = ["Backend", "GroupMember", "ReduceOp", "default_pg_timeout"]

# PyTorch's default for CPU process groups.
default_pg_timeout = timedelta(minutes=30)


class RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9

    def __str__(self) -> str:
        return f"RedOpType.{self.name}"

    __repr__ = __str__


class ReduceOp:
    """How a reduction combines the ranks' values (``torch.distributed.ReduceOp``).

    ``ReduceOp.SUM`` and its siblings are ``RedOpType`` members; ``ReduceOp(ReduceOp.SUM)`` wraps one,
    and ``_make_nccl_premul_sum(factor)`` makes a ``PREMUL_SUM`` that scales every input first.
    """

    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM
    UNUSED = RedOpType.UNUSED

    def __init__(self, op: RedOpType | ReduceOp = RedOpType.SUM) -> None:
        if isinstance(op, ReduceOp):
            self.op, self.factor = op.op, op.factor
            return
        if not isinstance(op, RedOpType):
            raise TypeError(f"ReduceOp expects a ReduceOp.RedOpType, got {op!r}")
        if op is RedOpType.PREMUL_SUM:
            raise ValueError("use torch.distributed._make_nccl_premul_sum to make a PREMUL_SUM with its factor")
        self.op = op
        self.factor: Any = None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReduceOp):
            return self.op == other.op
        return self.op == other

    def __hash__(self) -> int:
        return hash(self.op)

    def __repr__(self) -> str:
        return f"<{self.op!r}>" if self.factor is None else f"<{self.op!r} factor={self.factor!r}>"


def _make_nccl_premul_sum(factor: Any) -> ReduceOp:
    """A ``PREMUL_SUM``: every rank's input is multiplied by ``factor`` (a number or a one-element tensor)."""
    op = ReduceOp()
    op.op, op.factor = RedOpType.PREMUL_SUM, factor
    return op


def red_op_type(op: RedOpType | ReduceOp) -> RedOpType:
    if isinstance(op, ReduceOp):
        return op.op
    if isinstance(op, RedOpType):
        return op
    raise TypeError(f"op must be a torch.distributed.ReduceOp, got {type(op).__name__}: {op!r}")


class Backend(str):
    """A backend's name, lower case (``torch.distributed.Backend``): ``Backend("MPI") == "mpi"``.

    ``register_backend`` adds a third party's backend: ``func(store, group_rank, group_size, timeout)``
    returns an object with the collective methods of ``ember.distributed.ProcessGroup``'s backends.
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"

    backend_list: ClassVar[list[str]] = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI]
    default_device_backend_map: ClassVar[dict[str, str]] = {"cpu": MPI, "cuda": NCCL}
    backend_capability: ClassVar[dict[str, list[str]]] = {MPI: ["cpu"], NCCL: ["cuda"], GLOO: ["cpu", "cuda"]}
    backend_type_map: ClassVar[dict[str, int]] = {UNDEFINED: 0, GLOO: 1, NCCL: 2, UCC: 3, MPI: 4, XCCL: 5}
    _plugins: ClassVar[dict[str, tuple[Callable[..., Any], bool]]] = {}

    def __new__(cls, name: str) -> Backend:
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {name!r}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            value = name.lower()
        return super().__new__(cls, value)

    @classmethod
    def register_backend(
        cls,
        name: str,
        func: Callable[..., Any],
        extended_api: bool = False,
        devices: str | list[str] | None = None,
    ) -> None:
        if hasattr(Backend, name.upper()):
            raise ValueError(f"{name.upper()} c10d backend already exist")
        if name.upper() in Backend._plugins:
            raise ValueError(f"{name} c10d backend creator function already exist")
        setattr(Backend, name.upper(), name.lower())
        Backend.backend_list.append(name.lower())
        if devices is None:
            devices = ["cpu", "cuda"]
        elif isinstance(devices, str):
            devices = [devices]
        Backend.backend_capability[name.lower()] = list(devices)
        for device in devices:
            Backend.default_device_backend_map.setdefault(device, name.lower())
        Backend._plugins[name.upper()] = (func, extended_api)


class GroupMember:
    """``GroupMember.WORLD`` is the default group once made; ``NON_GROUP_MEMBER`` is what ``new_group``
    gives a rank outside the group."""

    WORLD: Any = None
    NON_GROUP_MEMBER: Any = -100
