"""How each op runs on MaskedTensors (``MaskedTensor.__ember_dispatch__``).

- reductions (``sum``, ``prod``, ``amax``, ``amin``, ``argmax``, ``argmin``, ``mean``, ``var``,
  ``std``, ``logsumexp``): ``ember.masked``'s, with the output specified where any input of its
  group was; not of a MaskedTensor that requires grad (``NotImplementedError``);
- softmax and log-softmax: ``ember.masked``'s, keeping the mask;
- views, and copies (``clone``, ``detach``, ``_to_copy``): the op on the data and on the mask;
- ``*_like`` factories and ``new_*``: the op on the data, with the mask (all True when the new shape
  differs from the input's);
- pointwise ops: on the data; the masks of MaskedTensor operands must match, and the result keeps
  it; in-place forms write into the MaskedTensor's data; ``copy_`` copies data and mask.

Anything else raises ``TypeError`` naming the op.
"""

from __future__ import annotations

from ember.core import dtypes as D
from ember.core import functions as _f
from ember.core.tensor import Tensor
from ember.masked import _ops as masked_ops
from ember.masked.maskedtensor.core import MaskedTensor

_MASKS_DIFFER = "Input masks must match. If you need support for this, please open an issue on Github."
_REDUCTIONS = {
    "sum": masked_ops.sum,
    "prod": masked_ops.prod,
    "amax": masked_ops.amax,
    "amin": masked_ops.amin,
    "argmax": masked_ops.argmax,
    "argmin": masked_ops.argmin,
    "mean": masked_ops.mean,
    "var": masked_ops.var,
    "std": masked_ops.std,
    "logsumexp": masked_ops.logsumexp,
}
_SOFTMAXES = {"_softmax": masked_ops.softmax, "_log_softmax": masked_ops.log_softmax}
_COPIES = {"clone", "detach", "_to_copy", "alias", "lift_fresh", "contiguous"}


def _map(value, part: str):
    """``value`` with each MaskedTensor replaced by its data (``part="data"``) or mask."""
    if isinstance(value, MaskedTensor):
        return value._masked_data if part == "data" else value._masked_mask
    if isinstance(value, list | tuple):
        return type(value)(_map(v, part) for v in value)
    return value


def _masked_operands(args, kwargs) -> list[MaskedTensor]:
    found: list[MaskedTensor] = []

    def visit(value) -> None:
        if isinstance(value, MaskedTensor):
            found.append(value)
        elif isinstance(value, list | tuple):
            for v in value:
                visit(v)

    for value in (*args, *kwargs.values()):
        visit(value)
    return found


def _bind(func, args, kwargs) -> dict:
    names = [argument.name for argument in func.schema.arguments]
    bound = dict(zip(names, args, strict=False))
    bound.update(kwargs)
    return bound


def _reduce(func, args, kwargs):
    bound = _bind(func, args, kwargs)
    source = bound["self"]
    if source.requires_grad:
        # Its gradient would carry the reduced output's mask back, not the input's (PyTorch joins the
        # two with autograd Functions above this level); refuse rather than give a wrong gradient.
        raise NotImplementedError(
            f"MaskedTensor: {func.name} of a MaskedTensor that requires grad is not supported in Ember "
            "(no gradient through masked reductions yet); detach it first"
        )
    data, mask = source._masked_data, source._masked_mask
    dim = bound.get("dim")
    keepdim = bool(bound.get("keepdim", False))
    name = func.name
    options: dict = {"keepdim": keepdim, "mask": mask}
    if name in ("var", "std"):
        options["correction"] = bound.get("correction")
        if options["correction"] is None and bound.get("unbiased") is not None:
            options["correction"] = 1 if bound["unbiased"] else 0
    elif name not in ("argmax", "argmin", "logsumexp") and bound.get("dtype") is not None:
        options["dtype"] = bound["dtype"]
    if dim is not None and not isinstance(dim, int) and len(dim) == 0:
        dim = None  # [] means every dimension
    result = _REDUCTIONS[name](data, dim, **options)
    if dim is None:
        out_mask = mask.any()
        if keepdim:
            out_mask = out_mask.reshape((1,) * data.dim())
    else:
        out_mask = mask.any(dim=dim, keepdim=keepdim) if isinstance(dim, int) else _any_over(mask, dim, keepdim)
    return MaskedTensor._wrap(result, out_mask)


def _any_over(mask: Tensor, dims, keepdim: bool) -> Tensor:
    dims = sorted((d % max(mask.dim(), 1) for d in dims), reverse=True)
    for d in dims:
        mask = mask.any(dim=d, keepdim=keepdim)
    return mask


def _pointwise(func, args, kwargs):
    operands = _masked_operands(args, kwargs)
    mask = operands[0]._masked_mask
    for other in operands[1:]:
        if other._masked_mask is not mask and not _f["equal"](other._masked_mask, mask):
            raise ValueError(_MASKS_DIFFER)
    result = func(*_map(args, "data"), **{k: _map(v, "data") for k, v in kwargs.items()})
    if "inplace" in func.tags or func.schema.is_inplace:
        return args[0]
    if isinstance(result, Tensor) and tuple(result.shape) != tuple(mask.shape):
        mask = _f["broadcast_to"](mask, tuple(result.shape)).clone()
    return MaskedTensor._wrap(result, mask)


def _on_both(func, args, kwargs):
    data = func(*_map(args, "data"), **{k: _map(v, "data") for k, v in kwargs.items()})
    mask_kwargs = {k: _map(v, "mask") for k, v in kwargs.items() if k not in ("dtype", "layout")}
    mask = func(*_map(args, "mask"), **mask_kwargs)
    if isinstance(data, list | tuple):
        return type(data)(MaskedTensor._wrap(d, m) for d, m in zip(data, mask, strict=True))
    return MaskedTensor._wrap(data, mask)


def dispatch(func, args, kwargs):
    name = func.name
    tags = func.tags
    if name in _REDUCTIONS and "reduction" in tags:
        return _reduce(func, args, kwargs)
    if name in _SOFTMAXES:
        source = args[0]
        result = _SOFTMAXES[name](source._masked_data, args[1], mask=source._masked_mask)
        return MaskedTensor._wrap(result, source._masked_mask)
    if name == "copy_":
        target, source = args[0], args[1]
        if not isinstance(target, MaskedTensor):
            raise NotImplementedError("copy_: copying a MaskedTensor into a plain tensor would drop its mask")
        target._masked_data.copy_(_map(source, "data"))
        if isinstance(source, MaskedTensor):
            target._masked_mask.copy_(source._masked_mask)
        return target
    if "view" in tags or name in _COPIES:
        if name in ("_to_copy",):
            source = args[0]
            data = func(source._masked_data, **kwargs)
            mask = source._masked_mask.to(device=data.device)
            return MaskedTensor._wrap(data, mask)
        return _on_both(func, args, kwargs)
    if "factory" in tags or name.startswith("new_") or name.endswith("_like"):
        source = args[0]
        data = func(*_map(args, "data"), **{k: _map(v, "data") for k, v in kwargs.items()})
        if tuple(data.shape) == tuple(source.shape):
            mask = source._masked_mask.clone()
        else:
            mask = _f["ones"](tuple(data.shape), dtype=D.bool_, device=data.device)
        return MaskedTensor._wrap(data, mask)
    if "pointwise" in tags:
        return _pointwise(func, args, kwargs)
    raise TypeError(f"{func} is not implemented for MaskedTensor in Ember")


MaskedTensor._rules = staticmethod(dispatch)
