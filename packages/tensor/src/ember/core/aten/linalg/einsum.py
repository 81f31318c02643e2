"""``einsum``: a decomposition into diagonals, permutes, sums and ``bmm``, in PyTorch's order of steps.

The equation is parsed into labels (``A-Z`` then ``a-z``, ``...`` for broadcast dimensions). Every
operand is brought to one common layout: the output's dimensions first, then the contracted ones;
a label repeated in an operand takes the diagonal, a label it lacks becomes a size-1 dimension.
Operands then combine pairwise, left to right (or along ``path``): a dimension that only one side
still needs is summed away first, and the product of the pair is one ``bmm`` over
(shared-kept, left-only, contracted) x (shared-kept, contracted, right-only) reshapes. Because the
steps are PyTorch's, results have PyTorch's dtypes and strides (a permuted view where it gives one).
"""

from __future__ import annotations

from ember.core.api import public
from ember.core.aten.linalg.matmul import bmm
from ember.core.aten.pointwise import binary
from ember.core.aten.reductions import reductions
from ember.core.aten.shape import views
from ember.core.dispatch import define
from ember.core.tensor import Tensor

einsum = define("einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor")

_LETTERS = 26
_ELLIPSIS = 2 * _LETTERS


def _subscript(label: str) -> int:
    return ord(label) - ord("A") if label.isupper() else ord(label) - ord("a") + _LETTERS


def _label(subscript: int) -> str:
    return chr(ord("A") + subscript) if subscript < _LETTERS else chr(ord("a") + subscript - _LETTERS)


def _is_label(c: str) -> bool:
    return c.isascii() and c.isalpha()


def _parse_inputs(lhs: str, count: int) -> list[list[int]]:
    labels: list[list[int]] = [[] for _ in range(count)]
    current, seen_ellipsis, i = 0, False, 0
    while i < len(lhs):
        c = lhs[i]
        if c == ".":
            if seen_ellipsis:
                raise RuntimeError(f"einsum(): found '.' for operand {current} for which an ellipsis was already found")
            if not (i + 2 < len(lhs) and lhs[i + 1] == "." and lhs[i + 2] == "."):
                raise RuntimeError(f"einsum(): found '.' for operand {current} that is not part of any ellipsis")
            labels[current].append(_ELLIPSIS)
            seen_ellipsis = True
            i += 2
        elif c == ",":
            current += 1
            if current >= count:
                raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
            seen_ellipsis = False
        elif c != " ":
            if not _is_label(c):
                raise RuntimeError(
                    f"einsum(): invalid subscript given at index {i} in the equation string, subscripts must be in "
                    "[a-zA-Z]"
                )
            labels[current].append(_subscript(c))
        i += 1
    if current != count - 1:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    return labels


def _parse_output(rhs: str, offset: int, counts: list[int], ell_dims: int) -> tuple[dict[int, int], int, int, bool]:
    """Positions of the output's labels, the ellipsis's position, the output's ndim, ellipsis present."""
    positions: dict[int, int] = {}
    index = ell_index = 0
    ell_in_output = False
    i = 0
    while i < len(rhs):
        c = rhs[i]
        if c == ".":
            if ell_in_output:
                raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was already found")
            if not (i + 2 < len(rhs) and rhs[i + 1] == "." and rhs[i + 2] == "."):
                raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis (...)")
            ell_index, index, ell_in_output = index, index + ell_dims, True
            i += 2
        elif c != " ":
            if not _is_label(c):
                raise RuntimeError(
                    f"einsum(): invalid subscript given at index {offset + i} in the equation string, subscripts "
                    "must be in [a-zA-Z]"
                )
            s = _subscript(c)
            if counts[s] == 0 or s in positions:
                problem = (
                    "appears more than once in the output"
                    if s in positions
                    else "does not appear in the equation for any input operand"
                )
                raise RuntimeError(f"einsum(): output subscript {c} {problem}")
            positions[s] = index
            index += 1
        i += 1
    return positions, ell_index, index, ell_in_output


