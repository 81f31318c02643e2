"""Pointwise ops that make and conjugate complex tensors: ``conj_physical``, ``complex``, ``polar``.

PyTorch's ``conj()`` is a lazy view that sets a conjugate bit, resolved when the data is read.
Ember's tensors have no such bit: ``conj()`` of a complex tensor computes the conjugate into a new
tensor (what PyTorch's ``conj_physical`` does), so ``is_conj()`` is always False and
``resolve_conj()`` has nothing to resolve. For tensors that are not complex, ``conj()`` returns its
input itself, as PyTorch does.

``complex(real, imag)`` and ``polar(abs, angle)`` take two float tensors of one dtype (float32 or
float64; float16 would give complex32, which Ember lacks) and broadcast them.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.pointwise import define_pointwise, expose
from ember.core.tensor import Tensor

_COMPLEX_OF = {D.float32: D.complex64, D.float64: D.complex128}
_NAMES = D.SCALAR_TYPE_NAMES


def _conj_rule(inputs: tuple) -> tuple[D.dtype, D.dtype]:
    d = inputs[0].dtype
    return d, d


conj_physical_ops = define_pointwise("conj_physical(Tensor self) -> Tensor", np.conj, _conj_rule, fast=False)


def _parts_rule(inputs: tuple) -> tuple[D.dtype, D.dtype]:
    first, second = inputs
    a, b = first.dtype, second.dtype
    if not (a.category == D.FLOATING and b.category == D.FLOATING):
        raise RuntimeError(
            f"Expected both inputs to be Half, Float or Double tensors but got {_NAMES[a]} and {_NAMES[b]}"
        )
    if a is not b:
        raise RuntimeError(
            f"Expected object of scalar type {_NAMES[a]} but got scalar type {_NAMES[b]} for second argument"
        )
    out = _COMPLEX_OF.get(a)
    if out is None:
        raise NotImplementedError(f"complex tensors from {_NAMES[a]} parts need complex32 (chalf), which Ember lacks")
    return out, a


def _check_tensors(name: str):
    def check(p, inputs, params) -> None:
        for x in inputs:
            if not isinstance(x, Tensor):
                raise TypeError(f"{name}(): argument must be Tensor, not {type(x).__name__}")

    return check


def _assemble(re: np.ndarray, im: np.ndarray) -> np.ndarray:
    # Parts set one by one, not ``re + 1j * im``: 1j * inf would be nan + inf j.
    shape = np.broadcast_shapes(np.shape(re), np.shape(im))
    out = np.empty(shape, np.result_type(re, im, np.complex64))
    out.real = re
    out.imag = im
    return out


def _polar(magnitude: np.ndarray, angle: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return _assemble(magnitude * np.cos(angle), magnitude * np.sin(angle))


complex_ops = define_pointwise(
    "complex(Tensor real, Tensor imag) -> Tensor",
    _assemble,
    _parts_rule,
    n_inputs=2,
    inplace=False,
    check=_check_tensors("complex"),
    fast=False,
)
polar_ops = define_pointwise(
    "polar(Tensor abs, Tensor angle) -> Tensor",
    _polar,
    _parts_rule,
    n_inputs=2,
    inplace=False,
    check=_check_tensors("polar"),
    fast=False,
)

expose(complex_ops, "complex", method=False, tensors_only=True)
expose(polar_ops, "polar", method=False, tensors_only=True)


@public("conj_physical")
def conj_physical(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The complex conjugate computed into a new tensor; a tensor that is not complex is returned itself."""
    if out is not None:
        return conj_physical_ops.out(input, out=out)
    if input.dtype.category != D.COMPLEX:
        return input
    return conj_physical_ops.functional(input)


@method("conj_physical")
def _conj_physical_method(self: Tensor) -> Tensor:
    return conj_physical(self)


@method("conj_physical_")
def _conj_physical_inplace(self: Tensor) -> Tensor:
    if self.dtype.category != D.COMPLEX:
        return self  # nothing to write, as in PyTorch (an expanded real tensor is fine too)
    return conj_physical_ops.inplace(self)


@public("conj")
@method("conj")
def conj(input: Tensor) -> Tensor:
    """The complex conjugate; a tensor that is not complex is returned itself.

    Unlike PyTorch, whose ``conj()`` is a lazy view with the conjugate bit set, this computes the
    conjugate into a new tensor (Ember has no conjugate bit), so ``is_conj()`` of the result is False
    and writes to it do not reach ``input``.
    """
    if input.dtype.category != D.COMPLEX:
        return input
    return conj_physical_ops.functional(input)


@method("chalf")
def _chalf(self: Tensor, memory_format=None) -> Tensor:
    """``self.to(ember.complex32)``: complex32 holds a pair of halves and takes few ops (as in PyTorch)."""
    if memory_format is None:
        return self.to(D.complex32)
    return self.to(D.complex32, memory_format=memory_format)
