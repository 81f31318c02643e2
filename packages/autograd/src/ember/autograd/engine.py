"""The backward pass: run the graph's nodes from the roots, each once all its gradients are in.

``run_backward`` counts, for every node reachable from the roots, how many edges lead into it; a
node is ready when that count falls to zero, and ready nodes run latest-created first, leaves'
accumulators before anything else in the order they became ready (the order PyTorch's engine gives on
one device). Gradients meeting at a node's output are summed.

``autograd.grad`` captures gradients instead of accumulating: the gradient reaching an input's edge
is kept, and only nodes on a path to some input run. ``backward(inputs=...)`` accumulates only into
the given tensors. Without ``retain_graph``, each node frees its saved tensors after running.
"""

from __future__ import annotations

import heapq
import itertools

from ember.autograd import anomaly, views
from ember.autograd.grad_mode import state
from ember.autograd.graph import AccumulateGrad, GradientEdge
from ember.autograd.graph_task import task_ids, tasks
from ember.core.aten.factories.factories import ones_like
from ember.core.tensor import Tensor


def _priority(node, pushes) -> tuple:
    """Heap key: leaves' accumulators first, in the order they became ready (as PyTorch's engine,
    which gives them the highest sequence number); other nodes latest-created first."""
    if type(node) is AccumulateGrad:
        return (_FIRST, next(pushes), node)
    return (-node.seq, 0, node)


_FIRST = float("-inf")


def _make_grads(outputs: list, grads: list, is_grads_batched: bool = False) -> list:
    out = []
    for i, (t, g) in enumerate(zip(outputs, grads, strict=True)):
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if t.dtype.category < 2:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {t.dtype}")
            out.append(ones_like(t))
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        shape = g._shape[1:] if is_grads_batched else g._shape
        if shape != t._shape:
            from ember.core.tensor import Size

            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {Size(g._shape)} and output[{i}] has a shape "
                f"of {Size(t._shape)}."
            )
        if (g.dtype.category == 3) != (t.dtype.category == 3):
            raise RuntimeError(
                f"For complex Tensors, both grad_output and output are required to have the same dtype. Mismatch "
                f"in dtype: grad_output[{i}] has a dtype of {g.dtype} and output[{i}] has a dtype of {t.dtype}."
            )
        # PyTorch's engine casts a root's gradient to its output's dtype (integer and bool ones too),
        # so hooks and leaves see the output's dtype.
        out.append(g if g.dtype is t.dtype else g.to(t.dtype))
    return out


def _graph(roots: list) -> dict:
    """Incoming edge count of every node reachable from ``roots``."""
    deps: dict = {}
    seen = set()
    # Several roots may share one node (the outputs of unbind): count its edges once.
    stack = list(dict.fromkeys(node for node in roots if node is not None))
    seen.update(stack)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps


def _needed(roots: list, targets: set) -> set:
    """The nodes from which some target node is reachable (iterative post-order)."""
    needed: set = set()
    done: set = set()
    for root in roots:
        if root is None or root in done:
            continue
        stack = [(root, iter(root.next_functions))]
        done.add(root)
        while stack:
            node, it = stack[-1]
            advanced = False
            for nxt, _ in it:
                if nxt is None:
                    continue
                if nxt not in done:
                    done.add(nxt)
                    stack.append((nxt, iter(nxt.next_functions)))
                    advanced = True
                    break
            if advanced:
                continue
            stack.pop()
            if node in targets or any(n in needed for n, _ in node.next_functions if n is not None):
                needed.add(node)
    return needed


def _tensor_hooks(node, output_nr: int):
    if type(node) is AccumulateGrad:
        return node.variable.__dict__.get("_tensor_hooks")
    hooks = node._output_hooks
    return hooks.get(output_nr) if hooks else None


