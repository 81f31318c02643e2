"""``ember.onnx``: importable so that scripts which export at the end run up to that point; ONNX
export itself is not available in Ember, and ``export`` says so."""

from __future__ import annotations

from typing import Any

__all__ = ["OnnxExporterError", "dynamo_export", "export", "is_in_onnx_export"]

_MESSAGE = (
    "ONNX export is not available in ember: there is no ONNX exporter yet. "
    "Save the weights with ember.save(model.state_dict(), path) instead."
)


class OnnxExporterError(RuntimeError):
    """Raised by the ONNX export functions."""


def export(model: Any, args: Any = (), f: Any = None, *unused: Any, **kwargs: Any) -> None:
    raise OnnxExporterError(_MESSAGE)


def dynamo_export(model: Any, *model_args: Any, **model_kwargs: Any) -> None:
    raise OnnxExporterError(_MESSAGE)


def is_in_onnx_export() -> bool:
    return False
