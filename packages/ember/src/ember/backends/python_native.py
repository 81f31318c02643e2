"""``ember.backends.python_native``: PyTorch's switches for the operator overrides written in Python
DSLs (Triton, CuteDSL) that replace ATen kernels.

Ember registers no such overrides (its Triton kernels are the CUDA plugin's own kernels, chosen by
the dispatcher), so every DSL lists no operations and none is available; the switches keep their
state and answer back as PyTorch's do, so scripts that flip them run unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "DSLController",
    "cutedsl",
    "disable_dispatch_keys",
    "disable_operations",
    "enable_dispatch_keys",
    "enable_operations",
    "get_dsl_operations",
    "is_dsl_disabled",
    "is_operation_disabled",
    "operations_disabled",
    "triton",
]

_DSLS = ("cutedsl", "triton")
_disabled_dsls: set[str] = set()
_disabled_operations: set[str] = set()
_disabled_dispatch_keys: set[str] = set()


class DSLController:
    """The switch of one DSL: ``enabled`` (settable), ``disable()``, ``enable()``, ``disabled()``."""

    def __init__(self, dsl_name: str) -> None:
        self._dsl_name = dsl_name

    @property
    def name(self) -> str:
        return self._dsl_name

    @property
    def available(self) -> bool:
        return False  # no override of this DSL is registered in Ember

    @property
    def version(self) -> None:
        return None

    @property
    def enabled(self) -> bool:
        return self._dsl_name not in _disabled_dsls

    @enabled.setter
    def enabled(self, value: bool) -> None:
        if value:
            self.enable()
        else:
            self.disable()

    def disable(self) -> None:
        _disabled_dsls.add(self._dsl_name)

    def enable(self) -> None:
        _disabled_dsls.discard(self._dsl_name)

    @contextmanager
    def disabled(self) -> Iterator[None]:
        """Disable the DSL inside the block, then restore it if it was enabled."""
        was_enabled = self.enabled
        try:
            self.disable()
            yield
        finally:
            if was_enabled:
                self.enable()

    def __repr__(self) -> str:
        status = "available" if self.available else "unavailable"
        return f"DSLController({self._dsl_name}, {status}, {'enabled' if self.enabled else 'disabled'})"


triton = DSLController("triton")
cutedsl = DSLController("cutedsl")


def __getattr__(name: str):
    # PyTorch offers these two as properties of the module.
    if name == "all_dsls":
        return list(_DSLS)
    if name == "available_dsls":
        return [dsl for dsl in _DSLS if DSLController(dsl).available]
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")


def get_dsl_operations(dsl_name: str) -> list[str]:
    """The operations a DSL overrides: none in Ember."""
    return []


def disable_operations(*op_symbols: str) -> None:
    _disabled_operations.update(op_symbols)


def enable_operations(*op_symbols: str) -> None:
    _disabled_operations.difference_update(op_symbols)


def disable_dispatch_keys(*dispatch_keys: str) -> None:
    _disabled_dispatch_keys.update(dispatch_keys)


def enable_dispatch_keys(*dispatch_keys: str) -> None:
    _disabled_dispatch_keys.difference_update(dispatch_keys)


def is_operation_disabled(op_symbol: str) -> bool:
    return op_symbol in _disabled_operations


def is_dsl_disabled(dsl_name: str) -> bool:
    return dsl_name in _disabled_dsls


@contextmanager
def operations_disabled(*op_symbols: str) -> Iterator[None]:
    """Disable the operations inside the block; re-enable those that were enabled before it."""
    before = {op for op in op_symbols if op in _disabled_operations}
    disable_operations(*op_symbols)
    try:
        yield
    finally:
        enable_operations(*(op for op in op_symbols if op not in before))