def run_backward(
    outputs,
    grad_outputs,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs=None,
    allow_unused: bool = False,
    accumulate: bool = True,
    is_grads_batched: bool = False,
):
    outputs = list(outputs)
    for i, t in enumerate(outputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"backward: expected a Tensor, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    grads = _make_grads(outputs, list(grad_outputs), is_grads_batched)
    if retain_graph is None:
        retain_graph = create_graph

    root_edges = [views.edge(t) for t in outputs]
    captures: dict = {}  # (node, input_nr) -> positions in inputs
    input_list = list(inputs) if inputs is not None else None
    if input_list is not None:
        for i, t in enumerate(input_list):
            if isinstance(t, GradientEdge):  # a place in the graph rather than a tensor
                captures.setdefault((t.node, t.output_nr), []).append(i)
                continue
            if not isinstance(t, Tensor):
                raise TypeError(f"inputs: expected Tensors, got {type(t).__name__}")
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            node, nr = views.edge(t)
            captures.setdefault((node, nr), []).append(i)
    captured = [None] * (len(input_list) if input_list is not None else 0)

    roots = [e[0] for e in root_edges]
    deps = _graph(roots)
    needed = None
    if input_list is not None:
        needed = _needed(roots, {node for node, _ in captures})

    buffers: dict = {}
    for (node, nr), g in zip(root_edges, grads, strict=True):
        buf = buffers.setdefault(node, {})
        buf[nr] = g if nr not in buf else buf[nr] + g
    ready = []
    pushes = itertools.count()
    for node in dict.fromkeys(roots):
        if deps.get(node, 0) == 0:
            heapq.heappush(ready, _priority(node, pushes))

    prev = state.enabled
    state.enabled = create_graph
    tasks.stack.append((next(task_ids), input_list is None, (deps, set(roots), needed, accumulate)))
    try:
        heappop, heappush = heapq.heappop, heapq.heappush
        while ready:
            node = heappop(ready)[2]
            buf = buffers.pop(node, None)
            n = getattr(node, "n_outputs", 1)
            if buf is None:
                grads_in = [None] * n
            else:
                top = max(buf) + 1
                if top > n:
                    n = top
                grads_in = [buf.get(i) for i in range(n)]
            is_acc = type(node) is AccumulateGrad
            # A node no requested input needs does not run, and neither do its hooks.
            runs = needed is None or node in needed
            # Tensor hooks and retain_grad live on the node (or, for a leaf, on its tensor): most nodes have none.
            if runs and (is_acc or node._output_hooks or node.metadata_):
                for i in range(n):
                    hooks = _tensor_hooks(node, i)
                    if hooks and grads_in[i] is not None:
                        for hook in list(hooks.values()):
                            r = hook(grads_in[i])
                            if r is not None:
                                grads_in[i] = r
                    retains = _retains(node, i)
                    if retains is not None and grads_in[i] is not None:
                        retains(grads_in[i])
            if node._pre_hooks and runs:
                for hook in list(node._pre_hooks.values()):
                    r = hook(tuple(grads_in))
                    if r is not None:
                        grads_in = list(r)
            if captures:
                for i in range(n):
                    positions = captures.get((node, i))
                    if positions:
                        g = grads_in[i]
                        if is_acc and g is not None and node.variable.__dict__:
                            g = _as_grad_dtype(node.variable, g)
                        for p in positions:
                            captured[p] = g
            run = not (is_acc and (not accumulate or (input_list is not None and (node, 0) not in captures)))
            if needed is not None and node not in needed:
                run = False
            if run:
                for g in grads_in:
                    if g is not None:
                        break
                else:
                    run = False  # no gradient reached this node
            grads_out = None
            if run:
                grads_out = node.apply(tuple(grads_in))
                if anomaly.state.enabled:
                    anomaly.check(node, grads_out)
                if node._hooks:
                    for hook in list(node._hooks.values()):
                        r = hook(tuple(grads_out), tuple(grads_in))
                        if r is not None:
                            grads_out = tuple(r)
                if not retain_graph:
                    node.release()
            elif not is_acc and not retain_graph and (needed is None or node in needed):
                node.release()
            n_out = len(grads_out) if grads_out is not None else 0
            for k, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                if k < n_out:
                    g = grads_out[k]
                    if g is not None:
                        buf = buffers.get(nxt)
                        if buf is None:
                            buffers[nxt] = {nr: g}
                        else:
                            old = buf.get(nr)
                            buf[nr] = g if old is None else old + g
                left = deps[nxt] - 1
                deps[nxt] = left
                if left == 0:
                    heappush(ready, _priority(nxt, pushes))
    finally:
        state.enabled = prev
        tasks.stack.pop()

    if input_list is None:
        return None
    if accumulate:
        from ember.autograd.accumulate import accumulate_into

        for t, g in zip(input_list, captured, strict=True):
            if isinstance(t, Tensor) and t.grad_fn is not None and g is not None:
                accumulate_into(t, g)
        return None
    for i, g in enumerate(captured):
        if g is None and not allow_unused:
            raise RuntimeError(
                f"The differentiated Tensor at index {i} appears to not have been used in the graph. Set "
                "allow_unused=True if this is the desired behavior."
            )
        if g is not None and not create_graph and g.requires_grad:
            captured[i] = g.detach()
    return tuple(captured)


def _as_grad_dtype(variable: Tensor, grad: Tensor) -> Tensor:
    """A leaf's captured gradient in its ``grad_dtype`` (where set to another dtype than its own)."""
    wanted = variable.__dict__.get("_grad_dtype", variable.dtype)
    return grad if wanted is None or wanted is grad.dtype else grad.to(wanted)


def _retains(node, output_nr: int):
    """The tensor whose ``retain_grad`` asked for this output's gradient, as a callback."""
    meta = node.metadata_
    refs = meta.get("_retains_grad") if meta else None
    ref = refs.get(output_nr) if refs else None
    t = ref() if ref is not None else None
    if t is None:
        return None
    return lambda g: _retain(t, g)


def _retain(t: Tensor, g: Tensor) -> None:
    if t.grad is None:
        t.grad = g.clone() if g.requires_grad else g.detach().clone()
    else:
        t.grad = t.grad + g
