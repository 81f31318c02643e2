"""Capture of ``ember.nn.attention.flex_attention.flex_attention``: one graph op, not its eager body.

The eager function reads the BlockMask's data with NumPy and runs score_mod on tiles, which capture
cannot trace (each ``.numpy()`` would break the graph). A call instead becomes one node of the op
``higher_order.flex_attention(query, key, value, spec, scale)``: the score_mod, the BlockMask's
mask_mod, block status and block size are read here, at capture time, into a ``FlexSpec`` that the
op names by key (``ember.nn.attention._flex_op``). The graph is guarded on the identity of the
score_mod and of the BlockMask, so another function or another mask compiles again.

What stays out of the graph (a graph break, the call runs eagerly): a score_mod or BlockMask that
capture cannot reach from the frame (made inside the compiled function), non-constant options, inputs
eager would refuse (so eager raises its error), and a score_mod that captures tensors requiring grad
while grad is enabled (their gradients come from the eager backward).
"""

from __future__ import annotations

import inspect
import math
import warnings
from typing import Any

from ember.dynamo.exc import Unsupported
from ember.dynamo.guards import GuardKind
from ember.dynamo.variables.base import ConstantVariable, VariableTracker
from ember.dynamo.variables.containers import TupleVariable


def is_flex_attention(fn: Any) -> bool:
    mod = getattr(fn, "__module__", None)
    if mod != "ember.nn.attention.flex_attention" or getattr(fn, "__name__", None) != "flex_attention":
        return False
    from ember.nn.attention import flex_attention as module

    return fn is module.flex_attention


def entry_for(fn: Any) -> Any:
    """What ``ember.compile(fn)`` runs: ``fn``, or for ``flex_attention`` itself a function that calls it,
    so that capture meets a call (one graph op) rather than the eager body's frame."""
    if not is_flex_attention(fn):
        return fn
    # Capture skips the frames of files under ember/dynamo; this one is compiled from source of its own
    # (a file name capture does not skip), so its frame is captured and its call becomes the graph op.
    namespace = {"flex_attention": fn}
    code = compile(_ENTRY, "<flex_attention entry>", "exec")
    exec(code, namespace)
    return namespace["compiled_flex_attention"]


_ENTRY = """
def compiled_flex_attention(*args, **kwargs):
    return flex_attention(*args, **kwargs)
"""


def _constant(var: VariableTracker, name: str) -> Any:
    if not var.is_python_constant():
        raise Unsupported(f"flex_attention's {name} is not a constant capture can read")
    return var.as_python_constant()


def _guard_identity(tx, var: VariableTracker, name: str) -> None:
    source = getattr(var, "source", None)
    if source is None:
        raise Unsupported(
            f"flex_attention's {name} is made inside the compiled function",
            f"create the {name} outside the compiled function and pass it in (or read it from a global)",
        )
    tx.output.add_guard(source, GuardKind.ID_MATCH, id(_value(var, name)))


def _value(var: VariableTracker, name: str) -> Any:
    from ember.dynamo.variables.objects import ObjectVariable

    if var.is_python_constant():
        return var.as_python_constant()
    if isinstance(var, ObjectVariable):
        return var.value
    raise Unsupported(f"flex_attention's {name} is {var.describe()}, which capture does not hold as a constant")


def call_flex_attention(tx, fn: Any, args: list, kwargs: dict) -> VariableTracker:
    from ember.autograd import is_grad_enabled
    from ember.dynamo.variables.tensor import TensorVariable
    from ember.nn.attention import flex_attention as fa
    from ember.nn.attention._flex_op import FlexSpec, flex_attention_op, register_spec

    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise Unsupported(f"flex_attention called with {e}") from None
    given = bound.arguments
    tensors = [given.get(n) for n in ("query", "key", "value")]
    if not all(isinstance(t, TensorVariable) for t in tensors):
        raise Unsupported("flex_attention's query, key and value are not all tensors of the graph")
    options = {}
    for name in ("scale", "enable_gqa", "return_lse", "return_aux"):  # kernel_options: ignored, as eager does
        options[name] = _constant(given[name], name) if name in given else bound.signature.parameters[name].default
    score_var, mask_var = given.get("score_mod"), given.get("block_mask")
    score_mod = None if score_var is None else _value(score_var, "score_mod")
    block_mask = None if mask_var is None else _value(mask_var, "block_mask")
    if score_mod is not None:
        _guard_identity(tx, score_var, "score_mod")
    if block_mask is not None:
        _guard_identity(tx, mask_var, "block_mask")
    q, k, v = (t.example for t in tensors)
    try:  # eager's checks, on the fake examples (metadata only); a failing call runs eagerly and raises there
        fa._validate(q, k, v, bool(options["enable_gqa"]))
        if score_mod is not None and not callable(score_mod):
            raise TypeError("score_mod is not callable")
        if options["return_lse"] and options["return_aux"] is not None:
            raise ValueError("both return_lse and return_aux")
        if block_mask is not None and not isinstance(block_mask, fa.BlockMask):
            raise TypeError("block_mask is not a BlockMask")
        if block_mask is not None and tuple(block_mask.seq_lengths) != (q.shape[2], k.shape[2]):
            raise ValueError("block_mask was made for other lengths")
        if not all(type(s) is int for t in (q, k, v) for s in t.shape):
            raise TypeError("symbolic sizes")
    except (TypeError, ValueError, NotImplementedError) as e:
        raise Unsupported(f"flex_attention on these inputs runs eagerly ({e})") from None
    if is_grad_enabled() and fa._captured_tensors(score_mod):
        raise Unsupported(
            "flex_attention's score_mod captures tensors that require grad",
            "their gradients come from the eager backward: the call runs eagerly",
        )
    if options["return_lse"]:  # eager's deprecation, said once at capture (the graph has no warnings)
        warnings.warn(
            "return_lse is deprecated and will be removed in v2.10. Please use return_aux=AuxRequest(lse=True) instead.",
            FutureWarning,
            stacklevel=2,
        )
    scale = options["scale"]
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)  # eager's default
    if block_mask is None:
        spec = FlexSpec(score_mod, None, None, q.shape[2], k.shape[2], 0, 0)
    else:
        bq, bk = block_mask.BLOCK_SIZE
        spec = FlexSpec(score_mod, block_mask.mask_mod, block_mask.status(), q.shape[2], k.shape[2], bq, bk)
    key = register_spec(spec)
    result = tx.output.call_graph(
        "call_function", flex_attention_op, [*tensors, ConstantVariable(key), ConstantVariable(scale)], {}
    )
    out, lse, row_max = result.items
    aux = options["return_aux"]
    if aux is not None:
        none = ConstantVariable(None)
        return TupleVariable([out, TupleVariable([lse if aux.lse else none, row_max if aux.max_scores else none],
                              cls=fa.AuxOutput)])  # fmt: skip
    if options["return_lse"]:
        return TupleVariable([out, lse])
    return out
