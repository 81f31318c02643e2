"""``nn.utils.prune``: zero parts of a parameter through a mask, as PyTorch's pruning does.

Pruning ``module.<name>`` moves the parameter to ``<name>_orig``, adds the buffer ``<name>_mask`` and
a forward pre-hook that sets ``module.<name> = <name>_orig * <name>_mask`` before each call.
Pruning the same tensor again combines the methods in a ``PruningContainer``: each new method
chooses only among the entries (or, for structured methods, the channels) still kept. ``remove``
makes the pruned tensor the parameter again. Masks, names and state-dict keys are PyTorch's.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from ember.autograd import no_grad
from ember.core.aten.factories.factories import ones_like, zeros_like
from ember.core.aten.shape.joining import cat
from ember.core.tensor import Tensor

__all__ = [
    "BasePruningMethod",
    "CustomFromMask",
    "Identity",
    "L1Unstructured",
    "LnStructured",
    "PruningContainer",
    "RandomStructured",
    "RandomUnstructured",
    "custom_from_mask",
    "global_unstructured",
    "identity",
    "is_pruned",
    "l1_unstructured",
    "ln_structured",
    "random_structured",
    "random_unstructured",
    "remove",
]


class BasePruningMethod(ABC):
    """A way of choosing a mask; subclasses define ``compute_mask`` and ``PRUNING_TYPE``."""

    _tensor_name: str
    PRUNING_TYPE: str = "unstructured"

    def __call__(self, module: Any, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask for ``t``, given the mask so far."""

    def apply_mask(self, module: Any) -> Tensor:
        assert self._tensor_name is not None, f"Module {module} has to be pruned"
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return orig * mask

    @classmethod
    def apply(cls, module: Any, name: str, *args: Any, importance_scores: Tensor | None = None, **kwargs: Any):
        """Prune ``module.<name>`` with a new instance of this method (combined with earlier ones)."""
        old_method = None
        found = 0
        hooks_to_remove = []
        for key, hook in module._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old_method = hook
                hooks_to_remove.append(key)
                found += 1
        assert found <= 1, (
            f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. Use a PruningContainer."
        )
        for key in hooks_to_remove:
            del module._forward_pre_hooks[key]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old_method is not None:
            if isinstance(old_method, PruningContainer):
                old_method.add_pruning_method(method)
                method = old_method
            else:
                container = PruningContainer(old_method)
                container.add_pruning_method(method)
                method = container
        orig = getattr(module, name)
        if importance_scores is not None:
            assert tuple(importance_scores.shape) == tuple(orig.shape), (
                f"importance_scores should have the same shape as parameter {name} of {module}"
            )
        else:
            importance_scores = orig
        if old_method is None:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            with no_grad():
                mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception as error:
            if old_method is None:
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise error
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None) -> Tensor:
        """``t`` with this method's mask applied."""
        scores = importance_scores if importance_scores is not None else t
        mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(scores, default_mask=mask)

    def remove(self, module: Any) -> None:
        """Make the pruned tensor ``module.<name>`` a parameter again; drop ``_orig`` and ``_mask``."""
        assert self._tensor_name is not None, f"Module {module} has to be pruned before pruning can be removed"
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        with no_grad():
            orig.copy_(weight)
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        module.register_parameter(self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """Several pruning methods applied one after the other to one tensor."""

    def __init__(self, *args: Any) -> None:
        self._pruning_methods: tuple = ()
        if not isinstance(args, Iterable):
            self._tensor_name = args._tensor_name
            self.add_pruning_method(args)
        elif len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(
                "Can only add pruning methods acting on the parameter named "
                f"'{self._tensor_name}' to PruningContainer {self}. Found '{method._tensor_name}'"
            )
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype).clone()
        if method.PRUNING_TYPE == "unstructured":
            keep = default_mask == 1
            partial = method.compute_mask(t[keep], default_mask=default_mask[keep])
            new_mask[keep] = partial.to(dtype=new_mask.dtype)
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError(
                    "Pruning methods of PRUNING_TYPE 'structured' need to have the attribute `dim` defined."
                )
            ndim = t.ndim
            dim = method.dim if method.dim >= 0 else method.dim + ndim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor of size {tuple(t.shape)}")
            others = [d for d in range(ndim) if d != dim]
            kept = (default_mask.sum(others) != 0) if others else default_mask != 0
            index = [slice(None)] * ndim
            index[dim] = kept
            partial = method.compute_mask(t[tuple(index)], default_mask=default_mask[tuple(index)])
            new_mask[tuple(index)] = partial.to(dtype=new_mask.dtype)
        elif method.PRUNING_TYPE == "global":
            new_mask = method.compute_mask(t, default_mask=default_mask).to(dtype=new_mask.dtype)
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Any, name: str):  # type: ignore[override]
        return super().apply(module, name)


