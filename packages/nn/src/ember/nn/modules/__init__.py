"""Every module class of ``ember.nn``, one concept per file."""

from ember.nn.modules.activation import (
    ELU,
    GELU,
    Hardtanh,
    LeakyReLU,
    LogSoftmax,
    Mish,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from ember.nn.modules.attention import MultiheadAttention
from ember.nn.modules.batchnorm import BatchNorm1d, BatchNorm2d
from ember.nn.modules.container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from ember.nn.modules.conv import Conv1d, Conv2d, ConvTranspose2d
from ember.nn.modules.dropout import Dropout
from ember.nn.modules.embedding_bag import EmbeddingBag
from ember.nn.modules.flatten import Flatten, Unflatten
from ember.nn.modules.linear import Bilinear, Identity, Linear
from ember.nn.modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from ember.nn.modules.module import Module
from ember.nn.modules.normalization import GroupNorm, LayerNorm, RMSNorm
from ember.nn.modules.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from ember.nn.modules.rnn import GRU, LSTM, RNN, RNNBase
from ember.nn.modules.sparse import Embedding
from ember.nn.modules.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from ember.nn.modules.upsampling import Upsample

__all__ = [
    "ELU",
    "GELU",
    "GRU",
    "LSTM",
    "RNN",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm1d",
    "BatchNorm2d",
    "Bilinear",
    "Conv1d",
    "Conv2d",
    "ConvTranspose2d",
    "CrossEntropyLoss",
    "Dropout",
    "Embedding",
    "EmbeddingBag",
    "Flatten",
    "GroupNorm",
    "Hardtanh",
    "HuberLoss",
    "Identity",
    "KLDivLoss",
    "L1Loss",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSoftmax",
    "MSELoss",
    "MaxPool1d",
    "MaxPool2d",
    "Mish",
    "Module",
    "ModuleDict",
    "ModuleList",
    "MultiheadAttention",
    "NLLLoss",
    "ParameterDict",
    "ParameterList",
    "RMSNorm",
    "RNNBase",
    "ReLU",
    "ReLU6",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SmoothL1Loss",
    "Softmax",
    "Softplus",
    "Tanh",
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "Unflatten",
    "Upsample",
]
