"""A tour of Ember's eager tensors, written as a PyTorch program: ``import ember as torch``.

python demo/tensors_demo.py
"""

from __future__ import annotations

import io

import ember as torch
import ember.core.functional as F
from ember.core import DispatchMode


class RecordOps(DispatchMode):
    """Sees every op the program runs, then lets it run."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __ember_dispatch__(self, func, types, args, kwargs):
        self.seen.append(str(func))
        return func(*args, **kwargs)


def section(title: str) -> None:
    print(f"\n--- {title}")


def main() -> None:
    section("tensors and PyTorch's promotion rules")
    x = torch.arange(6).view(2, 3)
    print(x)
    print(
        "int64 + 2.5 ->",
        (x + 2.5).dtype,
        "| int / int ->",
        (x / 2).dtype,
        "| int8 + int64 0-dim ->",
        (x.char() + torch.tensor(1)).dtype,
    )

    section("views share storage and a version counter")
    y = torch.zeros(3, 4)
    column = y[:, 1]
    column += 7
    print(y)
    print("column is a view:", column._base is y, "| version seen by both:", y._version, column._version)
    print("transpose strides:", y.t().stride(), "| contiguous:", y.t().is_contiguous())

    section("broadcasting, reductions and elementwise math")
    a = torch.linspace(-1, 1, 5)
    b = torch.ones(3, 1)
    print((a * b).exp().sum(dim=0))
    try:
        torch.ones(2, 3) + torch.ones(4)
    except RuntimeError as error:
        print("RuntimeError:", error)

    section("the meta device: shapes, dtypes and strides without data")
    m = torch.empty(1024, 1024, device="meta")
    out = (m.t() * 2).sum(dim=1, keepdim=True)
    print(out.shape, out.dtype, out.stride(), out.device)

    section("a small classifier step by hand: linear, softmax, cross entropy, argmax")
    torch.manual_seed(0)
    features, weight = torch.randn(8, 16), torch.randn(4, 16) * 0.1
    labels = torch.randint(0, 4, (8,))
    logits = features @ weight.t()
    print("probabilities sum to", logits.softmax(-1).sum(-1)[:3])
    print(
        "cross entropy:",
        F.cross_entropy(logits, labels).item(),
        "| accuracy:",
        (logits.argmax(-1) == labels).float().mean().item(),
    )
    print("hardest examples:", F.cross_entropy(logits, labels, reduction="none").topk(2).indices)

    section("advanced indexing and a checkpoint PyTorch can read")
    picked = features[labels == 0, ::4]
    print("rows of class 0, every 4th feature:", tuple(picked.shape))
    buffer = io.BytesIO()
    torch.save({"weight": weight, "step": 1}, buffer)
    buffer.seek(0)
    restored = torch.load(buffer)
    print("restored:", sorted(restored), bool((restored["weight"] == weight).all()))

    section("one door for every op: a dispatch mode sees them all")
    with RecordOps() as recorder:
        z = torch.ones(2, 2)
        (z + z).t().mul(3).sum()
    print(recorder.seen)
    print("ember.ops.aten.add.Tensor:", torch.ops.aten.add.Tensor.schema)


if __name__ == "__main__":
    main()
