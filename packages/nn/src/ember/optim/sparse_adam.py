"""``SparseAdam``: Adam for sparse gradients (``Embedding(sparse=True)``), updating only the rows present.

Ember has no sparse tensors yet, so no gradient can be sparse: the constructor checks what PyTorch's
checks, and ``step`` refuses dense gradients with PyTorch's error, as PyTorch does. The sparse update
itself waits for sparse COO tensors.
"""

from __future__ import annotations

from typing import Any

from ember.optim.adamax import check_betas
from ember.optim.optimizer import Optimizer, check_tensor_lr, step_without_grad

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        if not lr > 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not eps > 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        complex_params = [
            [index, p_index]
            for index, group in enumerate(self.param_groups)
            for p_index, p in enumerate(group["params"])
            if p.is_complex()
        ]
        if complex_params:
            raise ValueError(
                f"Complex params at indices {complex_params}: SparseAdam does not support complex parameters"
            )

    @step_without_grad
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if not getattr(p.grad, "is_sparse", False):
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                raise NotImplementedError(
                    "SparseAdam: the sparse update needs sparse COO tensors, which ember does not have yet"
                )
        return loss
