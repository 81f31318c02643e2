"""Train a small character-level GPT, written as a plain PyTorch program: ``import ember as torch``.

The text is the Python standard library's own source, so every machine has it. The script trains
for a fixed budget of steps with a progress bar (loss and tokens per second), prints a sample,
saves a checkpoint with ``torch.save``, loads it into a fresh model and checks that the loss on a
held-out batch is the same to the last bit.

python demo/gpt_demo.py [--steps N]
"""

from __future__ import annotations

import argparse
import math
import os
import sysconfig
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

import ember as torch
import ember.nn as nn
import ember.nn.functional as F

# Small enough to train in about a minute on two cores, large enough to learn Python's look.
CONTEXT = 64
WIDTH = 96
HEADS = 4
LAYERS = 2
BATCH = 16
TEXT_BYTES = 400_000


def stdlib_text(limit: int) -> str:
    """The first ``limit`` characters of the standard library's modules, in a fixed order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    chunks, size = [], 0
    for path in sorted(root.glob("*.py")):
        source = path.read_text(encoding="utf-8", errors="replace")
        chunks.append(source)
        size += len(source)
        if size >= limit:
            break
    text = "".join(chunks)[:limit]
    # Printable ASCII, newline and tab: a vocabulary of about 100 characters.
    return "".join(c if (" " <= c <= "~" or c in "\n\t") else "?" for c in text)


class CausalSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        batch, time_, width = x.shape
        q, k, v = self.qkv(x).split(width, dim=2)
        q, k, v = (t.view(batch, time_, self.heads, width // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(batch, time_, width))


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int, width: int = WIDTH, heads: int = HEADS, layers: int = LAYERS) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(CONTEXT, width)
        self.blocks = nn.Sequential(*[Block(width, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx, targets=None):
        positions = torch.arange(idx.shape[1])
        x = self.blocks(self.tokens(idx) + self.positions(positions))
        logits = self.head(self.ln(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    @torch.no_grad()
    def generate(self, idx, count: int, generator):
        for _ in range(count):
            logits, _ = self(idx[:, -CONTEXT:])
            probs = F.softmax(logits[:, -1, :] / 0.8, dim=-1)
            idx = torch.cat([idx, torch.multinomial(probs, 1, generator=generator)], dim=1)
        return idx


def batch_of(data, generator):
    starts = torch.randint(0, len(data) - CONTEXT - 1, (BATCH,), generator=generator)
    x = torch.stack([data[s : s + CONTEXT] for s in starts.tolist()])
    y = torch.stack([data[s + 1 : s + CONTEXT + 1] for s in starts.tolist()])
    return x, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=int(os.environ.get("EMBER_DEMO_STEPS", 600)))
    args = parser.parse_args()
    console = Console()

    text = stdlib_text(TEXT_BYTES)
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([index[c] for c in text], dtype=torch.long)
    split = int(0.9 * len(data))
    train, held_out = data[:split], data[split:]
    console.print(f"text: {len(text):,} characters of the standard library, vocabulary {len(chars)}")

    torch.manual_seed(0)
    model = GPT(len(chars))
    count = sum(p.numel() for p in model.parameters())
    console.print(f"model: {LAYERS} layers, width {WIDTH}, {HEADS} heads, context {CONTEXT}: {count:,} parameters")
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps, eta_min=3e-4)
    generator = torch.Generator().manual_seed(1)

    columns = (
        TextColumn("[bold]training"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]:.3f}"),
        TextColumn("{task.fields[rate]:,.0f} tokens/s"),
        TimeElapsedColumn(),
    )
    start = time.perf_counter()
    first_loss = None
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("train", total=args.steps, loss=math.nan, rate=0.0)
        for step in range(args.steps):
            x, y = batch_of(train, generator)
            _, loss = model(x, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            first_loss = loss.item() if first_loss is None else first_loss
            rate = (step + 1) * BATCH * CONTEXT / (time.perf_counter() - start)
            progress.update(task, advance=1, loss=loss.item(), rate=rate)
    console.print(f"loss {first_loss:.3f} -> {loss.item():.3f} (uniform guess: {math.log(len(chars)):.3f})")

    model.eval()
    prompt = torch.tensor([[index[c] for c in "def "]])
    sample = model.generate(prompt, 120, generator)[0].tolist()
    console.print("[bold]sample:[/bold]")
    console.print("".join(chars[i] for i in sample), markup=False, highlight=False)

    eval_x, eval_y = batch_of(held_out, torch.Generator().manual_seed(2))
    with torch.no_grad():
        before = model(eval_x, eval_y)[1].item()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "gpt.pt")
        torch.save({"model": model.state_dict(), "vocabulary": "".join(chars)}, path)
        checkpoint = torch.load(path)
    reloaded = GPT(len(checkpoint["vocabulary"]))
    reloaded.load_state_dict(checkpoint["model"])
    reloaded.eval()
    with torch.no_grad():
        after = reloaded(eval_x, eval_y)[1].item()
    if after != before:
        raise SystemExit(f"the reloaded checkpoint gives loss {after}, the trained model {before}")
    console.print(f"checkpoint saved and reloaded: held-out loss {after:.4f} both times")


if __name__ == "__main__":
    main()
