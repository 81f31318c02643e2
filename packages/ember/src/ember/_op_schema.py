"""``ember.Tag``, ``ember.FunctionSchema``, ``ember.Argument`` and ``ember.parse_schema``: the op
table's tags and schemas under PyTorch's top-level names.

``Tag`` has PyTorch's members and Ember's own (``view``, ``random``, ``factory``,
``nondeterministic``); it is a string enum, so ``ember.Tag.pointwise in op.tags`` asks the op
table's tags (which are strings) directly. ``parse_schema`` returns the op table's own schema
object, which has PyTorch's attributes (``name``, ``overload_name``, ``arguments``, ``returns``,
``is_mutable``; on arguments ``default_value``, ``kwarg_only``, ``alias_info``, ``N``, ``is_out``).
"""

from __future__ import annotations

import enum

from ember.core import schema as _schema
from ember.core.dispatch import TAGS as _EMBER_TAGS
from ember.core.schema import Argument, FunctionSchema

__all__ = ["Argument", "FunctionSchema", "Tag", "parse_schema"]

_PYTORCH_TAGS = (
    "core",
    "cudagraph_unsafe",
    "data_dependent_output",
    "dynamic_output_shape",
    "flexible_layout",
    "generated",
    "inplace",
    "inplace_view",
    "maybe_aliasing_or_mutating",
    "needs_contiguous_strides",
    "needs_exact_strides",
    "needs_fixed_stride_order",
    "nondeterministic_bitwise",
    "nondeterministic_seeded",
    "out",
    "out_variant",
    "pointwise",
    "pt2_compliant_tag",
    "reduction",
    "view_copy",
)

Tag = enum.StrEnum("Tag", [(name, name) for name in sorted(set(_PYTORCH_TAGS) | _EMBER_TAGS)], module=__name__)
Tag.__doc__ = "The tags of ops (``op.tags``): PyTorch's and Ember's, compared equal to their names."


def parse_schema(schema: str) -> FunctionSchema:
    """Parse a schema in PyTorch's native-function syntax (``"aten::add.Tensor(Tensor self, ...) -> Tensor"``)."""
    try:
        return _schema.parse_schema(schema)
    except ValueError as error:
        raise RuntimeError(str(error)) from None
