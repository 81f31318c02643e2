"""The core op set against PyTorch's Core ATen IR, and ``ember._decomp``'s API against ``torch._decomp``.

PyTorch marks its core ops with ``torch.Tag.core``. Among the ops Ember defines, every difference
between the two sets is listed below with its reason; a test holds the lists to the current sets
both ways, so that a change to either side shows up here.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

import ember  # noqa: E402
from ember._decomp import (  # noqa: E402
    core_aten_decompositions,
    get_decompositions,
    register_decomposition,
    remove_decompositions,
)
from ember.core.aten.sparse import coo_ops  # noqa: E402
from ember.core.dispatch import OpOverload, all_ops  # noqa: E402

_RANDOM = (
    "a draw from the random generator: kept whole so that a lowered graph draws the numbers eager draws "
    "(a decomposition into other draws would not); PyTorch's core lists only rand, randn and randperm, "
    "and its code generator lowers the others itself"
)
_DATA_DEPENDENT = (
    "its output's size depends on the data: no decomposition into core ops gives it without reading values"
)
_SELECTION = (
    "a selection by order (its values and indices follow the kernel's rules for ties and NaN, which no "
    "decomposition into sort and indexing keeps); PyTorch's code generator calls its kernel"
)
_SEARCH = "a binary search over sorted boundaries: one kernel; PyTorch's code generator calls it too"
_VEC = "PyTorch's core lists the .vec overload; ours reaches every mode as this overload (its .vec decomposes to it)"

# Ours core, PyTorch's not.
OURS_ONLY = {
    **dict.fromkeys(
        [
            "bernoulli.default",
            "bernoulli.p",
            "multinomial.default",
            "normal.Tensor_Tensor",
            "normal.Tensor_float",
            "normal.float_Tensor",
            "normal.float_float",
            "rand.generator",
            "rand_like.default",
            "rand_like.generator",
            "randint.default",
            "randint.generator",
            "randint.low",
            "randint.low_generator",
            "randint_like.default",
            "randint_like.generator",
            "randint_like.low_dtype",
            "randint_like.low_generator_dtype",
            "randn.generator",
            "randn_like.default",
            "randn_like.generator",
            "randperm.generator",
        ],
        _RANDOM,
    ),
    **dict.fromkeys(
        [
            "_unique2.default",
            "unique_dim.default",
            "unique_consecutive.default",
            "masked_select.default",
            "nonzero_static.default",
        ],
        _DATA_DEPENDENT,
    ),
    **dict.fromkeys(
        [
            "kthvalue.default",
            "median.default",
            "median.dim",
            "nanmedian.default",
            "nanmedian.dim",
            "mode.default",
        ],
        _SELECTION,
    ),
    "sort.stable": "the stable sort (sort.default, which PyTorch lists, does not promise stability)",
    **dict.fromkeys(["searchsorted.Tensor", "searchsorted.Scalar", "bucketize.Tensor", "bucketize.Scalar"], _SEARCH),
    "cumprod.default": "a scan, as cumsum (which PyTorch lists): the code generator lowers scans itself",
    "erfinv.default": "no closed form in core ops: the code generator calls a library erfinv, as PyTorch's does",
    **dict.fromkeys(
        ["bitwise_left_shift.Tensor", "bitwise_right_shift.Tensor"],
        "one instruction; arithmetic in core ops would not give its results for shifts past the width",
    ),
    "unfold.default": "an overlapping-window view: only as_strided expresses it, which passes cannot reason about",
    "view.dtype": "a reinterpretation of the bits: no arithmetic gives it",
    "hash_tensor.default": "an xor reduction of each element's 64-bit pattern: no core reduction computes it",
    **dict.fromkeys(
        ["segment_reduce.default", "_segment_reduce_backward.default"],
        "a reduction over segments of data-given lengths: the code generator calls its kernel",
    ),
    "_linalg_svd.default": "a LAPACK kernel the code generator calls externally (as matmul-like ops)",
    **dict.fromkeys(
        [
            f"{name}.default"
            for name in (
                "_linalg_eigh",
                "linalg_cholesky_ex",
                "linalg_det",
                "linalg_eig",
                "linalg_inv_ex",
                "linalg_lstsq",
                "linalg_lu_factor_ex",
                "linalg_matrix_exp",
                "linalg_qr",
                "linalg_slogdet",
                "linalg_solve_ex",
                "linalg_solve_triangular",
                "geqrf",
                "linalg_ldl_factor_ex",
                "linalg_ldl_solve",
            )
        ],
        "a LAPACK kernel the code generator calls externally (as matmul-like ops)",
    ),
    **dict.fromkeys(
        ["digamma.default", "erfc.default", "i0.default", "lgamma.default", "logit.default", "sinc.default"]
        + ["xlogy.Tensor"]
        + [
            f"special_{name}.default"
            for name in [
                "bessel_j0",
                "bessel_j1",
                "bessel_y0",
                "bessel_y1",
                "chebyshev_polynomial_t",
                "chebyshev_polynomial_u",
                "chebyshev_polynomial_v",
                "chebyshev_polynomial_w",
                "entr",
                "erfcx",
                "gammainc",
                "gammaincc",
                "hermite_polynomial_h",
                "hermite_polynomial_he",
                "i0e",
                "i1",
                "i1e",
                "laguerre_polynomial_l",
                "legendre_polynomial_p",
                "log_ndtr",
                "modified_bessel_i0",
                "modified_bessel_i1",
                "modified_bessel_k0",
                "modified_bessel_k1",
                "ndtr",
                "ndtri",
                "scaled_modified_bessel_k0",
                "scaled_modified_bessel_k1",
                "shifted_chebyshev_polynomial_t",
                "shifted_chebyshev_polynomial_u",
                "shifted_chebyshev_polynomial_v",
                "shifted_chebyshev_polynomial_w",
                "spherical_bessel_j0",
                "xlog1py",
                "zeta",
            ]
        ],
        "a special function with no closed form in core ops: one kernel the code generator calls, as erfinv",
    ),
    "_fft_c2c.default": "an FFT kernel the code generator calls externally, as PyTorch's _fft_r2c and _fft_c2r",
    "diagonal_scatter.default": "the inverse of diagonal that functionalization writes: a strided write, as "
    "slice_scatter (which PyTorch lists) is",
    "as_strided_scatter.default": "the inverse of as_strided that functionalization writes: no other core op "
    "expresses a write through arbitrary strides",
    "upsample_bilinear2d.default": _VEC,
    "upsample_nearest2d.default": _VEC,
    **dict.fromkeys(
        ["view_as_real.default", "view_as_complex.default"],
        "a complex tensor's storage read as its reals, or back: a view across dtypes that no other core view "
        "expresses (PyTorch's code generator falls back to eager for complex tensors)",
    ),
    **dict.fromkeys(
        ["conj_physical.default", "complex.default", "polar.default"],
        "a pointwise op that makes or conjugates complex numbers: one kernel, as the code generator has no complex "
        "arithmetic to decompose it into (PyTorch's falls back to eager for complex tensors)",
    ),
}

# The sparse layout's own ops, neither core nor lowered (PyTorch's table decomposes some into other
# sparse ops): the code generator compiles dense tensors only, so they run as eager calls.
SPARSE = {f"{op.name}.{op.overload}" for op in vars(coo_ops).values() if isinstance(op, OpOverload)}

# PyTorch's core, ours not (among the ops Ember defines).
THEIRS_ONLY = {
    "_native_batch_norm_legit.default": "it updates running_mean and running_var in place, so ours is not "
    "functional; functionalization writes it as the form returning the new statistics",
    "atan2.out": "an out= form: ours are never core (functionalization turns them into the functional form)",
    "resize_.default": "it changes its input's size in place, so ours is not functional; it stays an eager call "
    "in compiled graphs",
    "upsample_bilinear2d.vec": "ours decomposes to upsample_bilinear2d.default, which is core",
    "upsample_nearest2d.vec": "ours decomposes to upsample_nearest2d.default, which is core",
}


def _theirs() -> set[str]:
    """PyTorch's core ops, from its registry of every op (``dir(torch.ops.aten)`` lists only the packets
    touched so far, so it would depend on what earlier tests did)."""
    core = set()
    for qualified in torch._C._dispatch_get_all_op_names():
        if not qualified.startswith("aten::"):
            continue
        name, _, overload = qualified[len("aten::") :].partition(".")
        try:
            op = getattr(getattr(torch.ops.aten, name), overload or "default")
        except (AttributeError, RuntimeError):
            continue
        if torch.Tag.core in op.tags:
            core.add(f"{name}.{overload or 'default'}")
    return core


def _ours() -> dict[str, object]:
    return {f"{op.name}.{op.overload}": op for op in all_ops() if op.namespace == "aten"}


def test_core_set_differs_from_pytorchs_only_where_listed():
    theirs, ours = _theirs(), _ours()
    ours_core = {name for name, op in ours.items() if "core" in op.tags}
    assert sorted(ours_core - theirs) == sorted(OURS_ONLY)
    assert sorted((theirs & set(ours)) - ours_core) == sorted(THEIRS_ONLY)


def test_pytorchs_decomposed_ops_are_lowered_by_ours():
    """An op PyTorch's core table decomposes is lowered by ours too, unless listed as kept core."""
    from torch._decomp import core_aten_decompositions as theirs_table

    theirs = {f"{op._opname}.{op._overloadname}" for op in theirs_table() if hasattr(op, "_overloadname")}
    ours = {f"{op.name}.{op.overload}" for op in core_aten_decompositions()}
    defined = _ours()
    missing = sorted(
        name
        for name in theirs & set(defined)
        if defined[name].form == "functional"
        and name not in ours
        and name not in OURS_ONLY
        and name not in SPARSE
        and "core" not in defined[name].tags
    )
    assert not missing, f"PyTorch lowers these and we do not: {missing}"


