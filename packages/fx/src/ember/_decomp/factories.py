"""Decompositions kept in the table only: the factories without a derivative, and the ``*_like`` ones.

These ops have no derivative of their own (they make tensors that do not require grad), so a
decomposition registered on the op (``op.register_decomposition``) would make it an implicit
composite: every dispatch mode, fake tensors and plain ``make_fx`` included, would see its parts
instead of the op. Lowering is the one place they are replaced, so they are registered here, in the
global table, and ``core_aten_decompositions`` lowers them as it lowers the core's own.
"""

from __future__ import annotations

from ember._decomp import decomposition_table, register_decomposition
from ember.core import dtypes as D
from ember.core.aten.factories import factories
from ember.core.dispatch import ops
from ember.core.promotion import get_default_dtype

aten = ops.aten


def _filled(size, value, dtype, layout, device, pin_memory):
    dtype = get_default_dtype() if dtype is None else dtype
    return aten.full.default(list(size), value, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory)


@register_decomposition(aten.zeros.default)
def zeros(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _filled(size, 0, dtype, layout, device, pin_memory)


@register_decomposition(aten.ones.default)
def ones(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _filled(size, 1, dtype, layout, device, pin_memory)


@register_decomposition(aten.eye.m)
def eye(n, m, *, dtype=None, layout=None, device=None, pin_memory=None):
    factories._check_eye(n, m)
    rows = aten.unsqueeze.default(aten.arange.start_step(0, n, 1, dtype=D.int64, device=device), -1)
    columns = aten.arange.start_step(0, m, 1, dtype=D.int64, device=device)
    diagonal = aten.eq.Tensor(rows, columns)
    return aten._to_copy.default(diagonal, dtype=get_default_dtype() if dtype is None else dtype)


@register_decomposition(aten.linspace.default)
def linspace(start, end, steps, *, dtype=None, layout=None, device=None, pin_memory=None):
    start, end, dtype = factories._linspace_plan(start, end, steps, dtype)
    if steps <= 1:
        return _filled([steps], start, dtype, layout, device, pin_memory)
    # The kernel's arithmetic: in float64 for integers, float32 for 16-bit floats; the first half
    # counted from ``start``, the second from ``end``, so that both ends are exact.
    if dtype.category <= D.INTEGRAL:
        work, start, end = D.float64, int(start), int(end)
    else:
        work = D.float32 if dtype in (D.float16, D.bfloat16) else dtype
    first = aten._to_copy.default(_filled([], start, dtype, layout, device, pin_memory), dtype=work)
    last = aten._to_copy.default(_filled([], end, dtype, layout, device, pin_memory), dtype=work)
    step = (last - first) / (steps - 1)
    index = aten.arange.start_step(0, steps, 1, dtype=work, device=device)
    low = first + step * index
    high = last - step * ((steps - 1) - index)
    halfway = aten.arange.start_step(0, steps, 1, dtype=D.int64, device=device) < steps // 2
    return aten._to_copy.default(aten.where.self(halfway, low, high), dtype=dtype)


# zeros_like and ones_like: the core's decompositions (which eager calls run, these ops having no
# kernel) fill a fresh tensor in place; lowered, they are full_like, a core op.
def zeros_like(self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return aten.full_like.default(self, 0, dtype=dtype, layout=layout, device=device, memory_format=memory_format)


def ones_like(self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return aten.full_like.default(self, 1, dtype=dtype, layout=layout, device=device, memory_format=memory_format)


decomposition_table[aten.zeros_like.default] = zeros_like
decomposition_table[aten.ones_like.default] = ones_like
