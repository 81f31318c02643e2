"""``nn.parallel``'s functions across the devices of one process, against PyTorch's CPU build.

Without an accelerator PyTorch refuses every one of them that touches a tensor; Ember drives at most one
device per process and refuses the same way (the same error types and messages, except where PyTorch's
CPU build fails on a missing internal, which is named below). What involves no tensor, splitting
arguments per device, works in both and gives the same structures.
"""

from __future__ import annotations

from collections import namedtuple

import pytest

import ember
from ember.nn import parallel as P

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
TP = torch.nn.parallel

Point = namedtuple("Point", "x y")


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as error:
        return type(error).__name__, str(error)


def _linear(lib):
    return lib.nn.Linear(2, 2)


# (name, call given the library and its parallel module); PyTorch's CPU build raises AttributeError
# (a missing torch._C function) for a tensor scattered to accelerator indices: Ember says why instead.
CASES = [
    ("scatter to cpu", lambda lib, p: p.scatter(lib.ones(4, 2), ["cpu", "cpu"])),
    ("gather cpu tensors", lambda lib, p: p.gather([lib.ones(2), lib.ones(2)], 0)),
    ("gather to cpu", lambda lib, p: p.gather([lib.ones(2), lib.ones(2)], "cpu")),
    ("gather dicts of cpu tensors", lambda lib, p: p.gather([{"a": lib.ones(2)}, {"a": lib.ones(2)}], 0)),
    ("replicate to cpu", lambda lib, p: p.replicate(_linear(lib), ["cpu"])),
    ("replicate cpu parameters", lambda lib, p: p.replicate(_linear(lib), [0])),
    ("parallel_apply", lambda lib, p: p.parallel_apply([_linear(lib)] * 2, [lib.ones(2)] * 2)),
    (
        "parallel_apply on cpu",
        lambda lib, p: p.parallel_apply([_linear(lib)] * 2, [lib.ones(2)] * 2, devices=["cpu"] * 2),
    ),
    ("parallel_apply mismatch", lambda lib, p: p.parallel_apply([_linear(lib)] * 2, [lib.ones(2)])),
    ("reduce_add of cpu tensors", lambda lib, p: p.comm.reduce_add([lib.ones(2), lib.ones(2)])),
    ("broadcast needs devices or out", lambda lib, p: p.comm.broadcast(lib.ones(2))),
]


@pytest.mark.parametrize("call", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_refusals_match_pytorch_cpu_build(call):
    assert _outcome(lambda: call(ember, P)) == _outcome(lambda: call(torch, TP))


STRUCTURES = [
    ("a number", 5),
    ("a tuple", (1, "a")),
    ("a list", [1, [2, 3]]),
    ("a dict", {"a": 1, "b": (2,)}),
    ("a named tuple", Point(1, 2)),
    ("empty", ()),
]


@pytest.mark.parametrize("value", [s[1] for s in STRUCTURES], ids=[s[0] for s in STRUCTURES])
def test_arguments_without_tensors_split_as_in_pytorch(value):
    assert P.scatter(value, [0, 1, 2]) == TP.scatter(value, [0, 1, 2])
    ours = P.scatter_gather.scatter_kwargs((value,), {"k": value}, [0, 1])
    assert ours == TP.scatter_gather.scatter_kwargs((value,), {"k": value}, [0, 1])
    assert P.scatter_gather.scatter_kwargs((), {"k": 1}, [0, 1]) == TP.scatter_gather.scatter_kwargs(
        (), {"k": 1}, [0, 1]
    )


def test_gather_of_non_tensors_matches_pytorch():
    parts = [{"a": None, "b": Point(None, None)}, {"a": None, "b": Point(None, None)}]
    assert P.gather(parts, 0) == TP.gather(parts, 0)


def test_tensors_to_accelerator_indices_say_none_is_available():
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
        P.scatter(ember.ones(4, 2), [0, 1])
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
        P.comm.broadcast(ember.ones(2), [0, 1])


def test_distributed_data_parallel_cpu_is_the_deprecated_name():
    cls = P.DistributedDataParallelCPU
    assert issubclass(cls, P.DistributedDataParallel)
    assert "DistributedDataParallelCPU" in dir(P)
    with (
        pytest.warns(FutureWarning, match="DistributedDataParallelCPU` is deprecated"),
        pytest.raises((RuntimeError, ValueError)),
    ):
        cls(_linear(ember))
