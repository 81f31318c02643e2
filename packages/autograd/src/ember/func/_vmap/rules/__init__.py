"""vmap's batching rules, one module per kind of op, cut as the core's ``ember.core.aten`` is
(``out`` holds the rules of ``out=`` forms, which every kind has). Importing this package registers
every rule."""

from ember.func._vmap.rules import (  # noqa: F401
    fft,
    indexing,
    linalg,
    linalg_factorizations,
    nn,
    out,
    pointwise,
    random,
    reductions,
    shape,
)
