"""``ember.return_types``: the named tuples of ops that return several tensors, as PyTorch's
``torch.return_types``. Each is a tuple (it unpacks and indexes like one) whose fields are also
attributes: ``ember.max(x, 0).values``. The ``_out`` forms are what the ``out=`` variants return."""

from __future__ import annotations

from collections import namedtuple

_FIELDS = {
    "max": ("values", "indices"),
    "min": ("values", "indices"),
    "aminmax": ("min", "max"),
    "cummax": ("values", "indices"),
    "cummin": ("values", "indices"),
    "sort": ("values", "indices"),
    "topk": ("values", "indices"),
    "kthvalue": ("values", "indices"),
    "mode": ("values", "indices"),
    "median": ("values", "indices"),
    "nanmedian": ("values", "indices"),
    "linalg_svd": ("U", "S", "Vh"),
    "linalg_inv_ex": ("inverse", "info"),
    "linalg_cholesky_ex": ("L", "info"),
    "linalg_qr": ("Q", "R"),
    "qr": ("Q", "R"),
    "linalg_eigh": ("eigenvalues", "eigenvectors"),
    "linalg_eig": ("eigenvalues", "eigenvectors"),
    "linalg_lu_factor_ex": ("LU", "pivots", "info"),
    "linalg_lu_factor": ("LU", "pivots"),
    "linalg_lu": ("P", "L", "U"),
    "lu_unpack": ("P", "L", "U"),
    "linalg_solve_ex": ("result", "info"),
    "linalg_slogdet": ("sign", "logabsdet"),
    "slogdet": ("sign", "logabsdet"),
    "linalg_lstsq": ("solution", "residuals", "rank", "singular_values"),
    "svd": ("U", "S", "V"),
    "triangular_solve": ("solution", "cloned_coefficient"),
    "geqrf": ("a", "tau"),
    "linalg_ldl_factor": ("LD", "pivots"),
    "linalg_ldl_factor_ex": ("LD", "pivots", "info"),
    "histogram": ("hist", "bin_edges"),
    "histogramdd": ("hist", "bin_edges"),
    "frexp": ("mantissa", "exponent"),
}


def _make(name: str, fields: tuple):
    cls = namedtuple(name, fields, module="ember.return_types")

    def __repr__(self) -> str:
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self, strict=True))
        return f"ember.return_types.{name}(\n{body})"

    cls.__repr__ = __repr__
    return cls


_NO_OUT_FORM = {"histogramdd"}  # PyTorch's histogramdd has no out= overload

_types = {}
for _name, _fields in _FIELDS.items():
    _types[_name] = _make(_name, _fields)
    if _name not in _NO_OUT_FORM:
        _types[_name + "_out"] = _make(_name + "_out", _fields)
globals().update(_types)

__all__ = sorted(_types)
