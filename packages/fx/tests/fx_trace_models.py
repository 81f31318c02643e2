"""Programs for the symbolic tracing tests, written once against a library module ``lib``.

Each ``make_*`` takes ``torch`` or ``ember`` and builds the same model from that library, so the
oracle tests trace one source with ``torch.fx`` and with ``ember.fx`` and compare.
"""

import math

import ember.fx


def sum_of_squares(x, y):
    return x * x + y * y


# Leaves of symbolic tracing for whichever library traces this module.
ember.fx.wrap("sum_of_squares")
ember.fx.wrap("len")
try:
    import torch.fx

    torch.fx.wrap("sum_of_squares")
    torch.fx.wrap("len")
except ImportError:
    pass


def make_gpt_block(lib, n_embd=16, n_head=4, block_size=8):
    """A nanoGPT transformer block: LayerNorm, causal attention (masked_fill, softmax, view,
    transpose), an MLP with GELU, residuals and Dropout. Inputs must have ``block_size`` steps."""
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.attn_dropout = nn.Dropout(0.1)
            self.resid_dropout = nn.Dropout(0.1)
            self.n_head = n_head
            self.n_embd = n_embd
            mask = lib.tril(lib.ones(block_size, block_size)).view(1, 1, block_size, block_size)
            self.register_buffer("bias", mask)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * n_embd, n_embd)
            self.dropout = nn.Dropout(0.1)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            x = x + self.mlp(self.ln_2(x))
            return x

    return Block()


def make_cnn(lib):
    """Conv2d, BatchNorm2d, ReLU, MaxPool2d, flatten and Linear, with a functional ReLU and a view."""
    nn = lib.nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 8, 3, padding=1),
                nn.BatchNorm2d(8),
                nn.ReLU(),
                nn.MaxPool2d(2),
            )
            self.conv2 = nn.Conv2d(8, 4, 3, padding=1)
            self.fc = nn.Linear(4 * 4 * 4, 10)

        def forward(self, x):
            x = self.features(x)
            x = lib.relu(self.conv2(x))
            x = lib.flatten(x, 1)
            y = x.view(x.size(0), -1)
            return self.fc(y).log_softmax(dim=1)

    return CNN()


def make_rnn(lib):
    """An LSTM (a leaf) whose output tuple is unpacked, then a Linear on the last step."""
    nn = lib.nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(5, 7, num_layers=2, batch_first=True)
            self.fc = nn.Linear(7, 3)

        def forward(self, x):
            out, (h, c) = self.lstm(x)
            last = out[:, -1, :]
            return self.fc(last) + h[-1].sum(dim=-1, keepdim=True) - c.mean()

    return Tagger()


def make_gated(lib):
    """Control flow on arguments, traced with ``concrete_args``."""
    nn = lib.nn

    class Gated(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x, use_relu=True, scale=None, repeats=1):
            for _ in range(repeats):
                x = self.lin(x)
            if use_relu:
                x = lib.relu(x)
            if scale is not None:
                x = x * scale
            return x

    return Gated()


def make_wrapped(lib):
    """Calls of wrapped functions (a module-level one and ``len``) recorded as call_function."""
    nn = lib.nn

    class UsesWrapped(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x, y):
            s = sum_of_squares(self.lin(x), y)
            return s * len(y)

    return UsesWrapped()


def make_custom_leaf(lib):
    """A user module kept as one call_module node by a tracer that overrides is_leaf_module."""
    nn = lib.nn

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(lib.ones(3) * 2)

        def forward(self, x):
            return x * self.weight

    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = Scale()

        def forward(self, x):
            return self.scale(x).tanh()

    class WithLeaf(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()
            self.scale2 = Scale()

        def forward(self, x):
            return self.inner(x) + self.scale2(x)

    class LeafTracer(lib.fx.Tracer):
        def is_leaf_module(self, m, module_qualified_name):
            return type(m).__name__ == "Scale" or super().is_leaf_module(m, module_qualified_name)

    return WithLeaf(), LeafTracer


def make_branching(lib):
    """Data-dependent control flow: cannot be traced."""

    def branching(x):
        y = lib.relu(x)
        if y.sum() > 0:  # the line the TraceError names
            return y
        return x

    return branching


def branching_line():
    import inspect

    lines, start = inspect.getsourcelines(make_branching)
    return start + next(i for i, line in enumerate(lines) if "the line the TraceError names" in line)
