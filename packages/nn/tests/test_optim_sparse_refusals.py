"""Optimizers without a sparse update refuse sparse gradients with PyTorch's message."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

NAMES = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adadelta", "Rprop", "ASGD", "Adafactor"]


def _message(lib, name: str) -> str:
    emb = lib.nn.Embedding(5, 3, sparse=True)
    opt = getattr(lib.optim, name)(emb.parameters())
    emb(lib.tensor([1, 2])).sum().backward()
    with pytest.raises(RuntimeError) as error:
        opt.step()
    return str(error.value)


@pytest.mark.parametrize("name", NAMES)
def test_sparse_gradients_are_refused_as_pytorch_does(name):
    assert _message(ember, name) == _message(torch, name)
