"""``ember._inductor.compile_fx``: PyTorch's path to the backend (``ember.inductor.compile_fx``)."""

from ember.inductor.compile_fx import compile_fx, compile_fx_inner

__all__ = ["compile_fx", "compile_fx_inner"]
