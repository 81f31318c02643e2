"""The backward graph: nodes, their edges, saved tensors and hooks.

A ``Node`` takes the gradients of its forward outputs and returns those of its forward inputs;
``next_functions`` holds one ``(node, input_nr)`` edge per input (``(None, 0)`` for inputs that need
no gradient). Leaves that require grad end in an ``AccumulateGrad`` node, one per tensor, which adds
into ``.grad``. A tensor's hooks are pre-hooks of its ``grad_fn`` for its output number (or of its
``AccumulateGrad``, for a leaf).

Saved tensors remember the version of their storage when saved; unpacking one that changed since
raises PyTorch's error naming the node. ``release`` frees them after a backward that does not
retain the graph.

``saved_tensors_hooks(pack, unpack)`` changes how tensors are saved while it is active: the saved
tensor keeps only ``pack(tensor)`` and the autograd identity of the tensor (its ``grad_fn`` and
output number, or its leaf's accumulator); unpacking calls ``unpack`` and gives the result that
identity back, so double backward still reaches the original graph. As in PyTorch, the version
check is skipped then: what the hooks keep is theirs to keep consistent. ``save_on_cpu`` and
activation checkpointing are such hooks.
"""

from __future__ import annotations

import itertools
import re
import threading
import weakref
from typing import NamedTuple

from ember.autograd.graph_task import current_graph_task_id, tasks
from ember.core.aten.factories.factories import empty_function
from ember.core.dtypes import legacy_type_name
from ember.core.tensor import Tensor, _new

_sequence = itertools.count()


# What autograd keeps on a tensor: a saved output's alias must not carry it (it gets its own).
_AUTOGRAD_STATE = frozenset(
    {
        "_base",
        "_grad",
        "_grad_acc",
        "_grad_acc_keep",
        "_output_nr",
        "_rebases",
        "_seen_rebases",
        "_tensor_hooks",
        "grad",
        "grad_fn",
        "requires_grad",
    }
)


def shallow(t: Tensor) -> Tensor:
    """An alias of ``t`` (same type, storage and geometry) without autograd state.

    A subclass keeps its type and its own attributes, so that a formula reading a saved output sees
    the kind of tensor the forward returned; a wrapper subclass that holds its data elsewhere (vmap's
    batched tensors) makes its own alias through ``__ember_shallow__``. A saved output keeps its
    forward-mode tangent (forward over reverse).
    """
    cls = type(t)
    if cls is not Tensor:
        alias = getattr(t, "__ember_shallow__", None)
        if alias is not None:
            return alias()
    out = _new(cls, t._storage, t._shape, t._stride, t._offset, t.dtype, t._array)
    if cls is Tensor:
        if t._fw_grad is not None:
            out._fw_grad = t._fw_grad
        return out
    for name, value in t.__dict__.items():
        if name not in _AUTOGRAD_STATE:
            out.__dict__[name] = value
    for klass in cls.__mro__:
        if klass is Tensor:
            break
        for name in klass.__dict__.get("__slots__", ()):
            if name not in ("__dict__", "__weakref__") and hasattr(t, name):
                setattr(out, name, getattr(t, name))
    return out


class RemovableHandle:
    _ids = itertools.count()

    def __init__(self, hooks: dict) -> None:
        self.id = next(RemovableHandle._ids)
        self._hooks = weakref.ref(hooks) if hooks is not None else None

    def remove(self) -> None:
        hooks = self._hooks() if self._hooks is not None else None
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class _HookDict(dict):
    """A dict that a weakref can point at (handles must not keep the hooks alive)."""

    __slots__ = ("__weakref__",)


