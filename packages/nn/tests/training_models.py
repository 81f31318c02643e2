"""The two models the training test and the training benchmark run: a small GPT and a small CNN.

Written once against the PyTorch API and built with either library (``lib`` is ``ember`` or
``torch``), so both run the same program from the same weights.
"""

from __future__ import annotations


def gpt(
    lib, vocab: int = 64, width: int = 128, layers: int = 4, heads: int = 4, context: int = 64, dropout: float = 0.0
):
    nn, F = lib.nn, lib.nn.functional

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).split(c, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout if self.training else 0.0)
            return self.proj(y.transpose(1, 2).reshape(b, t, c))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.attn = Attention()
            self.mlp = nn.Sequential(
                nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width), nn.Dropout(dropout)
            )

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(vocab, width)
            self.pos = nn.Embedding(context, width)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.ln = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)

        def forward(self, idx, targets):
            x = self.tok(idx) + self.pos(lib.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x)
            logits = self.head(self.ln(x))
            return F.cross_entropy(logits.view(-1, vocab), targets.view(-1))

    return GPT()


def cnn(lib, classes: int = 10):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, classes),
    )


def copy_state(source, target, lib_target) -> None:
    """``source``'s parameters and buffers into ``target`` (the other library's model), through NumPy."""
    state = {k: lib_target.tensor(v.detach().cpu().numpy().copy()) for k, v in source.state_dict().items()}
    target.load_state_dict(state)


def gpt_batch(rng, batch: int = 16, context: int = 64, vocab: int = 64):
    x = rng.integers(0, vocab, (batch, context))
    y = rng.integers(0, vocab, (batch, context))
    return x, y


def cnn_batch(rng, batch: int = 16, classes: int = 10):
    return rng.standard_normal((batch, 3, 32, 32)).astype("float32"), rng.integers(0, classes, (batch,))


def cnn_loss(lib, model, x, y):
    return lib.nn.functional.cross_entropy(model(x), y)
