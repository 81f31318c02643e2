"""``nn.utils``: gradient clipping and flattening parameters to one vector and back."""

from ember.nn.utils import rnn
from ember.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_, get_total_norm
from ember.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "get_total_norm",
    "parameters_to_vector",
    "rnn",
    "vector_to_parameters",
]
