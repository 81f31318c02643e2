"""``ember.nn.attention``: attention front ends, as ``torch.nn.attention``."""

from ember.nn.attention import flex_attention as flex_attention
