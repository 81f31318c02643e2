"""Which ops autocast casts, and to what: PyTorch's lists for the CPU, restricted to the ops the core has.

``LOWER`` ops run in the autocast dtype (bfloat16 or float16): matrix products and convolutions,
where low precision pays. ``FLOAT32`` ops run in float32 whatever their inputs: losses, products
and paddings whose low-precision results lose too much. ``PROMOTE`` ops take several tensors and
run in the widest of their floating-point types. Every other op runs on what it is given.
"""

from __future__ import annotations

LOWER = frozenset(
    {
        "addmm",
        "baddbmm",
        "bmm",
        "conv1d",
        "conv2d",
        "conv_transpose2d",
        "convolution",
        "einsum",
        "linear",
        "matmul",
        "mm",
        "scaled_dot_product_attention",
    }
)

FLOAT32 = frozenset(
    {
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
        "cross_entropy_loss",
        "huber_loss",
        "kl_div",
        "l1_loss",
        "mse_loss",
        "nll_loss",
        "nll_loss_forward",
        "nll_loss_nd",
        "nuclear_norm",
        "prod",
        "reflection_pad1d",
        "reflection_pad2d",
        "replication_pad1d",
        "replication_pad2d",
        "replication_pad3d",
        "smooth_l1_loss",
    }
)

PROMOTE = frozenset({"cat", "index_copy", "stack"})


def policy_of(op_name: str) -> str | None:
    if op_name in LOWER:
        return "lower"
    if op_name in FLOAT32:
        return "float32"
    if op_name in PROMOTE:
        return "promote"
    return None
