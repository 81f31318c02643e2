"""Tensor attributes that add no computation: ``output_nr``, ``name``, ``const_data_ptr``,
``pin_memory`` and ``index``.

``output_nr`` is which output of its autograd node a tensor is (0 for leaves and single outputs);
``name`` is None, as it is for every tensor that is not a TorchScript value. ``const_data_ptr`` is
``data_ptr``: Ember has no copy-on-write storages to materialize. ``pin_memory`` asks for
page-locked host memory for fast copies to an accelerator: without one PyTorch refuses, and so does
Ember; with one, Ember still has no page-locked allocator, and says so. ``index`` binds dims to
first-class dimension objects (``functorch.dim``), which Ember does not have: it raises naming that.
"""

from __future__ import annotations

from ember.core.api import method
from ember.core.devices import get_backend
from ember.core.tensor import Tensor


def _output_nr(self: Tensor) -> int:
    return getattr(self, "_output_nr", 0)


method("output_nr")(property(_output_nr, doc="Which output of its autograd node this tensor is."))
method("name")(property(lambda self: None, doc="None: Ember's tensors are not TorchScript values."))


@method("const_data_ptr")
def const_data_ptr(self: Tensor) -> int:
    """The address of the first element, for reading only (the same as ``data_ptr``)."""
    return self.data_ptr()


@method("pin_memory")
def pin_memory(self: Tensor, device=None) -> Tensor:
    """A copy in page-locked host memory; refused without an accelerator, as PyTorch refuses it."""
    backend = get_backend("cuda")
    available = backend is not None and bool(getattr(backend, "is_available", lambda: False)())
    if not available:
        raise RuntimeError("Cannot access accelerator device when none is available.")
    raise NotImplementedError(
        "pin_memory: Ember has no page-locked host allocator; copy to the device with .to('cuda') directly"
    )


@method("index")
def index(self: Tensor, positions, dims) -> Tensor:
    """PyTorch's binding of dims to first-class dimensions (``functorch.dim``), which Ember lacks."""
    raise NotImplementedError(
        "Tensor.index binds dims to first-class dimension objects (functorch.dim), which Ember does not have; "
        "index with [] instead"
    )
