"""The virtual ops handler: every handler answers every op, bodies run under any handler."""

from __future__ import annotations

import pytest
import sympy

from ember.core import dtypes as D
from ember.inductor.cpp_ops import CppOverrides, cexpr
from ember.inductor.ir import ComputedBuffer, Layout, index_symbols
from ember.inductor.lowering import _view_groups
from ember.inductor.triton_ops import TritonOverrides
from ember.inductor.virtualized import (
    OP_NAMES,
    CountHandler,
    OpsHandler,
    ReadsHandler,
    StrHandler,
    ops,
    set_ops_handler,
)

HANDLERS = [StrHandler, CountHandler, ReadsHandler, CppOverrides, TritonOverrides]


def test_protocol_lists_load_store_reduction_and_math():
    for name in ("load", "store", "constant", "index_expr", "where", "to_dtype", "reduction", "exp", "add"):
        assert name in OP_NAMES


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda h: h.__name__)
def test_every_handler_implements_every_op(handler):
    missing = [name for name in OP_NAMES if not callable(getattr(handler, name, None))]
    assert not missing, f"{handler.__name__} lacks {missing}"
    # and with the protocol's arity
    import inspect

    for name in OP_NAMES:
        want = len(inspect.signature(getattr(OpsHandler, name)).parameters)
        got = inspect.signature(getattr(handler, name)).parameters
        if not any(p.kind is p.VAR_POSITIONAL for p in got.values()):
            assert len(got) == want, name


def test_ops_outside_a_handler_raise():
    with pytest.raises(RuntimeError, match="set_ops_handler"):
        ops.add(1, 2)


def _softmax_row_body():
    x0, r0 = index_symbols("x", 1)[0], index_symbols("r", 1)[0]
    buf = ComputedBuffer(
        "out",
        D.float32,
        Layout((4,), (1,)),
        lambda i, r: ops.exp(ops.load("inp", i[0] * 8 + r[0])),
        (8,),
        "sum",
    )
    return buf, x0, r0


def test_one_body_under_three_handlers():
    buf, x0, r0 = _softmax_row_body()
    with set_ops_handler(StrHandler()):
        text = buf.body([x0], [r0])
    assert text == f"exp(load(inp, {8 * x0 + r0}))"
    reads = ReadsHandler()
    with set_ops_handler(reads):
        buf.store_body([x0], [r0])
    assert reads.reads == [("inp", 8 * x0 + r0)]
    assert reads.count == 4  # load, exp, reduction, store
    cpp = CppOverrides({"inp": "a0", "out": "a1"}, {"inp": D.float32, "out": D.float32}, "ridx", "n_")
    with set_ops_handler(cpp):
        buf.store_body([x0], [r0])
    assert any("std::exp" in line for line in cpp.body)
    assert cpp.reduction_info[1] == "sum"
    assert cpp.post[-1].startswith("a1[x0] = ")


def test_index_expressions_print_as_integer_cpp():
    x0, x1 = index_symbols("x", 2)
    assert cexpr(sympy.Integer(3)) == "3"
    assert cexpr(sympy.floor(x0 / 8)) == "(x0 / 8)"
    assert cexpr(sympy.Mod(x0, 8)) == "(x0 % 8)"
    assert "x1" in cexpr(x0 * 4 + x1)


@pytest.mark.parametrize(
    ("old", "new", "groups"),
    [
        ([4, 8], [32], [([0, 1], [0])]),
        ([32], [4, 8], [([0], [0, 1])]),
        ([4, 1, 8], [4, 8], [([0], [0]), ([1, 2], [1])]),
        ([2, 3, 4], [6, 4], [([0, 1], [0]), ([2], [1])]),
    ],
)
def test_view_groups_pair_runs_of_equal_products(old, new, groups):
    assert _view_groups(old, new) == groups
