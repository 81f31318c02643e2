"""Batching rules of the factorizations and solvers (``ember.core.aten.linalg.factorizations`` and
``solvers``): each op already maps over leading batch dims, broadcasting them between operands, so
every operand gets the batch at dim 0 (an unbatched one is expanded, a view) and the op runs once.

Two things need care. A right-hand side that is a vector logically (``solve``'s and ``lstsq``'s
rule reads the operands' ranks) gets a trailing dim, so that the rule is read the same once the
batch dim is added. Outputs an op leaves empty (``(0,)``: eigenvectors not asked for, ``Q`` of
``mode='r'``, ``lstsq``'s residuals and singular values where its driver gives none) carry no batch:
each lane gets an empty one.
"""

from __future__ import annotations

from ember.core import return_types
from ember.func._vmap.common import aten, logical_ndim, pad_to
from ember.func._vmap.table import register


def _lanes(call, result):
    if isinstance(result, tuple):
        fields = [_lanes(call, r) for r in result]
        return type(result)(*fields) if hasattr(result, "_fields") else tuple(fields)
    if result.ndim == 1 and result.shape[0] == 0 and call.size != 0:
        return result.new_empty((call.size, 0))
    return result


def _expanded(call):
    return [call.expand(a) if hasattr(a, "shape") else a for a in call.args]


def _all_batched(call):
    return _lanes(call, call.op(*_expanded(call), **call.kwargs))


def _shape(call, x) -> tuple:
    return tuple(x.shape)[1:] if call.batched(x) else tuple(x.shape)


def _vector_rhs(call, a, b) -> bool:
    a_shape, b_shape = _shape(call, a), _shape(call, b)
    return len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1 and b_shape == a_shape[:-1])


def _aligned(call, A, B, b_core: int):
    """Both operands batched at 0, with as many batch dims each, so that their batches broadcast
    behind the vmapped dim (``b_core``: B's matrix dims, 1 for a vector)."""
    batch = max(len(_shape(call, A)) - 2, len(_shape(call, B)) - b_core)
    return pad_to(call, call.expand(A), batch + 2), pad_to(call, call.expand(B), batch + b_core)


def _two_operands(call):
    A, B = _aligned(call, *call.args[:2], 2)
    return call.op(A, B, *call.args[2:], **call.kwargs)


def _solve_ex(call):
    A, B = call.args[:2]
    vector = _vector_rhs(call, A, B)
    info_shape = (call.size, *_shape(call, A)[:-2])  # info follows A's batch alone
    A, B = _aligned(call, A, B, 1 if vector else 2)
    result, info = call.op(A, B.unsqueeze(-1) if vector else B, *call.args[2:], **call.kwargs)
    return return_types.linalg_solve_ex(result.squeeze(-1) if vector else result, info.reshape(info_shape))


def _lstsq(call):
    A, B = call.args[:2]
    vector = logical_ndim(call, B) == logical_ndim(call, A) - 1
    A, B = _aligned(call, A, B, 1 if vector else 2)
    result = call.op(A, B.unsqueeze(-1) if vector else B, *call.args[2:], **call.kwargs)
    if vector:
        solution, residuals, rank, values = result
        result = type(result)(
            solution.squeeze(-1), residuals.squeeze(-1) if residuals.ndim > 1 else residuals, rank, values
        )
    return _lanes(call, result)


register(
    _all_batched,
    aten.linalg_inv_ex.default,
    aten.linalg_cholesky_ex.default,
    aten.linalg_qr.default,
    aten._linalg_eigh.default,
    aten.linalg_eig.default,
    aten.linalg_lu_factor_ex.default,
    aten.linalg_det.default,
    aten.linalg_slogdet.default,
    aten.linalg_matrix_exp.default,
    aten.geqrf.default,
    aten.linalg_ldl_factor_ex.default,
)


def _ldl_solve(call):
    LD, pivots, B = call.args[:3]
    cores = ((LD, 2), (pivots, 1), (B, 2))
    batch = max(len(_shape(call, t)) - core for t, core in cores)
    LD, pivots, B = (pad_to(call, call.expand(t), batch + core) for t, core in cores)
    return call.op(LD, pivots, B, *call.args[3:], **call.kwargs)


register(_ldl_solve, aten.linalg_ldl_solve.default)
register(_solve_ex, aten.linalg_solve_ex.default)
register(_two_operands, aten.linalg_solve_triangular.default)
register(_lstsq, aten.linalg_lstsq.default)