# -- the API of ember._decomp against torch._decomp -----------------------------------------------


def _names(table) -> set[str]:
    return {str(op) for op in table}


@pytest.mark.parametrize("packet", ["addcmul", "clamp_min", "silu", "transpose", "all"])
def test_get_decompositions_of_a_packet_gives_its_decomposed_overloads(packet):
    ours = get_decompositions([getattr(ember.ops.aten, packet)])
    theirs = torch._decomp.get_decompositions([getattr(torch.ops.aten, packet)])
    assert ours and theirs
    assert all(str(op).startswith(f"aten.{packet}.") for op in ours)
    # Both give overloads of that packet only; ours are the overloads it defines and lowers.
    assert {str(op) for op in theirs} & _names(ours)
    assert all(callable(fn) for fn in ours.values())


def test_get_decompositions_of_an_overload_and_of_a_core_op():
    ours = get_decompositions([ember.ops.aten.addcmul.default, ember.ops.aten.mm.default])
    theirs = torch._decomp.get_decompositions([torch.ops.aten.addcmul.default, torch.ops.aten.mm.default])
    assert _names(ours) == _names(theirs) == {"aten.addcmul.default"}  # mm has none: left out silently
    with pytest.raises(AssertionError, match="type must be one of"):
        get_decompositions([], type="nope")
    with pytest.raises(AssertionError, match="type must be one of"):
        torch._decomp.get_decompositions([], type="nope")