def _align(op: Tensor, labels: list[int], i: int, positions, ell_index, ell_dims, total, sizes, ell_sizes, counts):
    """``op`` as a tensor of ``total`` dims in the common order (diagonals taken, missing dims size 1)."""
    permutation = [-1] * total
    dim = 0
    covered = op.ndim - (len(labels) - 1)  # the dims the ellipsis stands for, if it is there
    for s in labels:
        if s == _ELLIPSIS:
            for j in range(ell_dims - covered, ell_dims):
                size = op._shape[dim]
                if size != 1:
                    if ell_sizes[j] != 1 and ell_sizes[j] != size:
                        raise RuntimeError(
                            f"einsum(): dimension {dim} covered by ellipsis in operand {i}has size {size} which does "
                            f"not broadcast with previously seen ellipsis with size {ell_sizes[j]} for the respective "
                            "dimension"
                        )
                    ell_sizes[j] = size
                    counts[ell_index + j] += 1
                permutation[ell_index + j] = dim
                dim += 1
        elif permutation[positions[s]] == -1:
            size = op._shape[dim]
            if size != 1:
                if sizes[s] != 1 and sizes[s] != size:
                    raise RuntimeError(
                        f"einsum(): subscript {_label(s)} has size {size} for operand {i} which does not broadcast "
                        f"with previously seen size {sizes[s]}"
                    )
                sizes[s] = size
                counts[positions[s]] += 1
            permutation[positions[s]] = dim
            dim += 1
        else:
            previous = permutation[positions[s]]
            if op._shape[dim] != op._shape[previous]:
                raise RuntimeError(
                    f"einsum(): subscript {_label(s)} is repeated for operand {i} but the sizes don't match, "
                    f"{op._shape[dim]} != {op._shape[previous]}"
                )
            op = views.movedim(views.diagonal(op, 0, previous, dim), -1, previous)
    for k, value in enumerate(permutation):
        if value == -1:
            op = views.unsqueeze(op, dim)
            permutation[k] = dim
            dim += 1
    return views.permute(op, permutation)


@einsum.register_decomposition
def _einsum(equation: str, tensors, *, path=None) -> Tensor:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("einsum(): must provide at least one operand")
    count = len(tensors)
    if path is not None:
        expected = 1 if count == 1 else (count - 1) * 2
        if len(path) != expected:
            raise RuntimeError(
                f"einsum(): expected contraction path given in path parameter to have size {expected} but got "
                f"{len(path)}"
            )
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    labels = _parse_inputs(lhs, count)

    counts = [0] * _ELLIPSIS
    ell_dims = 0
    for i, (op, op_labels) in enumerate(zip(tensors, labels, strict=True)):
        named = len(op_labels) - (_ELLIPSIS in op_labels)
        for s in op_labels:
            if s == _ELLIPSIS:
                ell_dims = max(ell_dims, op.ndim - named)
            else:
                counts[s] += 1
        if (_ELLIPSIS in op_labels and named > op.ndim) or (_ELLIPSIS not in op_labels and named != op.ndim):
            if _ELLIPSIS in op_labels:
                detail = f"is more than the number of dimensions ({op.ndim}) for operand {i}"
            else:
                detail = (
                    f"does not match the number of dimensions ({op.ndim}) for operand {i} and no ellipsis was given"
                )
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) {detail}")

    # The common order: output dims first (implicitly: the ellipsis, then labels seen once, sorted).
    if arrow < 0:
        positions, ell_index, ell_in_output = {}, 0, True
        index = ell_dims
        for s in range(_ELLIPSIS):
            if counts[s] == 1:
                positions[s] = index
                index += 1
        out_dims = index
    else:
        positions, ell_index, out_dims, ell_in_output = _parse_output(
            equation[arrow + 2 :], arrow + 2, counts, ell_dims
        )
    total = out_dims
    if not ell_in_output:
        ell_index, total = total, total + ell_dims
    for s in range(_ELLIPSIS):
        if counts[s] > 0 and s not in positions:
            positions[s] = total
            total += 1

    sizes, ell_sizes, dim_counts = [1] * _ELLIPSIS, [1] * ell_dims, [0] * total
    ops = [
        _align(op, op_labels, i, positions, ell_index, ell_dims, total, sizes, ell_sizes, dim_counts)
        for i, (op, op_labels) in enumerate(zip(tensors, labels, strict=True))
    ]

    steps = iter(path or ())
    while len(ops) > 1:
        i, j = 0, 1
        if path is not None:
            i, j = next(steps), next(steps)
            i, j = min(i, j), max(i, j)
            if i == j or i < 0 or j >= len(ops):
                problem = "cannot contract an operand with itself" if i == j else "operand index is out of bounds"
                raise RuntimeError(f"einsum(): invalid contraction ({i}, {j}) {problem}")
        a, b = ops[i], ops[j]
        del ops[j]
        del ops[i]
        sum_dims, a_sum, b_sum = [], [], []
        for d in range(out_dims, total):
            if a._shape[d] != 1 and b._shape[d] != 1:
                dim_counts[d] -= 1
                if dim_counts[d] == 1:
                    sum_dims.append(d)
                    dim_counts[d] = 0
            elif dim_counts[d] == 1:
                if a._shape[d] != 1:
                    a_sum.append(d)
                    dim_counts[d] = 0
                elif b._shape[d] != 1:
                    b_sum.append(d)
                    dim_counts[d] = 0
        if a_sum:
            a = reductions.sum_dim(a, a_sum, True)
        if b_sum:
            b = reductions.sum_dim(b, b_sum, True)
        product = _sumproduct_pair(a, b, sum_dims)
        if path is not None:
            ops.append(product)
        else:
            ops.insert(0, product)

    result = ops[0]
    if total > out_dims:
        if count > 1:
            return views.view(result, result._shape[:out_dims])
        return reductions.sum_dim(result, list(range(out_dims, total)))
    return result


