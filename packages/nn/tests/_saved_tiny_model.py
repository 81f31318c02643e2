"""A small module class at a fixed import path, for checkpoints that save whole objects."""

import ember


class TinyNet(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = ember.nn.Linear(3, 2)
        self.register_buffer("scale", ember.ones(2))

    def forward(self, x):
        return self.fc(x) * self.scale


class Holder:
    """A plain picklable object holding tensors."""

    def __init__(self, weights, note):
        self.weights = weights
        self.note = note
