"""``ember.backends.cuda``: ``is_built()`` and the cuBLAS flags under ``matmul``.

``matmul.allow_tf32`` reads and writes the float32 matmul precision of ``ember.backends.settings``
(True means "high"), as PyTorch links the two; the reduced-precision-reduction flags are stored
only. Unknown attribute names raise ``AttributeError`` on reading and on writing, as in PyTorch, so
that a misspelt flag does not pass silently.
"""

from __future__ import annotations

from ember.backends import settings

__all__ = ["is_built", "matmul"]


def is_built() -> bool:
    """Whether this Ember can run CUDA kernels; False without the ember-cuda package."""
    import ember

    return bool(ember.cuda.is_available())


class _Matmul:
    _FLAGS = ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict.fromkeys(self._FLAGS, True))

    def __getattr__(self, name: str):
        if name == "allow_tf32":
            return settings.get_float32_matmul_precision() != "highest"
        if name in self._FLAGS:
            return self._values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value) -> None:
        if name == "allow_tf32":
            if not isinstance(value, bool):
                raise RuntimeError(f"set_allow_tf32_cublas expects a bool, but got {type(value).__name__}")
            settings.set_float32_matmul_precision("high" if value else "highest")
        elif name in self._FLAGS:
            # PyTorch also takes a (bool, bool) pair here, whose second value has no CPU meaning.
            if not isinstance(value, bool):
                raise TypeError(f"{name} expects a bool or a tuple/list of bools, but got {type(value)}")
            self._values[name] = value
        else:
            raise AttributeError(f"Unknown attribute {name}")


matmul = _Matmul()
