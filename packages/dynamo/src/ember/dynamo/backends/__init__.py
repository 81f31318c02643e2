"""Compile backends: the registry, and the backends Ember ships (``eager``; ``aot_eager`` and
``aot_eager_decomp_partition`` from ``ember.aot``). ``inductor`` comes from the code generator's
package through the entry-point group ``ember.compile_backends``."""

from ember.dynamo.backends import eager as _eager  # noqa: F401  (registers 'eager')
from ember.dynamo.backends.registry import InvalidBackend, list_backends, lookup_backend, register_backend

__all__ = ["InvalidBackend", "list_backends", "lookup_backend", "register_backend"]


def _register_aot_backends() -> None:
    from ember.aot import backends  # noqa: F401  (registers 'aot_eager', 'aot_eager_decomp_partition')


_register_aot_backends()
