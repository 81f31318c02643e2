"""``Function``: a differentiable operation whose forward and backward the user writes.

Each ``Function`` subclass gets, when defined, a node class named ``<Name>Backward``. ``apply``
makes one instance of it; that instance is the ``ctx`` that ``forward`` (or ``setup_context``)
fills in and, when an input requires grad under grad mode, the ``grad_fn`` of the outputs: what is
set on ``ctx`` is what ``backward`` reads, and ``y.grad_fn.saved_tensors`` works as in PyTorch.

``apply`` runs ``forward`` with grad mode off, then wires the outputs (``_outputs.py``): new
tensors get the node as ``grad_fn``; an input returned as it came becomes a fresh alias so that it
can take the node as history; inputs marked dirty (modified in place) take the node as their new
history, and a dirty view rebases its base as an in-place op on a view does; outputs marked
non-differentiable and integer outputs carry no gradient. Tensors given to ``save_for_backward``
are saved after that, so an output is saved as an output (no reference cycle) and every saved
tensor is version-checked when ``backward`` unpacks it.

In backward the node materializes missing output gradients as zeros (unless
``ctx.set_materialize_grads(False)``), calls ``backward`` (or ``vjp``), and checks its result as
PyTorch's engine does: trailing extra ``None`` s are dropped, a wrong count or a gradient for a
non-tensor input is an error, a gradient broadcastable to its input is summed down to it, any
other shape is an error, and the dtype is cast to the input's.

Transforms plug in through two hooks, so that this module imports neither of them:

- ``set_transform_handler(fn)``: vmap registers ``fn(function_cls, args, kwargs)``. ``apply`` calls
  it first whenever a tensor argument is of a ``Tensor`` subclass (a batched tensor is one); it
  returns the result, or ``NotImplemented`` to let ``apply`` go on as usual. It implements the
  batching with ``Function.vmap`` or, for ``generate_vmap_rule = True``, by running forward under
  vmap; ``require_setup_context(cls)`` raises PyTorch's error for Functions that cannot be
  transformed, and ``apply_untransformed(cls, *args)`` runs the Function itself without coming
  back to the handler.
- ``set_forward_ad_handler(fn)``: ``fn(function_cls, args, kwargs, run)`` is called on every call;
  it returns ``NotImplemented`` when no argument is dual. Otherwise it calls ``run(args, kwargs)``
  (the usual reverse-mode apply, under forward AD off) to get ``(ctx, outputs)``, then
  ``call_jvp(ctx, args, tangents, outputs)`` for the output tangents, and attaches them.
  ``_function_forward_ad.py`` is that handler, installed where forward AD is.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any

from ember.autograd import _function_node as _node
from ember.autograd._function_node import BackwardCFunction, FunctionCtx
from ember.autograd.grad_mode import no_grad, state
from ember.core import dtypes as D
from ember.core.tensor import Tensor

__all__ = [
    "BackwardCFunction",
    "Function",
    "FunctionCtx",
    "InplaceFunction",
    "apply_untransformed",
    "call_jvp",
    "once_differentiable",
    "require_setup_context",
    "set_forward_ad_handler",
    "set_transform_handler",
]

_transform_handler = None
_forward_ad_handler = None


def set_transform_handler(fn) -> None:
    """Install (or with ``None`` remove) the handler that ``apply`` hands batched calls to."""
    global _transform_handler
    _transform_handler = fn


def set_forward_ad_handler(fn) -> None:
    """Install (or with ``None`` remove) the handler that ``apply`` hands calls to under forward AD."""
    global _forward_ad_handler
    _forward_ad_handler = fn


class FunctionMeta(type):
    """Gives every ``Function`` subclass its node class ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs) -> None:
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        super().__init__(name, bases, attrs)


class _SingleLevelFunction(FunctionCtx, metaclass=FunctionMeta):
    # True: ``ctx.saved_tensors`` may be read once, and frees the saved tensors as it is read.
    clear_saved_tensors_on_access = False

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """Compute the outputs; with ``setup_context`` defined, ``forward`` takes no ``ctx``."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> Any:
        """Fill ``ctx`` from the inputs and the output (when ``forward`` takes no ``ctx``)."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """One gradient per forward input (``None`` where there is none) from the outputs' gradients."""
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom autograd.Function to use it with "
            "backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        """One tangent per output from the inputs' tangents (forward-mode AD)."""
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with forward mode AD."
        )