class Node:
    # Hooks, metadata and the anomaly trace are rare: class-level defaults keep making a node cheap.
    __slots__ = ("__dict__", "__weakref__", "next_functions", "seq")
    _pre_hooks: _HookDict | None = None  # whole-node pre-hooks: fn(grad_outputs) -> grad_outputs
    _output_hooks: dict | None = None  # output_nr -> _HookDict of tensor hooks
    _hooks: _HookDict | None = None  # post-hooks: fn(grad_inputs, grad_outputs)
    metadata_: dict | None = None
    _anomaly_trace: str | None = None

    def __init__(self, next_functions: tuple = ()) -> None:
        self.next_functions = next_functions
        self.seq = next(_sequence)

    # -- what subclasses define ------------------------------------------------------------------

    def apply(self, grads: tuple) -> tuple:
        raise NotImplementedError

    def release(self) -> None:
        """Free saved tensors once a backward that does not retain the graph has run this node."""

    def name(self) -> str:
        return type(self).__name__

    # -- PyTorch's Node surface ------------------------------------------------------------------

    @property
    def metadata(self) -> dict:
        if self.metadata_ is None:
            self.metadata_ = {}
        return self.metadata_

    def register_hook(self, fn) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` after the node runs; a non-None result replaces grad_inputs."""
        if self._hooks is None:
            self._hooks = _HookDict()
        handle = RemovableHandle(self._hooks)
        self._hooks[handle.id] = fn
        return handle

    def register_prehook(self, fn) -> RemovableHandle:
        """``fn(grad_outputs)`` before the node runs; a non-None result replaces grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = _HookDict()
        handle = RemovableHandle(self._pre_hooks)
        self._pre_hooks[handle.id] = fn
        return handle

    def _register_output_hook(self, output_nr: int, fn) -> RemovableHandle:
        if self._output_hooks is None:
            self._output_hooks = {}
        hooks = self._output_hooks.setdefault(output_nr, _HookDict())
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle

    def __call__(self, *grads):
        return self.apply(grads)

    def _sequence_nr(self) -> int:
        return self.seq

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"


FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have already "
    "been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). "
    "Specify retain_graph=True if you need to backward through the graph a second time or if you need to access "
    "saved tensors after calling backward."
)


class SavedTensor:
    """A tensor saved for backward: its data alias, version at save time, and how to rebuild it."""

    # Most saved tensors are inputs saved plainly: they set two slots, and the fields of the rarer kinds
    # (outputs, tensors packed by hooks) go to the instance dict over these class defaults.
    __slots__ = ("__dict__", "_data", "_version")
    _is_output = False
    _unpack_hook = None  # set when saved under saved_tensors_hooks: then _data is (packed,)
    _grad_fn = None
    _output_nr = 0
    _requires_grad = False

    def __init__(self, t: Tensor, is_output: bool = False) -> None:
        if t._inference:
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. To work around you can make a clone to get a "
                "normal tensor and use it in autograd."
            )
        self._version = t._storage.version
        if not is_output and not (_hooks_in_use and _hooks.stack):
            self._data = t  # an input: the other fields are read from it when needed
            return
        self._is_output = is_output
        if _hooks.stack:
            self._save_packed(t, *_hooks.stack[-1])
            return
        if is_output:
            # An output keeps no strong reference to its own node (that would be a cycle).
            self._data = shallow(t)
            self._grad_fn = weakref.ref(t.grad_fn) if t.grad_fn is not None else None
            self._requires_grad = t.requires_grad
            self._output_nr = t._output_nr
        else:
            self._data = t  # an input: the other fields are read from it when needed

    @classmethod
    def of_input(cls, t: Tensor, version: int) -> SavedTensor:
        """The saved form of input ``t`` saved at ``version`` (for nodes that keep the tensor itself)."""
        saved = cls.__new__(cls)
        saved._data, saved._version = t, version
        return saved

    def _save_packed(self, t: Tensor, pack, unpack) -> None:
        """Keep ``pack(t)`` and how to rebuild ``t``'s place in the graph, not ``t`` itself."""
        fn = t.grad_fn
        if fn is None:
            # A leaf: its accumulator is what a rebuilt alias must point to.
            self._grad_fn = grad_accumulator(t) if t.requires_grad else None
        elif self._is_output:
            self._grad_fn = weakref.ref(fn)  # an output must not keep its own node alive
        else:
            self._grad_fn = fn
        self._output_nr = t._output_nr
        self._requires_grad = t.requires_grad
        self._unpack_hook = unpack
        self._data = (pack(t),)

    def _unpack_packed(self) -> Tensor:
        data = self._unpack_hook(self._data[0])
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                f"{type(data).__name__}"
            )
        out = shallow(data)
        fn = self._grad_fn
        if type(fn) is weakref.ref:
            fn = fn()
        if type(fn) is AccumulateGrad:
            out.requires_grad = True
            out._grad_acc = weakref.ref(fn)
        elif fn is not None:
            out.grad_fn = fn
            out._output_nr = self._output_nr
            out.requires_grad = True
        elif self._requires_grad:
            out.requires_grad = True
        return out

    def unpack(self, node: Node) -> Tensor:
        data = self._data
        if data is not None and self._unpack_hook is not None:
            return self._unpack_packed()
        if data is None:
            raise RuntimeError(FREED_MESSAGE)
        if data._storage.version != self._version:
            raise RuntimeError(self._modified_message(data))
        if self._is_output:
            out = shallow(data)
            grad_fn = self._grad_fn() if self._grad_fn is not None else None
            if grad_fn is not None:
                out.grad_fn = grad_fn
                out._output_nr = self._output_nr
                out.requires_grad = True
            elif self._requires_grad:
                out.requires_grad = True
            return out
        return data

    def _modified_message(self, data: Tensor) -> str:
        from ember.autograd.anomaly import state as anomaly

        fn = self._grad_fn() if self._is_output and self._grad_fn is not None else data.grad_fn
        nr = self._output_nr if self._is_output else data._output_nr
        # PyTorch names the producing op without its node suffix: "output 0 of Mul".
        which = f", which is output {nr} of {re.sub(r'Backward[0-9]*$', '', fn.name())}," if fn is not None else ""
        hint = (
            "the backtrace further above shows the operation that failed to compute its gradient. The variable in "
            "question was changed in there or anywhere later. Good luck!"
            if anomaly.enabled
            else "enable anomaly detection to find the operation that failed to compute its gradient, with "
            "ember.autograd.set_detect_anomaly(True, check_nan=False)."
        )
        return (
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[{legacy_type_name(data.dtype, prefix='ember')} {list(data._shape)}]{which} is at version "
            f"{data._storage.version}; expected version {self._version} instead. Hint: {hint}"
        )

    def release(self) -> None:
        self._data = None


class _HooksState(threading.local):
    def __init__(self) -> None:
        self.stack: list = []  # (pack, unpack) pairs, innermost last
        self.disabled: str | None = None  # the error message of disable_saved_tensors_hooks


_hooks = _HooksState()
# How many saved_tensors_hooks blocks are open in all threads: saving reads the thread's own stack only
# when some are (a module global costs less to read than a thread-local attribute).
_hooks_in_use = 0
_hooks_lock = threading.Lock()


class saved_tensors_hooks:
    """Within this block, tensors saved for backward are kept as ``pack_hook(tensor)``.

    ``unpack_hook(packed)`` must give back a tensor with the same content when backward needs it.
    Nested blocks: the innermost pair applies.
    """

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        global _hooks_in_use
        if _hooks.disabled is not None:
            raise RuntimeError(_hooks.disabled)
        _hooks.stack.append((self.pack_hook, self.unpack_hook))
        with _hooks_lock:
            _hooks_in_use += 1
        return self

    def __exit__(self, *exc) -> None:
        global _hooks_in_use
        _hooks.stack.pop()
        with _hooks_lock:
            _hooks_in_use -= 1


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors live on the CPU and go back to their device when backward unpacks them."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack(tensor: Tensor):
            if not pin_memory:
                return (tensor.device, tensor.cpu())
            # Pinned memory is a property of CUDA hosts; a CPU copy stands for it elsewhere.
            packed = empty_function(tensor._shape, dtype=tensor.dtype, device="cpu")
            packed.copy_(tensor)
            return (tensor.device, packed)

        def unpack(packed) -> Tensor:
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Within this block, entering ``saved_tensors_hooks`` raises ``RuntimeError(error_message)``; so does
    entering this block while such hooks are active."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message
        self.prev: str | None = None

    def __enter__(self) -> None:
        if _hooks.stack:
            raise RuntimeError(self.error_message)
        self.prev = _hooks.disabled
        _hooks.disabled = self.error_message

    def __exit__(self, *exc) -> None:
        _hooks.disabled = self.prev


class AccumulateGrad(Node):
    """The end of a leaf's path: adds the gradient into ``variable.grad``."""

    __slots__ = ("_post_acc_hooks", "variable")

    def __init__(self, variable: Tensor) -> None:
        super().__init__(())
        self.variable = variable
        self._post_acc_hooks: _HookDict | None = None

    def apply(self, grads: tuple) -> tuple:
        from ember.autograd.accumulate import accumulate_into

        accumulate_into(self.variable, grads[0])
        if self._post_acc_hooks:
            for hook in list(self._post_acc_hooks.values()):
                hook(self.variable)
        return ()


class GradientEdge(NamedTuple):
    """A place in the graph: where the gradient of some tensor enters ``node`` (input ``output_nr``).

    ``autograd.grad`` and ``backward(inputs=...)`` accept one where they accept a tensor.
    """

    node: Node
    output_nr: int


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge through which ``tensor``'s gradient flows: its ``grad_fn`` and output number, or its
    accumulator for a leaf."""
    from ember.autograd.views import edge

    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    return GradientEdge(*edge(tensor))


class _MultiHandle:
    """Removes the tensor hooks that together make one multi-grad hook."""

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def will_engine_execute_node(node) -> bool:
    """Whether the backward running in this thread reaches ``node`` and needs it (for multi-grad hooks)."""
    if not tasks.stack:
        raise RuntimeError("_will_engine_execute_node should only be called during the backward pass")
    deps, roots, needed, accumulate = tasks.stack[-1][2]
    if not accumulate and type(node) is AccumulateGrad:
        raise RuntimeError(
            "A leaf node was passed to _will_engine_execute_node but we are currently running autograd.grad(). This "
            "is currently not supported."
        )
    if needed is not None:
        return node in needed
    return node in deps or node in roots


def register_multi_grad_hook(tensors, fn, *, mode: str = "all"):
    """One hook over several tensors' gradients, per backward pass.

    ``"all"``: ``fn(grads)`` once the gradients of every tensor this backward reaches are computed
    (``None`` for the others). ``"any"``: ``fn(grad)`` with the first of them.
    """
    from ember.autograd.views import edge

    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = list(tensors)
    lock = threading.Lock()
    if mode == "any":
        ran: set = set()

        def first(grad) -> None:
            task = current_graph_task_id()
            with lock:
                if task in ran:
                    return
                ran.add(task)
            fn(grad)

        return _MultiHandle(tuple(t.register_hook(first) for t in tensors))

    nodes = [edge(t)[0] for t in tensors]
    seen: dict = {}  # task id -> (grads so far, how many to wait for)

    def inner(i: int):
        def hook(grad) -> None:
            task = current_graph_task_id()
            with lock:
                if task not in seen:
                    expected = sum(will_engine_execute_node(n) for n in nodes)
                    seen[task] = ([None] * len(tensors), expected, [0])
                grads, expected, count = seen[task]
                grads[i] = grad
                count[0] += 1
                done = count[0] == expected
                if done:
                    del seen[task]
            if done:
                fn(grads)

        return hook

    return _MultiHandle(tuple(t.register_hook(inner(i)) for i, t in enumerate(tensors)))


def allow_mutation_on_saved_tensors():
    """Within this block, tensors saved for backward may be modified in place (``_saved_mutation.py``)."""
    from ember.autograd._saved_mutation import allow_mutation_on_saved_tensors as block

    return block()


def increment_version(tensor) -> None:
    """Bump the version of ``tensor`` (or of each tensor given), as an in-place op autograd did not see would."""
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._bump_version()


def grad_accumulator(t: Tensor) -> AccumulateGrad:
    """The leaf's one ``AccumulateGrad`` node, kept alive by the graphs that use it."""
    ref = t.__dict__.get("_grad_acc")
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        t._grad_acc = weakref.ref(node)
    return node


def gradient_edge(t: Tensor) -> tuple:
    """Where the gradient of ``t`` goes: its grad_fn and output number, or its accumulator."""
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t.requires_grad:
        return (grad_accumulator(t), 0)
    return (None, 0)
