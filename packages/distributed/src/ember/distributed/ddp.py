"""``DistributedDataParallel``: each rank runs the whole module on its share of the batch, and the
gradients are averaged over the ranks during backward (``torch.nn.parallel.DistributedDataParallel``;
``ember.nn.parallel.DistributedDataParallel`` is this class once ``ember-distributed`` is installed).

- At construction, rank 0's parameters and buffers are broadcast (one message per dtype).
- Parameters are put in buckets in reverse order (gradients arrive roughly from the last layer
  back), the first bucket small (1 MiB) so that communication starts early, the others up to
  ``bucket_cap_mb``. A post-accumulate-grad hook on each parameter counts its bucket down; a full
  bucket is copied into one flat buffer and all-reduced without waiting, while backward goes on.
  When the last bucket is launched, every reduction is waited for and written back to ``.grad``.
- ``no_sync()`` skips all of that: gradients accumulate locally until the next synced backward.
- ``find_unused_parameters=True`` walks the autograd graph after forward and marks the parameters
  it does not reach as ready; a parameter no rank used keeps ``grad is None``.
- ``register_comm_hook(state, hook)`` replaces the all-reduce of a bucket: ``hook(state, bucket)``
  returns a ``Future`` of the reduced buffer (``algorithms.ddp_comm_hooks.default_hooks`` has the
  all-reduce and the float16/bfloat16 compression hooks).

``static_graph`` and ``gradient_as_bucket_view`` are accepted; gradients stay their own tensors.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ember.core.tensor import Tensor, share_numpy
from ember.distributed import distributed_c10d as c10d
from ember.distributed._types import ReduceOp
from ember.distributed._work import Future
from ember.nn.modules.module import Module

__all__ = ["DistributedDataParallel", "GradBucket"]

_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024
_DEFAULT_BUCKET_CAP_MB = 25


class GradBucket:
    """One bucket of gradients as a communication hook sees it (``torch.distributed.GradBucket``)."""

    def __init__(self, index: int, buffer: Tensor, params: list[Tensor], is_last: bool) -> None:
        self._index, self._buffer, self._params, self._is_last = index, buffer, params, is_last

    def index(self) -> int:
        return self._index

    def buffer(self) -> Tensor:
        return self._buffer

    def set_buffer(self, buffer: Tensor) -> None:
        self._buffer = buffer

    def parameters(self) -> list[Tensor]:
        return list(self._params)

    def gradients(self) -> list[Tensor]:
        return [p.grad for p in self._params]

    def is_last(self) -> bool:
        return self._is_last


class _Bucket:
    def __init__(self, index: int, params: list[Tensor]) -> None:
        self.index = index
        self.params = params
        self.dtype = params[0].dtype
        self.sizes = [p.numel() for p in params]
        self.offsets = np.cumsum([0, *self.sizes]).tolist()
        self.flat = np.zeros(sum(self.sizes), dtype=params[0]._array.dtype)
        self.pending = len(params)
        self.future: Future | None = None


class DistributedDataParallel(Module):
    """Data parallelism over the ranks of a process group; see the module's notes."""

    def __init__(
        self,
        module: Module,
        device_ids: list[Any] | None = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        init_sync: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        delay_all_reduce_named_params: Any = None,
        param_to_hook_all_reduce: Any = None,
        mixed_precision: Any = None,
        device_mesh: Any = None,
    ) -> None:
        super().__init__()
        if device_mesh is not None or mixed_precision is not None or delay_all_reduce_named_params is not None:
            raise NotImplementedError("DistributedDataParallel: device_mesh, mixed_precision and "
                                      "delay_all_reduce_named_params are not supported yet")  # fmt: skip
        self.module = module
        self.process_group = process_group if process_group is not None else c10d._default_pg()
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.static_graph = static_graph
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        seen: set[int] = set()
        self._params = [p for p in module.parameters() if p.requires_grad and not (id(p) in seen or seen.add(id(p)))]
        if not self._params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient."
            )
        self.bucket_bytes_cap = int((bucket_cap_mb or _DEFAULT_BUCKET_CAP_MB) * 1024 * 1024)
        self._buckets = self._make_buckets()
        self._bucket_of = {id(p): b for b in self._buckets for p in b.params}
        self._hook_state: Any = None
        self._comm_hook: Callable[[Any, GradBucket], Future] | None = None
        self._expecting = False
        self._used: set[int] = set()
        if init_sync:
            self._broadcast([*self._params, *module.buffers()])
        for p in self._params:
            p.register_post_accumulate_grad_hook(self._on_grad_ready)

    # -- construction ---------------------------------------------------------------------------

    def _make_buckets(self) -> list[_Bucket]:
        buckets: list[_Bucket] = []
        current: list[Tensor] = []
        size = 0
        cap = min(_DEFAULT_FIRST_BUCKET_BYTES, self.bucket_bytes_cap)
        for p in reversed(self._params):
            nbytes = p.numel() * p.element_size()
            if current and (size + nbytes > cap or p.dtype is not current[0].dtype):
                buckets.append(_Bucket(len(buckets), current))
                current, size, cap = [], 0, self.bucket_bytes_cap
            current.append(p)
            size += nbytes
        if current:
            buckets.append(_Bucket(len(buckets), current))
        return buckets

    def _broadcast(self, tensors: list[Tensor]) -> None:
        """Rank 0's values into ``tensors`` on every rank, one broadcast per dtype."""
        if self.process_group.size() == 1:
            return
        by_dtype: dict[Any, list[Tensor]] = {}
        for t in tensors:
            by_dtype.setdefault(t.dtype, []).append(t)
        for group in by_dtype.values():
            flat = np.concatenate([t._array.reshape(-1) for t in group])
            c10d.broadcast(share_numpy(flat), src=self.process_group.global_ranks[0], group=self.process_group)
            start = 0
            for t in group:
                n = t.numel()
                t._array[...] = flat[start : start + n].reshape(t._array.shape)
                start += n

    # -- forward ----------------------------------------------------------------------------------

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        from ember.autograd.grad_mode import is_grad_enabled

        if self._expecting and any(b.pending != len(b.params) for b in self._buckets):
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
                "participate in calculating loss. Parameters that did not receive gradient: "
                + ", ".join(self._names_pending())
            )
        if self.broadcast_buffers and self.require_forward_param_sync:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast(buffers)
        output = self.module(*inputs, **kwargs)
        self._expecting = is_grad_enabled() and self.require_backward_grad_sync
        for b in self._buckets:
            b.pending, b.future = len(b.params), None
        self._used = set()
        if self._expecting and self.find_unused_parameters:
            reached = _reachable_leaves(output)
            for p in self._params:
                if id(p) not in reached:
                    self._mark_ready(p, used=False)
        return output

    def _names_pending(self) -> list[str]:
        names = {id(p): n for n, p in self.module.named_parameters()}
        return [names.get(id(p), "?") for b in self._buckets if b.pending != len(b.params) for p in b.params
                if id(p) not in self._used]  # fmt: skip

    # -- backward ----------------------------------------------------------------------------------

    def _on_grad_ready(self, param: Tensor) -> None:
        if self._expecting:
            self._mark_ready(param, used=True)

    def _mark_ready(self, param: Tensor, used: bool) -> None:
        bucket = self._bucket_of[id(param)]
        if used:
            self._used.add(id(param))
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch(bucket)
            if all(b.future is not None for b in self._buckets):
                self._finish()

    def _launch(self, bucket: _Bucket) -> None:
        for p, start, n in zip(bucket.params, bucket.offsets, bucket.sizes, strict=False):
            grad = p.grad
            if grad is None or id(p) not in self._used:
                bucket.flat[start : start + n] = 0
            else:
                bucket.flat[start : start + n] = grad._array.reshape(-1)
        grad_bucket = GradBucket(
            bucket.index, share_numpy(bucket.flat), bucket.params, bucket.index == len(self._buckets) - 1
        )
        hook = self._comm_hook
        if hook is None:
            from ember.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

            bucket.future = allreduce_hook(self.process_group, grad_bucket)
        else:
            bucket.future = hook(self._hook_state, grad_bucket)

    def _finish(self) -> None:
        self._expecting = False
        used_anywhere = None
        if self.find_unused_parameters:
            flags = np.array([1 if id(p) in self._used else 0 for p in self._params], dtype=np.int32)
            c10d.all_reduce(share_numpy(flags), op=ReduceOp.MAX, group=self.process_group)
            used_anywhere = {id(p) for p, f in zip(self._params, flags.tolist(), strict=True) if f}
        for bucket in self._buckets:
            result = bucket.future.wait() if bucket.future is not None else None
            if isinstance(result, list):
                result = result[0]
            values = np.asarray(result._array).reshape(-1)
            for p, start, n in zip(bucket.params, bucket.offsets, bucket.sizes, strict=False):
                if used_anywhere is not None and id(p) not in used_anywhere:
                    continue
                reduced = values[start : start + n].reshape(tuple(p.shape)).astype(p._array.dtype, copy=False)
                if p.grad is None:
                    p.grad = share_numpy(reduced.copy())
                else:
                    p.grad._array[...] = reduced

    # -- public API ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Gradients of the backward passes inside accumulate locally, without communication."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def register_comm_hook(self, state: Any, hook: Callable[[Any, GradBucket], Future]) -> None:
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        if not callable(hook):
            raise TypeError("the communication hook must be callable")
        self._hook_state, self._comm_hook = state, hook

    def _set_static_graph(self) -> None:
        self.static_graph = True

    def join(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("DistributedDataParallel.join (uneven inputs) is not supported yet")


def _reachable_leaves(output: Any) -> set[int]:
    """The ids of the leaf tensors whose gradient accumulators the autograd graph of ``output`` reaches."""
    roots = []
    stack = [output]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            if item.grad_fn is not None:
                roots.append(item.grad_fn)
            elif item.requires_grad:
                roots.append(None)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    found: set[int] = set()
    seen: set[int] = set()
    nodes = [n for n in roots if n is not None]
    while nodes:
        node = nodes.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            found.add(id(variable))
        for next_node, _ in getattr(node, "next_functions", ()):
            if next_node is not None:
                nodes.append(next_node)
    return found