class Function(_SingleLevelFunction):
    """Base class of custom autograd operations; subclass it and call ``MyFunction.apply(...)``.

    Example::

        class Exp(ember.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, grad):
                (y,) = ctx.saved_tensors
                return grad * y
    """

    generate_vmap_rule = False

    def __init__(self, *args, **kwargs) -> None:
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions are all static, so you "
            "should invoke them on the class itself. Instantiating an autograd function will raise an error in a "
            "future version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use new-style autograd "
            "function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def vmap(info, in_dims, *args):
        """The batched forward: ``(outputs, out_dims)`` for ``args`` batched along ``in_dims``."""
        raise NotImplementedError(
            "To use autograd.Function with vmap, you must either override the vmap staticmethod or set "
            "generate_vmap_rule=True."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        if _uses_setup_context(cls):
            # forward's defaults become explicit inputs: setup_context sees every one.
            signature = _signature(cls)
            if kwargs or signature is not None:
                bound = (signature or inspect.signature(cls.forward)).bind(*args, **kwargs)
                bound.apply_defaults()
                args, kwargs = bound.args, bound.kwargs
        if _transform_handler is not None and _any_subclass(args, kwargs):
            result = _transform_handler(cls, args, kwargs)
            if result is not NotImplemented:
                return result
        if _forward_ad_handler is not None:
            result = _forward_ad_handler(cls, args, kwargs, functools.partial(_run, cls))
            if result is not NotImplemented:
                return result
        ctx, outputs = _run(cls, args, kwargs)
        ctx.saved_for_forward = None  # only a jvp reads them, and none will run
        return outputs


def _signature(cls):
    """``forward``'s signature where binding can change positional arguments (defaults, ``*args``), else None."""
    cached = cls.__dict__.get("_forward_signature")
    if cached is not None and cached[0] is cls.forward:
        return cached[1]
    signature = inspect.signature(cls.forward)
    trivial = all(
        p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and p.default is inspect.Parameter.empty
        for p in signature.parameters.values()
    )
    # Kept on the class itself (a subclass computes its own): classes made on the fly are not kept alive.
    cls._forward_signature = (cls.forward, None if trivial else signature)
    return cls._forward_signature[1]


def _uses_setup_context(cls) -> bool:
    return cls.setup_context is not _SingleLevelFunction.setup_context


def require_setup_context(cls) -> None:
    """Raise PyTorch's error for a Function reaching a transform without ``setup_context``."""
    if not _uses_setup_context(cls):
        raise RuntimeError(
            "In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, ...), it must "
            "override the setup_context staticmethod. For more details, please see "
            "https://pytorch.org/docs/main/notes/extending.func.html"
        )


def _any_subclass(args: tuple, kwargs: dict) -> bool:
    return any(isinstance(a, Tensor) and type(a) is not Tensor for a in (*args, *kwargs.values()))


def _positional(cls, args: tuple, kwargs: dict) -> tuple:
    """Keyword arguments placed at their position in ``forward``'s signature (after ``ctx``)."""
    if not kwargs:
        return args
    params = list(inspect.signature(cls.forward).parameters)
    if not _uses_setup_context(cls):
        params = params[1:]
    out = list(args)
    for name, value in kwargs.items():
        if name not in params:
            raise TypeError(f"forward() got an unexpected keyword argument '{name}'")
        i = params.index(name)
        if i < len(args):
            raise TypeError(f"forward() got multiple values for argument '{name}'")
        out.extend([_node.MISSING] * (i + 1 - len(out)))
        out[i] = value
    for i, value in enumerate(out):
        if value is _node.MISSING:
            raise TypeError(f"forward() missing required argument: '{params[i]}' (position {i})")
    return tuple(out)


def apply_untransformed(cls, *args, **kwargs):
    """``cls.apply(*args, **kwargs)`` without consulting the transform handlers: what a handler calls
    to run the Function's own forward (and record its backward) on the tensors it chooses."""
    ctx, outputs = _run(cls, args, kwargs)
    ctx.saved_for_forward = None
    return outputs


def _run(cls, args: tuple, kwargs: dict | None = None) -> tuple:
    """The reverse-mode apply: ``(ctx, outputs)``."""
    args = _positional(cls, args, kwargs or {})
    ctx = cls._backward_cls()
    executable = _node.prepare(ctx, args)
    with no_grad():
        if _uses_setup_context(cls):
            output = cls.forward(*args)
            cls.setup_context(ctx, args, output)
        else:
            output = cls.forward(ctx, *args)
    return ctx, _node.wire_outputs(ctx, args, output, executable, _uses_setup_context(cls))


def call_jvp(ctx, args: tuple, tangents: list, outputs) -> list:
    """Run ``ctx``'s ``jvp`` on the inputs' tangents (``None`` where an input has none): one per output."""
    grads = []
    for a, t in zip(args, tangents, strict=True):
        if not isinstance(a, Tensor):
            grads.append(None)
        elif t is None and ctx.materialize_grads and a.dtype.category >= D.FLOATING:
            grads.append(a.new_zeros(a._shape))
        else:
            grads.append(t)
    ctx._in_jvp = True
    try:
        result = ctx._forward_cls.jvp(ctx, *grads)
    finally:
        ctx._in_jvp = False
        ctx.saved_for_forward = None
    result = result if isinstance(result, tuple) else (result,)
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    if len(result) != len(outs):
        raise RuntimeError(
            f"Function's jvp returned an invalid number of forward gradients (expected {len(outs)} but got "
            f"{len(result)})"
        )
    for i, (o, g) in enumerate(zip(outs, result, strict=True)):
        if g is None:
            continue
        if not isinstance(g, Tensor):
            raise RuntimeError(f"expected Variable or None (got {type(g).__name__}) for grad output {i}.")
        differentiable = isinstance(o, Tensor) and o.dtype.category >= D.FLOATING and not ctx._is_nondiff(o)
        if not differentiable:
            raise RuntimeError(
                f"Function's jvp returned a gradient at position {i}, but  the corresponding forward output is not "
                "a differentiable Tensor.You should return None at that position instead."
            )
    return list(result)


def once_differentiable(fn):
    """Mark a ``backward`` as not itself differentiable: it runs without recording, and a double
    backward through its results raises instead of silently giving zeros."""

    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        with no_grad():
            outputs = fn(ctx, *args, **kwargs)
        if not state.enabled:
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        many = isinstance(outputs, tuple)
        items = outputs if many else (outputs,)
        node = _node.DelayedError(
            "trying to differentiate twice a function that was marked with @once_differentiable", len(items)
        )
        wrapped = tuple(node.wrap(i, o) for i, o in enumerate(items))
        return wrapped if len(wrapped) != 1 else wrapped[0]

    return wrapper


class InplaceFunction(Function):
    """Kept for code written against older PyTorch: a Function that remembers an ``inplace`` flag."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace
