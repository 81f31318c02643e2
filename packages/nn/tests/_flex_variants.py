"""The attention variants of the FlexAttention tests, written once for ember and for PyTorch.

Each maker takes the tensor library (``ember`` or ``torch``) and the sequence lengths, and returns
``(score_mod, mask_mod, captured)``: either mod may be None; ``captured`` names the tensors the
score_mod closes over (built from a seeded NumPy generator, so both libraries see the same values).
"""

from __future__ import annotations

import numpy as np

H = 4
WINDOW = 37
PREFIX = 50


def causal(q_idx, kv_idx):
    return q_idx >= kv_idx


def make(name: str, lib, q_len: int, kv_len: int, dtype, requires_grad: bool = False):
    rng = np.random.default_rng(7)

    def t(a):
        x = lib.tensor(a, dtype=dtype)
        return x.requires_grad_(True) if requires_grad else x

    if name == "causal":
        return None, lambda b, h, q, kv: causal(q, kv), {}
    if name == "sliding_window":
        return None, lambda b, h, q, kv: causal(q, kv) & (q - kv <= WINDOW), {}
    if name == "prefix_lm":
        return None, lambda b, h, q, kv: (kv < PREFIX) | causal(q, kv), {}
    if name == "document":
        doc = lib.tensor(np.sort(rng.integers(0, 4, size=max(q_len, kv_len))), dtype=lib.int64)
        return None, lambda b, h, q, kv: doc[q] == doc[kv], {}
    if name == "alibi":
        slopes = t(2.0 ** -np.arange(1, H + 1))

        def alibi(score, b, h, q, kv):
            return score + slopes[h] * (kv - q)

        return alibi, lambda b, h, q, kv: causal(q, kv), {"slopes": slopes}
    if name == "relative_bias":
        bias = t(rng.standard_normal((H, q_len + kv_len - 1)))

        def relative(score, b, h, q, kv):
            return score + bias[h, q - kv + kv_len - 1]

        return relative, None, {"bias": bias}
    if name == "softcap":

        def softcap(score, b, h, q, kv):
            return 2.0 * (score / 2.0).tanh()

        return softcap, lambda b, h, q, kv: causal(q, kv), {}
    raise KeyError(name)


VARIANTS = ["causal", "sliding_window", "prefix_lm", "document", "alibi", "relative_bias", "softcap"]
