"""``rearrange(tensor, pattern, **axes_lengths)``: einops-style reshaping and transposition.

A pattern ``"b (h w) c -> b h w c"`` names the input's dimensions on the left and the output's on
the right. Parentheses group axes that share one dimension (their sizes multiply), ``...`` stands
for the dimensions not named, and ``1`` is a dimension of size one. The rearrangement is a reshape
of the input into its elementary axes, a permutation of them into the output's order, and a
reshape into the output's groups, so the result is a view where the memory allows.
"""

from __future__ import annotations

import keyword
import math

from ember.core.tensor import Tensor

__all__ = ["rearrange"]

_ELLIPSIS = "..."
_BARE = "...bare"  # a bare ellipsis, outside parentheses


def _parse(expression: str) -> list[list[str]]:
    """The groups of one side: a name alone is a group of one; ``1`` and ``()`` are empty groups.
    A bare ``...`` is the group ``[_BARE]``: one group per dimension it stands for."""
    groups: list[list[str]] = []
    current: list[str] | None = None
    text = expression.replace(_ELLIPSIS, f" {_ELLIPSIS} ")
    for token in text.replace("(", " ( ").replace(")", " ) ").split():
        if token == "(":
            if current is not None:
                raise ValueError(f"Imbalanced parentheses in expression: '{expression}'")
            current = []
        elif token == ")":
            if current is None:
                raise ValueError("Brackets are not balanced")
            groups.append(current)
            current = None
        else:
            if token == "1":
                names: list[str] = []
            elif token.isdigit():
                raise ValueError("rearrange only supports unnamed axes of size 1")
            elif token == _ELLIPSIS:
                names = [_ELLIPSIS if current is not None else _BARE]
            elif token.isidentifier() and not keyword.iskeyword(token):
                names = [token]
            else:
                raise ValueError(f"Invalid axis identifier: {token}")
            if current is None:
                groups.append(names)
            else:
                current.extend(names)
    if current is not None:
        raise ValueError(f"Imbalanced parentheses in expression: '{expression}'")
    return groups


def rearrange(tensor: Tensor | list[Tensor] | tuple[Tensor, ...], pattern: str, **axes_lengths: int) -> Tensor:
    """Rearrange the dimensions of ``tensor`` (a list or tuple is stacked first) by ``pattern``;
    ``axes_lengths`` gives the sizes of axes that a grouped dimension splits into."""
    if isinstance(tensor, list | tuple):
        from ember.core import functions

        tensor = functions["stack"](list(tensor))
    if pattern.count("->") != 1:
        raise ValueError("Pattern must contain a single '->' separator")
    left_text, right_text = pattern.split("->")
    left, right = _parse(left_text), _parse(right_text)
    if any(_ELLIPSIS in group for group in left):
        raise ValueError("Ellipsis inside parenthesis in the left side is not allowed")
    left = [[_ELLIPSIS] if group == [_BARE] else group for group in left]
    bare_on_right = [_BARE] in right
    right = [[_ELLIPSIS] if group == [_BARE] else group for group in right]
    left_names = [name for group in left for name in group]
    right_names = [name for group in right for name in group]
    for names in (left_names, right_names):
        if len(set(names)) != len(names):
            raise ValueError(f"Indexing expression contains duplicate dimension: {pattern}")
    if set(left_names) != set(right_names):
        raise ValueError(
            "Identifiers only on one side of rearrange expression (should be on both): "
            f"{set(left_names) ^ set(right_names)}"
        )
    for name in axes_lengths:
        if name not in left_names:
            raise ValueError(f"Axis {name} is not used in the pattern")

    shape = tuple(tensor.shape)
    has_ellipsis = _ELLIPSIS in left_names
    named = len(left) - (1 if has_ellipsis else 0)
    if has_ellipsis and len(shape) < named:
        raise ValueError(
            f"Number of dimensions in pattern ({named}) must be at most the number of dimensions in the tensor "
            f"({len(shape)}) plus the ellipsis"
        )
    if not has_ellipsis and len(shape) != named:
        raise ValueError(
            f"Number of dimensions in pattern ({named}) must be equal to the number of dimensions in the tensor "
            f"({len(shape)})"
        )
    ellipsis_names = [f"{_ELLIPSIS}{i}" for i in range(len(shape) - named)] if has_ellipsis else []

    def expand(groups: list[list[str]]) -> list[list[str]]:
        return [[n for name in g for n in (ellipsis_names if name == _ELLIPSIS else [name])] for g in groups]

    def split_bare(groups: list[list[str]]) -> list[list[str]]:
        flat: list[list[str]] = []
        for group in groups:
            flat.extend([[n] for n in ellipsis_names] if group == [_ELLIPSIS] else [group])
        return flat

    # A bare ellipsis is one group per dimension it covers; "(...)" on the right is one group.
    left = expand(split_bare(left))
    right = expand(split_bare(right) if bare_on_right else right)

    sizes: dict[str, int] = dict(axes_lengths)
    for group, size in zip(left, shape, strict=True):
        unknown = [name for name in group if name not in sizes]
        known = math.prod(sizes[name] for name in group if name in sizes)
        if len(unknown) > 1:
            raise ValueError(f"cannot infer the sizes of two dimensions at once {unknown[0]} and {unknown[1]}")
        if unknown:
            if known == 0 or size % known:
                raise ValueError(f"Dimension of size {size} is not divisible into the axes {group}")
            sizes[unknown[0]] = size // known
        elif known != size:
            raise ValueError(f"Dimension of size {size} does not match the axes {group} of sizes {known}")

    elementary = [name for group in left for name in group]
    split = tensor.reshape(tuple(sizes[name] for name in elementary))
    order = [elementary.index(name) for group in right for name in group]
    moved = split.permute(tuple(order))
    return moved.reshape(tuple(math.prod(sizes[name] for name in group) for group in right))
