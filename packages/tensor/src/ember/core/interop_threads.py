"""Inter-op parallelism's thread count (``get_num_interop_threads``/``set_num_interop_threads``).

PyTorch runs independent ops concurrently on an inter-op pool (``torch.jit.fork`` and a few ops use
it). Ember runs every op on the calling thread and splits work only inside an op (``threads.py``),
so the number is only recorded; its rules are PyTorch's: positive, and set at most once.
"""

from __future__ import annotations

from ember.core.threads import _cores

_state = {"threads": _cores(), "set": False}


def get_num_interop_threads() -> int:
    """The number of inter-op threads (the number of cores unless set)."""
    return _state["threads"]


def set_num_interop_threads(n: int) -> None:
    """Record ``n`` inter-op threads; allowed once, as in PyTorch."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_num_interop_threads(): argument 'int' must be int, not {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _state["set"]:
        raise RuntimeError(
            "Error: cannot set number of interop threads after parallel work has started or "
            "set_num_interop_threads called"
        )
    _state["threads"], _state["set"] = n, True