def test_register_decomposition_in_a_registry():
    def scale(x):
        return x * 2

    ours_registry, theirs_registry = {}, {}
    assert register_decomposition(ember.ops.aten.silu.default, registry=ours_registry)(scale) is scale
    assert torch._decomp.register_decomposition(torch.ops.aten.silu.default, registry=theirs_registry)(scale) is scale
    assert _names(ours_registry) == _names(theirs_registry) == {"aten.silu.default"}
    # Twice is an error, in both.
    with pytest.raises(RuntimeError, match=r"duplicate registrations for aten\.silu\.default"):
        register_decomposition(ember.ops.aten.silu.default, registry=ours_registry)(scale)
    with pytest.raises(RuntimeError, match=r"duplicate registrations for aten\.silu\.default"):
        torch._decomp.register_decomposition(torch.ops.aten.silu.default, registry=theirs_registry)(scale)


def test_register_decomposition_of_packets_and_lists():
    def negate(x):
        return -x

    ours, theirs = {}, {}
    register_decomposition([ember.ops.aten.clamp_min, ember.ops.aten.mv.default], registry=ours)(negate)
    torch._decomp.register_decomposition([torch.ops.aten.clamp_min, torch.ops.aten.mv.default], registry=theirs)(negate)
    # A packet stands for its overloads: ours define fewer of them than PyTorch's.
    assert _names(ours) <= _names(theirs)
    assert {"aten.clamp_min.default", "aten.clamp_min.Tensor", "aten.mv.default"} <= _names(ours)
    remove_decompositions(ours, [ember.ops.aten.clamp_min])
    torch._decomp.remove_decompositions(theirs, [torch.ops.aten.clamp_min])
    assert _names(ours) == {"aten.mv.default"} and "aten.mv.default" in _names(theirs)


def test_core_aten_decompositions_is_a_fresh_mapping_of_non_core_ops():
    ours = core_aten_decompositions()
    theirs = torch._decomp.core_aten_decompositions()
    assert ours is not core_aten_decompositions()
    ours.pop(ember.ops.aten.addcmul.default)
    assert ember.ops.aten.addcmul.default in core_aten_decompositions()
    for table, core in ((ours, lambda op: "core" in op.tags), (theirs, lambda op: torch.Tag.core in op.tags)):
        assert not [op for op in table if hasattr(op, "tags") and core(op) and "silu" in str(op)]