def _validate_amount_init(amount: Any) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
        not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)
    ):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_amount(amount: Any, size: int) -> None:
    if isinstance(amount, numbers.Integral) and amount > size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")


def _count(amount: Any, size: int) -> int:
    return amount if isinstance(amount, numbers.Integral) else round(amount * size)


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` entries (a count, or a fraction) chosen at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: Any) -> None:
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        size = t.numel()
        _validate_amount(self.amount, size)
        count = _count(self.amount, size)
        mask = default_mask.clone()
        if count:
            chosen = t.new_empty(t.shape).uniform_().reshape(-1).topk(count).indices
            flat = mask.reshape(-1)
            flat[chosen] = 0
            mask = flat.reshape(mask.shape)
        return mask

    @classmethod
    def apply(cls, module: Any, name: str, amount: Any):  # type: ignore[override]
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries of smallest magnitude."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: Any) -> None:
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        size = t.numel()
        _validate_amount(self.amount, size)
        count = _count(self.amount, size)
        mask = default_mask.clone()
        if count:
            smallest = t.abs().reshape(-1).topk(count, largest=False).indices
            flat = mask.reshape(-1)
            flat[smallest] = 0
            mask = flat.reshape(mask.shape)
        return mask

    @classmethod
    def apply(cls, module: Any, name: str, amount: Any, importance_scores: Tensor | None = None):  # type: ignore[override]
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channel_mask(t: Tensor, dim: int, channels: Tensor) -> Tensor:
    mask = zeros_like(t)
    index = [slice(None)] * t.ndim
    index[dim] = channels
    mask[tuple(index)] = 1
    return mask


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` whole channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, dim: int = -1) -> None:
        _validate_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        size = t.shape[self.dim]
        _validate_amount(self.amount, size)
        count = _count(self.amount, size)
        if count == 0:
            return default_mask
        scores = t.new_empty(size).uniform_()
        kept = scores.topk(size - count).indices
        mask = _channel_mask(t, self.dim % t.ndim, kept)
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module: Any, name: str, amount: Any, dim: int = -1):  # type: ignore[override]
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest ``n``-norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, n: Any, dim: int = -1) -> None:
        _validate_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        size = t.shape[self.dim]
        _validate_amount(self.amount, size)
        count = _count(self.amount, size)
        if count == 0:
            return default_mask
        dim = self.dim % t.ndim
        others = [d for d in range(t.ndim) if d != dim]
        norms = t.norm(self.n, others) if others else t.abs()
        kept = norms.topk(size - count, largest=True).indices
        mask = _channel_mask(t, dim, kept)
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module: Any, name: str, amount: Any, n: Any, dim: int, importance_scores: Tensor | None = None):  # type: ignore[override]
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is zero."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        assert tuple(default_mask.shape) == tuple(self.mask.shape)
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Any, name: str, mask: Tensor):  # type: ignore[override]
        return super().apply(module, name, mask=mask)


def identity(module: Any, name: str) -> Any:
    Identity.apply(module, name)
    return module


def random_unstructured(module: Any, name: str, amount: Any) -> Any:
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Any, name: str, amount: Any, importance_scores: Tensor | None = None) -> Any:
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Any, name: str, amount: Any, dim: int) -> Any:
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(
    module: Any, name: str, amount: Any, n: Any, dim: int, importance_scores: Tensor | None = None
) -> Any:
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(
    parameters: Iterable[tuple[Any, str]], pruning_method: type, importance_scores: dict | None = None, **kwargs: Any
) -> None:
    """Prune several tensors together: ``pruning_method`` chooses among all their entries at once."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = cat([importance_scores.get((m, n), getattr(m, n)).reshape(-1) for m, n in parameters])
    masks = cat([getattr(m, n + "_mask", ones_like(getattr(m, n))).reshape(-1) for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(
            f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method {pruning_method} of type {method.PRUNING_TYPE}'
        )
    container.add_pruning_method(method)
    with no_grad():
        final = container.compute_mask(scores, masks)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        size = param.numel()
        custom_from_mask(module, name, mask=final[pointer : pointer + size].reshape(param.shape))
        pointer += size


def custom_from_mask(module: Any, name: str, mask: Tensor) -> Any:
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: Any, name: str) -> Any:
    """Make the pruning of ``module.<name>`` permanent."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Any) -> bool:
    """Whether any submodule of ``module`` carries a pruning hook."""
    for _, submodule in module.named_modules():
        for hook in submodule._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False
