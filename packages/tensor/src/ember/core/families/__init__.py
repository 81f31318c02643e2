"""Op families: each module registers its ops (schema, meta kernel, CPU kernel, decomposition)
and their Python surface. Importing this package registers them all, in dependency order."""

from ember.core.families import copying, views, indexing, factories, binary  # noqa: F401  isort: skip
