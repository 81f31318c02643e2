"""Per-sample programs that write in place to views, for ``vmap`` composed with ``grad``/``vjp``.

Each program takes the library (``ember`` or ``torch``) and one sample ``x`` (a vector of 6, or a
3x3 matrix for ``SQUARE``) and returns a scalar. The in-place write must reach the base's
gradient: a composition that loses it gives a different, silently wrong, answer.
"""

from __future__ import annotations


def slice_mul(lib, x):
    r = x.clone()
    r[1:].mul_(x[:-1])
    return r.sum()


def slice_add_then_square(lib, x):
    r = x * 2
    r[2:5].add_(x[:3] * x[1:4])
    return (r * r).sum()


def select_add(lib, x):
    r = x.clone()
    r[3].add_(x[0] * x[5])
    return (r * r.sin()).sum()


def copy_into_slice(lib, x):
    r = x.clone()
    r[1:].copy_(x[:-1] ** 2)
    return (r * x).sum()


def setitem_slice(lib, x):
    r = x * 3
    r[::2] = x[1::2] * x[::2]
    return (r * r).sum()


def setitem_index_tensor(lib, x):
    r = x.clone()
    r[1:][lib.tensor([0, 2, 3])] = x[:3] * 3
    return (r * r).sum()


def setitem_mask(lib, x):
    r = x.clone()
    mask = lib.tensor([True, False, True, False, True, False])
    r[mask] = x[1::2] * x[::2]
    return (r.cos() * x).sum()


def view_then_slice(lib, x):
    r = x.clone()
    r.view(2, 3)[:, 1].mul_(x[:2])
    return (r * r).sum()


def chain_of_views(lib, x):
    r = x.clone()
    v = r.view(3, 2).t()[1:][0]  # the odd positions, through four views
    v.mul_(x[::2])
    return (r * x.exp()).sum()


def expand_of_clone(lib, x):
    r = x.clone()
    e = r.unsqueeze(0).expand(4, 6)
    e[2].mul_(x)  # one row of the expand is all of r
    return (r * r).sum()


def stale_view(lib, x):
    r = x.clone()
    v = r[2:]  # taken before the base is written: its history must follow the write
    r.mul_(x)
    return (v * v).sum() + r.sum()


def two_overlapping_writes(lib, x):
    r = x.clone()
    r[1:4].mul_(x[2:5])
    r[2:].add_(r[:-2].clone() * x[:4])
    return (r * r).sum()


def write_into_no_grad_base(lib, x):
    r = lib.zeros_like(x)
    r[1:].copy_(x[:-1] * x[1:])
    return (r * r).sum()


def view_taken_before_base_needs_grad(lib, x):
    r = lib.zeros_like(x)
    v = r[1:]  # a view of a base that has no history yet
    r.add_(x)  # the base gets one in place: the view must read its own out of it
    return (v * v).sum() + r.sum()


def view_of_view_written_base_read(lib, x):
    r = x.clone()
    v = r[1:]
    v[1:3].mul_(x[3:5])
    return (r.exp() * x).sum() + v.sum()


def transpose_row(lib, x):
    r = x.clone()
    r.t()[1].mul_(x[0])
    return (r * r).sum()


def diagonal_mul(lib, x):
    r = x.clone()
    r.diagonal().mul_(x.diagonal() + 1)
    return (r * x).sum()


def transpose_diagonal_add(lib, x):
    r = x * x
    r.t()[:, 1:].diagonal().add_(x[0, :2])
    return r.sum() + (r * r).sum()


VECTOR = [
    slice_mul,
    slice_add_then_square,
    select_add,
    copy_into_slice,
    setitem_slice,
    setitem_index_tensor,
    setitem_mask,
    view_then_slice,
    chain_of_views,
    expand_of_clone,
    stale_view,
    two_overlapping_writes,
    write_into_no_grad_base,
    view_taken_before_base_needs_grad,
    view_of_view_written_base_read,
]
SQUARE = [transpose_row, diagonal_mul, transpose_diagonal_add]
PROGRAMS = [(p, (6,)) for p in VECTOR] + [(p, (3, 3)) for p in SQUARE]
IDS = [p.__name__ for p, _ in PROGRAMS]
