"""Meta functions of ``out=`` and in-place forms that the OpInfo samples call only on the CPU: the same
call on meta tensors resizes ``out`` (or keeps ``self``) to the CPU's shape, dtype and strides, and a
bad call raises the CPU's error."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.ops import aten


def _t(shape, dtype=ember.float32, fill=None):
    if fill is not None:
        return ember.tensor(np.asarray(fill)).to(dtype).reshape(shape)
    return ember.arange(int(np.prod(shape)), dtype=ember.float64).reshape(shape).to(dtype)


def _out(dtype=ember.float32):
    return ember.empty(0, dtype=dtype)


def _on(device: str, value):
    if isinstance(value, ember.Tensor):
        return value if device == "cpu" else value.to("meta")
    if isinstance(value, list | tuple):
        return type(value)(_on(device, v) for v in value)
    if isinstance(value, dict):
        return {k: _on(device, v) for k, v in value.items()}
    return value


CASES = {
    "mm.out": lambda: (aten.mm.out, (_t((2, 3)), _t((3, 4))), {"out": _out()}),
    "bmm.out": lambda: (aten.bmm.out, (_t((2, 2, 3)), _t((2, 3, 4))), {"out": _out()}),
    "addmm.out": lambda: (aten.addmm.out, (_t((4,)), _t((2, 3)), _t((3, 4))), {"out": _out()}),
    "baddbmm.out": lambda: (aten.baddbmm.out, (_t((2, 1, 4)), _t((2, 2, 3)), _t((2, 3, 4))), {"out": _out()}),
    "dot.out": lambda: (aten.dot.out, (_t((3,)), _t((3,))), {"out": _out()}),
    "vdot.out": lambda: (aten.vdot.out, (_t((3,)), _t((3,))), {"out": _out()}),
    "mv.out": lambda: (aten.mv.out, (_t((2, 3)), _t((3,))), {"out": _out()}),
    "outer.out": lambda: (aten.outer.out, (_t((2,)), _t((3,))), {"out": _out()}),
    "matmul.out": lambda: (aten.matmul.out, (_t((2, 2, 3)), _t((3, 4))), {"out": _out()}),
    "mm.out of another dtype": lambda: (aten.mm.out, (_t((2, 3)), _t((3, 4))), {"out": _out(ember.float64)}),
    "addmm_": lambda: (aten.addmm_.default, (_t((2, 4)), _t((2, 3)), _t((3, 4))), {}),
    "addmm_ that would broadcast self": lambda: (aten.addmm_.default, (_t((4,)), _t((2, 3)), _t((3, 4))), {}),
    "baddbmm_": lambda: (aten.baddbmm_.default, (_t((2, 2, 4)), _t((2, 2, 3)), _t((2, 3, 4))), {}),
    "bucketize.Tensor_out": lambda: (
        aten.bucketize.Tensor_out,
        (_t((2, 3)), _t((3,))),
        {"out": _out(ember.int64)},
    ),
    "bucketize.Tensor_out of the wrong dtype": lambda: (
        aten.bucketize.Tensor_out,
        (_t((2, 3)), _t((3,))),
        {"out": _out(ember.int32)},
    ),
    "searchsorted.Tensor_out": lambda: (
        aten.searchsorted.Tensor_out,
        (_t((3,)), _t((2, 2))),
        {"out_int32": True, "out": _out(ember.int32)},
    ),
    "searchsorted.Scalar_out": lambda: (
        aten.searchsorted.Scalar_out,
        (_t((3,)), 1.5),
        {"out": _out(ember.int64)},
    ),
    "gather.out": lambda: (
        aten.gather.out,
        (_t((3, 4)), 1, _t((3, 2), ember.int64, np.zeros(6))),
        {"out": _out()},
    ),
    "index_select.out": lambda: (
        aten.index_select.out,
        (_t((3, 4)), 0, _t((2,), ember.int64, [0, 2])),
        {"out": _out()},
    ),
    "index_select.out of the wrong dtype": lambda: (
        aten.index_select.out,
        (_t((3, 4)), 0, _t((2,), ember.int64, [0, 2])),
        {"out": _out(ember.float64)},
    ),
    "take.out": lambda: (aten.take.out, (_t((3, 4)), _t((2,), ember.int64, [0, 5])), {"out": _out()}),
    "masked_fill_.Scalar": lambda: (
        aten.masked_fill_.Scalar,
        (_t((2, 3)), _t((3,), ember.bool, [True, False, True]), 1.0),
        {},
    ),
    "masked_fill_.Scalar that would broadcast self": lambda: (
        aten.masked_fill_.Scalar,
        (_t((3,)), _t((2, 3), ember.bool, [True] * 6), 1.0),
        {},
    ),
    "median.out": lambda: (aten.median.out, (_t((3, 4)),), {"out": _out()}),
    "nanmedian.out": lambda: (aten.nanmedian.out, (_t((3, 4)),), {"out": _out()}),
    "median.out of the wrong dtype": lambda: (aten.median.out, (_t((3, 4)),), {"out": _out(ember.float64)}),
    "stack.out along dim 0": lambda: (aten.stack.out, ([_t((2, 3)), _t((2, 3))], 0), {"out": _out()}),
    "stack.out along dim 1": lambda: (aten.stack.out, ([_t((2, 3)), _t((2, 3))], 1), {"out": _out()}),
    "stack.out along the last dim": lambda: (aten.stack.out, ([_t((2, 3)), _t((2, 3))], 2), {"out": _out()}),
    "stack.out into a transposed out": lambda: (
        aten.stack.out,
        ([_t((2, 3)), _t((2, 3))], 0),
        {"out": ember.empty(3, 2, 2).permute(2, 1, 0)},
    ),
}


def _run(op, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return op(*args, **kwargs), None
        except Exception as error:  # compared by the caller
            return None, error


def _layouts(result):
    if isinstance(result, list | tuple):
        return [_layouts(r) for r in result]
    return tuple(result.shape), result.dtype, result.stride()


@pytest.mark.parametrize("name", list(CASES))
def test_meta_out_form_matches_cpu(name):
    op, args, kwargs = CASES[name]()
    cpu, cpu_error = _run(op, _on("cpu", args), _on("cpu", kwargs))
    meta_args, meta_kwargs = _on("meta", args), _on("meta", kwargs)
    meta, meta_error = _run(op, meta_args, meta_kwargs)
    if cpu_error is not None:
        assert meta_error is not None, f"meta passed where the CPU raised {cpu_error!r}"
        assert (type(meta_error), str(meta_error)) == (type(cpu_error), str(cpu_error))
        return
    assert meta_error is None, f"meta raised {meta_error!r}"
    assert _layouts(meta) == _layouts(cpu)
    results = meta if isinstance(meta, tuple) else (meta,)
    assert all(r.device.type == "meta" for r in results)
    written = meta_kwargs.get("out", meta_args[0])
    assert written is results[0]


def test_data_dependent_out_forms_refuse_meta():
    x, mask = _t((2, 3)), _t((2, 3), ember.bool, [True, False] * 3)
    assert aten.masked_select.out(x, mask, out=_out()).shape == (3,)
    assert aten.nonzero.out(mask, out=_out(ember.int64)).shape == (3, 2)
    for op, args in ((aten.masked_select.out, (x, mask)), (aten.nonzero.out, (mask,))):
        assert "data_dependent_output" in op.tags
        with pytest.raises(NotImplementedError, match="data-dependent output shape"):
            op(*_on("meta", args), out=ember.empty(0, device="meta"))
