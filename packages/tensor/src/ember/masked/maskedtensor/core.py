"""``MaskedTensor``: a tensor whose elements are each either specified or masked out.

A ``MaskedTensor`` wraps two tensors of one shape, the data and a boolean mask (True: specified),
and reports the data's shape and dtype. Every op on it reaches ``__ember_dispatch__`` (the rules
are in ``ember.masked.maskedtensor.rules``): pointwise ops run on the data and keep the mask
(operands' masks must match), views apply to data and mask alike, and reductions are
``ember.masked``'s, whose result is specified wherever some element of its group was. Autograd
sits above the subclass level, so gradients through pointwise ops and views of a MaskedTensor that
requires grad are MaskedTensors too, computed by the same rules. Not built: gradients through
reductions (they raise ``NotImplementedError`` on a MaskedTensor that requires grad), a
differentiable ``get_data``, and sparse layouts.
"""

from __future__ import annotations

import warnings
from typing import Any

from ember.core import dtypes as D
from ember.core.surface import strided
from ember.core.tensor import Tensor, make_wrapper_subclass

__all__ = ["MaskedTensor", "is_masked_tensor"]

_SUPPORTED = (D.float16, D.float32, D.float64, D.bool_, D.int8, D.int16, D.int32, D.int64)


def is_masked_tensor(obj: Any, /) -> bool:
    """Whether ``obj`` is a MaskedTensor."""
    return isinstance(obj, MaskedTensor)


def _element_text(value, formatter: str) -> str:
    return formatter.format(value) if isinstance(value, float) else str(value)


def _masked_str(data: Tensor, mask: Tensor, formatter: str) -> str:
    """PyTorch's layout: nested brackets, an element per slot, ``--`` where masked out."""
    if data.dim() == 1:
        texts = [_element_text(v, formatter) for v in data.tolist()]
        flags = mask.tolist()
        width = max((len(t) if m else 8 for t, m in zip(texts, flags, strict=True)), default=0)
        return "[" + ", ".join(t if m else "--".rjust(width) for t, m in zip(texts, flags, strict=True)) + "]"
    rows = [_masked_str(d, m, formatter) for d, m in zip(data, mask, strict=True)]
    rows = ["\n".join("  " + line for line in row.split("\n")) for row in rows]
    return "[\n" + ",\n".join(rows) + "\n]"


class MaskedTensor(Tensor):
    """``MaskedTensor(data, mask, requires_grad=False)``: copies of ``data`` and of the boolean ``mask``."""

    def __new__(cls, data: Tensor, mask: Tensor, requires_grad: bool = False) -> MaskedTensor:
        if is_masked_tensor(data) or not isinstance(data, Tensor):
            raise TypeError("data must be a Tensor")
        if is_masked_tensor(mask) or not isinstance(mask, Tensor):
            raise TypeError("mask must be a Tensor")
        warnings.warn(
            "The PyTorch API of MaskedTensors is in prototype stage "
            "and will change in the near future. Please open a Github issue "
            "for features requests and see our documentation on the torch.masked "
            "module for further information about the project.",
            UserWarning,
            stacklevel=2,
        )
        if data.requires_grad:
            warnings.warn(
                "It is not recommended to create a MaskedTensor with a tensor that requires_grad. "
                "To avoid this, you can use data.detach().clone()",
                UserWarning,
                stacklevel=2,
            )
        return cls._wrap(data.detach().clone(), mask.detach().clone(), requires_grad)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass  # everything is done in __new__

    @classmethod
    def _wrap(cls, data: Tensor, mask: Tensor, requires_grad: bool = False) -> MaskedTensor:
        """A MaskedTensor around ``data`` and ``mask`` themselves (no copies, no warning)."""
        if data.layout is not strided or mask.layout is not strided:
            if data.layout is not mask.layout:
                raise TypeError("data and mask must have the same layout.")
            raise NotImplementedError("MaskedTensor: sparse data and masks are not supported in Ember")
        if mask.dtype != D.bool_:
            raise TypeError("mask must have dtype bool.")
        if data.dtype not in _SUPPORTED:
            raise TypeError(f"{data.dtype} is not supported in MaskedTensor.".replace("ember.", "torch."))
        if data.dim() != mask.dim():
            raise ValueError("data.dim() must equal mask.dim()")
        if tuple(data.shape) != tuple(mask.shape):
            raise ValueError("data.size() must equal mask.size()")
        t = make_wrapper_subclass(cls, data.shape, data.dtype, data.device, data.stride(), requires_grad)
        t._masked_data = data
        t._masked_mask = mask
        return t

    def get_data(self) -> Tensor:
        """The data, masked-out elements included (detached: no gradient flows back through it)."""
        return self._masked_data.detach()

    def get_mask(self) -> Tensor:
        """The boolean mask: True where an element is specified."""
        return self._masked_mask

    def to_tensor(self, value) -> Tensor:
        """A plain tensor: the data, with ``value`` where masked out."""
        return self.get_data().masked_fill(~self.get_mask(), value)

    def is_sparse_coo(self) -> bool:
        return False

    def is_sparse_csr(self) -> bool:
        return False

    @property
    def is_sparse(self) -> bool:
        return False

    def __repr__(self) -> str:
        formatter = "{0:8.4f}"
        data, mask = self._masked_data, self._masked_mask
        if data.dim() == 0:
            text = _element_text(data.item(), formatter) if mask.item() else "--"
            return f"MaskedTensor({text}, {mask.item()})"
        body = "\n".join("  " + line for line in _masked_str(data, mask, formatter).split("\n"))
        return "MaskedTensor(\n" + body + "\n)"

    __str__ = __repr__

    # The rules of each op (ember.masked.maskedtensor.rules, which the package imports after this
    # module and which installs itself here).
    _rules: Any = None

    @classmethod
    def __ember_dispatch__(cls, func, types, args, kwargs):
        return MaskedTensor._rules(func, args, kwargs)
