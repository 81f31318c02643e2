"""nn.Module programs: built-in layers, containers, custom modules, buffers, train and eval modes.

Every module is built in the inputs factory and its parameters and buffers are overwritten from the
seeded generator, so PyTorch's and Ember's copies hold the same numbers."""

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch  # bound by the harness to PyTorch or to Ember


def randn(rng, *shape):
    return torch.tensor(rng.standard_normal(shape).astype(np.float32))


def seeded(module, rng):
    with torch.no_grad():
        for name, tensor in sorted(module.state_dict().items()):
            if tensor.is_floating_point():
                values = rng.standard_normal(tuple(tensor.shape)) * 0.5
                if name.endswith("running_var"):
                    values = np.abs(values) + 0.5
                tensor.copy_(torch.tensor(values.astype(np.float32)))
    return module


def call(model, x):
    return model(x)


def call_twice(model, x):
    return model(model(x).relu())


class MLP(torch.nn.Module):
    def __init__(self, width=8, hidden=16):
        super().__init__()
        self.fc1 = torch.nn.Linear(width, hidden)
        self.fc2 = torch.nn.Linear(hidden, width)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x))) + x


def mlp_program(model, x):
    return model(x).sum(-1)


class WithBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("offset", torch.zeros(4))
        self.scale = torch.nn.Parameter(torch.ones(4))

    def forward(self, x):
        return (x - self.offset) * self.scale


class RunningMean(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(3))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.mean.mul_(0.9).add_(x.mean(0) * 0.1)
        self.steps += 1
        return x - self.mean


class ModeDependent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if self.training:
            return y * 2
        return y


def train_then_eval(model, x):
    model.train()
    a = model(x)
    model.eval()
    b = model(x)
    return a, b, model.training


class Blocks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(3)])
        self.heads = torch.nn.ModuleDict({"a": torch.nn.Linear(4, 2), "b": torch.nn.Linear(4, 3)})

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x) + i
        return {name: head(x) for name, head in self.heads.items()}


class Residual(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.norm = torch.nn.LayerNorm(inner.fc1.in_features)

    def forward(self, x):
        return x + self.inner(self.norm(x))


class Attention(torch.nn.Module):
    def __init__(self, width=8, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (c // self.heads) ** 0.5
        mask = torch.ones(t, t).tril() == 0
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        return self.out((att @ v).transpose(1, 2).reshape(b, t, c))


def attention_program(model, x):
    return model(x)


def parameters_loop(model, x):
    total = x.sum() * 0
    for name, p in model.named_parameters():
        if "weight" in name:
            total = total + p.pow(2).sum()
    return total, len(list(model.parameters()))


def functional_with_module_params(model, x):
    return torch.nn.functional.linear(x, model.fc1.weight, model.fc1.bias).relu()


def embedding_program(model, idx):
    return model(idx).mean(1)


def conv_program(model, x):
    return torch.nn.functional.max_pool2d(model(x).relu(), 2).flatten(1)


def _backward(f, rng):
    model = seeded(MLP(), rng)
    x = randn(rng, 3, 8).requires_grad_()
    loss = f(model, x).pow(2).mean()
    loss.backward()
    return [loss, x.grad, [p.grad for p in model.parameters()]]


def loss_program(model, x):
    return model(x).tanh()


class Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x) * self.calls


def _hooked(rng):
    model = seeded(torch.nn.Linear(4, 4), rng)
    model.register_forward_hook(lambda module, args, out: out * 2)
    return model, randn(rng, 2, 4)


def sdpa_program(q, k, v):
    causal = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    return causal, torch.nn.functional.scaled_dot_product_attention(q, k, v)


def classifier_loss(model, x, target):
    logits = model(x)
    return torch.nn.functional.cross_entropy(logits, target), logits.argmax(-1)


class Caching(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3, 3)
        self.last = None

    def forward(self, x):
        y = self.proj(x)
        self.last = y.detach()
        return y.sum()


def _sequential():
    return torch.nn.Sequential(
        torch.nn.Linear(6, 12), torch.nn.ReLU(), torch.nn.Linear(12, 3), torch.nn.Softmax(dim=-1)
    )


def _conv():
    return torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.BatchNorm2d(4))


CASES = [
    dict(fn=mlp_program, inputs=lambda rng: (seeded(MLP(), rng), randn(rng, 3, 8)), graphs=1),
    dict(fn=call, name="sequential", inputs=lambda rng: (seeded(_sequential(), rng), randn(rng, 4, 6)), graphs=1),
    dict(fn=call, name="buffers", inputs=lambda rng: (seeded(WithBuffer(), rng), randn(rng, 2, 4)), graphs=1),
    dict(
        fn=call,
        name="buffer_updates",
        calls=lambda rng: [(m, randn(rng, 5, 3)) for m in [seeded(RunningMean(), rng)] for _ in range(2)],
        graphs=1,
    ),
    dict(fn=train_then_eval, inputs=lambda rng: (seeded(ModeDependent(), rng), randn(rng, 2, 4)), graphs=1),
    dict(fn=call, name="module_list_dict", inputs=lambda rng: (seeded(Blocks(), rng), randn(rng, 3, 4)), graphs=1),
    dict(
        fn=call,
        name="residual_layernorm",
        inputs=lambda rng: (seeded(Residual(MLP()), rng), randn(rng, 2, 8)),
        graphs=1,
    ),
    dict(fn=attention_program, inputs=lambda rng: (seeded(Attention(), rng), randn(rng, 2, 5, 8)), graphs=1),
    dict(fn=parameters_loop, inputs=lambda rng: (seeded(MLP(), rng), randn(rng, 2)), graphs=1),
    dict(fn=functional_with_module_params, inputs=lambda rng: (seeded(MLP(), rng), randn(rng, 2, 8)), graphs=1),
    dict(
        fn=embedding_program,
        inputs=lambda rng: (seeded(torch.nn.Embedding(10, 4), rng), torch.tensor(rng.integers(0, 10, (2, 3)))),
        graphs=1,
    ),
    dict(fn=conv_program, inputs=lambda rng: (seeded(_conv().eval(), rng), randn(rng, 2, 2, 6, 6)), graphs=1),
    dict(fn=loss_program, name="backward_through_graph", driver=_backward, graphs=1),
    dict(
        fn=call,
        name="attribute_counter",
        calls=lambda rng: [(m, randn(rng, 2, 3)) for m in [seeded(Counting(), rng)] for _ in range(2)],
        graphs=2,
    ),
    dict(fn=call, name="forward_hook", inputs=_hooked, graphs=1),
    dict(fn=sdpa_program, inputs=lambda rng: tuple(randn(rng, 2, 2, 5, 4) for _ in range(3)), graphs=1),
    dict(
        fn=classifier_loss,
        inputs=lambda rng: (seeded(_sequential(), rng), randn(rng, 5, 6), torch.tensor(rng.integers(0, 3, (5,)))),
        graphs=1,
    ),
    dict(fn=call, name="module_stores_tensor", inputs=lambda rng: (seeded(Caching(), rng), randn(rng, 2, 3)), graphs=1),
    dict(fn=call_twice, inputs=lambda rng: (seeded(torch.nn.Linear(3, 3), rng), randn(rng, 2, 3)), graphs=1),
    dict(
        fn=call,
        name="batchnorm_training",
        inputs=lambda rng: (seeded(torch.nn.BatchNorm1d(3), rng), randn(rng, 6, 3)),
        graphs=1,
    ),
]