def _sumproduct_pair(left: Tensor, right: Tensor, sum_dims: list[int]) -> Tensor:
    """``(left * right).sum(sum_dims, keepdim=True)`` of two aligned operands, through one ``bmm``."""
    if not sum_dims:
        return binary.mul.functional(left, right)
    summed = set(sum_dims)
    both, left_only, right_only = [], [], []
    both_size = left_size = right_size = sum_size = 1
    for d in range(left.ndim):
        in_left, in_right = left._shape[d] != 1, right._shape[d] != 1
        if d in summed:
            if in_left and in_right:
                if left._shape[d] != right._shape[d]:
                    raise RuntimeError("non-broadcast dimensions must match")
                sum_size *= left._shape[d]
            elif in_left:
                left = reductions.sum_dim(left, [d], True)
            elif in_right:
                right = reductions.sum_dim(right, [d], True)
        elif in_left and in_right:
            if left._shape[d] != right._shape[d]:
                raise RuntimeError("non-broadcast dimensions must match")
            both.append(d)
            both_size *= left._shape[d]
        elif in_left:
            left_only.append(d)
            left_size *= left._shape[d]
        else:
            right_only.append(d)
            right_size *= right._shape[d]
    if left_only and right_only and min(left_only) > max(right_only):
        # Every left-only output dim comes after every right-only one: PyTorch swaps the operands so
        # that the product's rows and columns come out in the output's order.
        left, right = right, left
        left_only, right_only = right_only, left_only
        left_size, right_size = right_size, left_size
    out_shape = (
        [left._shape[d] for d in both]
        + [left._shape[d] for d in left_only]
        + [1] * len(sum_dims)
        + [right._shape[d] for d in right_only]
    )
    order = both + left_only + sum_dims + right_only
    inverse = [0] * len(order)
    for position, d in enumerate(order):
        inverse[d] = position
    lhs = views.reshape(views.permute(left, order), (both_size, left_size, sum_size))
    rhs = views.reshape(
        views.permute(right, both + sum_dims + right_only + left_only), (both_size, sum_size, right_size)
    )
    return views.permute(views.view(bmm(lhs, rhs), out_shape), inverse)


def _sublist_equation(args: tuple) -> tuple[str, list]:
    """``einsum(a, [0, 1], b, [1, 2], [0, 2])``: the sublist format as an equation."""

    def letters(sublist) -> str:
        out = []
        for s in sublist:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int) and 0 <= s < _ELLIPSIS:
                out.append(_label(s))
            else:
                raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")
        return "".join(out)

    operands = list(args[0::2][: len(args) // 2])
    inputs = [letters(s) for s in args[1::2][: len(args) // 2]]
    equation = ",".join(inputs)
    if len(args) % 2 == 1:
        equation += "->" + letters(args[-1])
    return equation, operands


@public("einsum")
def einsum_function(*args) -> Tensor:
    """``ember.einsum(equation, *operands)`` (operands also as one list) or the sublist format."""
    if len(args) < 2:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, or at least one operand and its "
            "subscripts list"
        )
    if isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], list | tuple):
            operands = list(operands[0])
    else:
        equation, operands = _sublist_equation(args)
    for i, op in enumerate(operands):
        if not isinstance(op, Tensor):
            raise TypeError(f"einsum(): expected Tensor as element {i} in argument 1, but got {type(op).__name__}")
    return einsum(equation, operands)
