"""``BatchedTensor``: a tensor that stands for a batch of tensors, one per vmap lane.

It wraps ``value``, a real tensor holding every lane with the batch at dimension ``bdim``, and
reports the shape of one lane (its *logical* shape). ``level`` says which ``vmap`` made it: nested
vmaps stack levels 1, 2, ..., and a wrapper's value may itself be a wrapper of a lower level, so
``vmap(vmap(f))`` batches twice without either level knowing of the other.

Every op on a wrapper reaches ``__ember_dispatch__`` (level 3 of the dispatcher). The highest level
among the arguments takes the call: its wrappers are replaced by their values with the batch moved
to dimension 0, wrappers of lower levels pass through as ordinary tensors, and the op's batching rule
(``table.RULES``) computes on the values; every tensor it returns is batched at dimension 0 and is
wrapped again at the same level. While a rule runs, only lower levels are visible (``visible``),
so ops that the rule calls on lower-level wrappers batch at their own level.

Autograd sits above this level: a wrapper that requires grad (made by ``grad`` inside ``vmap``)
records one node per op on wrappers, and the derivative formulas then run on wrappers too, which is
how ``vmap(grad(f))`` computes per-sample gradients in one batched pass. A value that requires grad
(``grad`` outside ``vmap``) records below, in the rule's ops on plain tensors.
"""

from __future__ import annotations

import threading

from ember.core.tensor import Tensor, make_wrapper_subclass


class Level:
    """One active ``vmap`` call: its batch size and its randomness setting."""

    __slots__ = ("depth", "randomness", "size")

    def __init__(self, depth: int, size: int, randomness: str) -> None:
        self.depth = depth
        self.size = size
        self.randomness = randomness


class _State(threading.local):
    def __init__(self) -> None:
        self.levels: list[Level] = []
        # How many of ``levels`` the ops now running may see: a rule at level L sees levels below L.
        self.visible = 0


state = _State()


def visible_level() -> Level | None:
    return state.levels[state.visible - 1] if state.visible else None


class Hidden:
    """``with Hidden(depth):`` only levels below ``depth`` are visible (a rule at ``depth`` runs)."""

    __slots__ = ("depth", "saved")

    def __init__(self, depth: int) -> None:
        self.depth = depth

    def __enter__(self):
        self.saved = state.visible
        state.visible = self.depth - 1
        return self

    def __exit__(self, *exc) -> None:
        state.visible = self.saved


_DATA_ERROR = (
    "vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. We don't support "
    "that yet, please shout over at https://github.com/pytorch/functorch/issues/257 ."
)
_ITEM_ERROR = (
    "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() on a "
    "Tensor, please try to rewrite what you're doing with other operations. If error is occurring somewhere inside "
    "PyTorch internals, please file a bug report."
)


class BatchedTensor(Tensor):
    """A batch of tensors with the logical shape of one; see the module docstring."""

    # Its sizes and strides are one lane's: autograd locates its views by index or replay instead.
    _refuses_as_strided = True

    def __repr__(self) -> str:
        return f"BatchedTensor(lvl={self._level}, bdim={self._bdim}, value=\n{self._value!r}\n)"

    @classmethod
    def __ember_dispatch__(cls, op, types, args, kwargs):
        from ember.func._vmap.table import run_rule

        return run_rule(op, args, kwargs)

    # Reading values is per lane, which a batch cannot answer.
    def item(self):
        raise RuntimeError(_ITEM_ERROR)

    def tolist(self):
        raise RuntimeError(_ITEM_ERROR)

    def __bool__(self) -> bool:
        raise RuntimeError(_DATA_ERROR)

    def numpy(self, *, force: bool = False):
        raise RuntimeError("vmap: cannot convert a batched tensor to NumPy inside vmap")

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("vmap: cannot convert a batched tensor to NumPy inside vmap")

    def __ember_shallow__(self) -> BatchedTensor:
        """A plain alias without autograd state (what autograd keeps of a saved output)."""
        alias = wrap(self._value, self._bdim, self._level)
        alias._owner = self._owner
        return alias


def wrap(value: Tensor, bdim: int, level: int) -> BatchedTensor:
    """``value`` with its batch at ``bdim``, as a wrapper at ``level``."""
    shape = value._shape[:bdim] + value._shape[bdim + 1 :]
    stride = value._stride[:bdim] + value._stride[bdim + 1 :]
    t = make_wrapper_subclass(BatchedTensor, shape, value.dtype, value.device, stride)
    # Sharing the value's storage shares its version counter: autograd then sees in-place changes.
    t._storage = value._storage
    t._offset = value._offset
    t._value = value
    t._bdim = bdim
    t._level = level
    # The vmap call itself: a wrapper that escaped its vmap must not pass for one of a later vmap at the
    # same depth.
    t._owner = state.levels[level - 1] if level <= len(state.levels) else None
    return t


def level_of(t) -> int:
    return t._level if type(t) is BatchedTensor else 0


def front(t: BatchedTensor) -> Tensor:
    """The value of ``t`` with its batch at dimension 0 (a view)."""
    v = t._value
    return v if t._bdim == 0 else v.movedim(t._bdim, 0)


def unwrap_to(t, level: int, size: int, out_dim: int) -> Tensor:
    """The tensor of all lanes of ``t`` at ``level``, with the batch at ``out_dim``."""
    if type(t) is BatchedTensor and t._level == level:
        v, bdim = t._value, t._bdim
        out_dim = out_dim + v.ndim if out_dim < 0 else out_dim
        if not 0 <= out_dim < v.ndim:
            from ember.core.layout import normalize_dim

            normalize_dim(out_dim - v.ndim if out_dim >= v.ndim else out_dim, v.ndim)
        return v if bdim == out_dim else v.movedim(bdim, out_dim)
    # Not batched at this level: every lane sees the same tensor.
    n = t.ndim + 1
    d = out_dim + n if out_dim < 0 else out_dim
    from ember.core.layout import normalize_dim

    normalize_dim(out_dim, n)
    shape = list(t.shape)
    shape.insert(d, 1)
    lifted = t.reshape(shape)
    shape[d] = size
    return lifted.expand(shape)
