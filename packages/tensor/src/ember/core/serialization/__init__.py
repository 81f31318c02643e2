"""Checkpoints in PyTorch's format: ``ember.save``/``ember.load`` (``checkpoint``), the zip container
(``archive``), the pickler that writes PyTorch's names (``pickler``), the weights-only unpickler
(``unpickler``) and the table of names a checkpoint may use (``rebuild``)."""

from .checkpoint import load, save
from .rebuild import register_parameter_class

__all__ = ["load", "register_parameter_class", "save"]
