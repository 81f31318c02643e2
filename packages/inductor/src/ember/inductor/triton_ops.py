"""The Triton ops handler: each ``ops.*`` call appends a line of Triton and returns the variable it sets.

Values are blocks of a program's rows by the lanes of its inner loop (``[XBLOCK, RBLOCK]``, or
``[XBLOCK, 1]`` for what depends on the row alone), of the compute type: float16 and bfloat16 are
widened to float32 at loads and narrowed at stores, as in the C++ kernels. A reduction keeps one
accumulator per lane across the inner loop (``init`` lines before it, the update in ``body``) and
combines the lanes once the loop is done (``post``).

What the handler cannot write raises ``TritonUnsupported``, naming the op: the code generator then
leaves that loop to the C++ kernels (CPU tensors) and logs why.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import sympy

from ember.core import dtypes as D
from ember.inductor.indirect import ADVANCED, error_code
from ember.inductor.sizevars import ExprPrinter
from ember.inductor.virtualized import BINARY, UNARY, add_template_ops, indirect_symbol


class TritonUnsupported(NotImplementedError):
    """A loop the Triton code generator has no code for (an op, a dtype)."""


TL_TYPES = {
    D.bool_: "tl.int1",
    D.uint8: "tl.uint8",
    D.int8: "tl.int8",
    D.int16: "tl.int16",
    D.int32: "tl.int32",
    D.int64: "tl.int64",
    D.float16: "tl.float16",
    D.bfloat16: "tl.bfloat16",
    D.float32: "tl.float32",
    D.float64: "tl.float64",
}


def storage_type(dtype: Any) -> str:
    try:
        return TL_TYPES[dtype]
    except KeyError:
        raise TritonUnsupported(f"no Triton kernels for {dtype} tensors") from None


def compute_type(dtype: Any) -> str:
    return "tl.float32" if dtype in (D.float16, D.bfloat16) else storage_type(dtype)


class TritonPrinter(ExprPrinter):
    """Index expressions over blocks: ``//`` divides (indexes are non-negative, so Triton's truncating
    integer division is floor division), ``tl.minimum``/``tl.maximum`` bound symbolic slices."""

    div = "//"
    language = "Triton"
    minmax = ("tl.maximum", "tl.minimum")


texpr = TritonPrinter()

_UNARY = {
    "abs": "tl.abs({0})",
    "neg": "(-{0})",
    "exp": "tl.exp({0})",
    "exp2": "tl.exp2({0})",
    "expm1": "th.expm1({0})",
    "log": "tl.log({0})",
    "log2": "tl.log2({0})",
    "log10": "th.log10({0})",
    "log1p": "th.log1p({0})",
    "sqrt": "tl.sqrt({0})",
    "rsqrt": "(1.0 / tl.sqrt({0}))",
    "sin": "tl.sin({0})",
    "cos": "tl.cos({0})",
    "tan": "th.tan({0})",
    "tanh": "th.tanh({0})",
    "sinh": "th.sinh({0})",
    "cosh": "th.cosh({0})",
    "asinh": "th.asinh({0})",
    "acosh": "th.acosh({0})",
    "atanh": "th.atanh({0})",
    "erf": "tl.erf({0})",
    "sigmoid": "th.sigmoid({0})",
    "reciprocal": "(1.0 / {0})",
    "floor": "th.floor({0})",
    "ceil": "th.ceil({0})",
    "trunc": "th.trunc({0})",
    "round": "th.round_half_even({0})",
    "sign": "th.sign({0})",
    "logical_not": "({0} == 0)",
    "bitwise_not": "(~{0})",
    "isnan": "th.isnan({0})",
    "isinf": "th.isinf({0})",
    "relu": "th.relu({0})",
}
# no accurate form from Triton's core math (see triton_helpers): these loops stay C++
REFUSED = ("asin", "acos", "atan", "erfc", "atan2")
_BINARY = {
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "truediv": "({0} / {1})",
    "floordiv": "th.floordiv({0}, {1})",
    "remainder": "th.remainder({0}, {1})",
    "pow": "th.pow({0}, {1})",
    "maximum": "th.maximum({0}, {1})",
    "minimum": "th.minimum({0}, {1})",
    "eq": "({0} == {1})",
    "ne": "({0} != {1})",
    "lt": "({0} < {1})",
    "le": "({0} <= {1})",
    "gt": "({0} > {1})",
    "ge": "({0} >= {1})",
    "logical_and": "(({0} != 0) & ({1} != 0))",
    "logical_or": "(({0} != 0) | ({1} != 0))",
    "logical_xor": "(({0} != 0) != ({1} != 0))",
    "bitwise_and": "({0} & {1})",
    "bitwise_or": "({0} | {1})",
    "bitwise_xor": "({0} ^ {1})",
}
assert set(_UNARY) | set(_BINARY) | set(REFUSED) == set(UNARY) | set(BINARY)

_INTS = {"tl.int1", "tl.uint8", "tl.int8", "tl.int16", "tl.int32", "tl.int64"}
_BITS = {"tl.float32": ("<f", "<i", "tl.int32"), "tl.float64": ("<d", "<q", "tl.int64")}
_INT_LIMITS = {"tl.uint8": (0, 255), "tl.int8": (-128, 127), "tl.int16": (-(2**15), 2**15 - 1),
               "tl.int32": (-(2**31), 2**31 - 1), "tl.int64": (-(2**63), 2**63 - 1), "tl.int1": (0, 1)}  # fmt: skip


def full(value: float | int | bool, t: str, shape: str = "[1, 1]") -> str:
    """A block of ``value`` of type ``t``: non-finite floats by their bits (no literal spells them)."""
    if t == "tl.int1":
        return f"tl.full({shape}, {1 if value else 0}, tl.int1)"
    if t in _INTS:
        return f"tl.full({shape}, {int(value)}, {t})"
    value = float(value)
    if math.isfinite(value):
        return f"tl.full({shape}, {value!r}, {t})"
    fmt, ifmt, it = _BITS.get(t, _BITS["tl.float32"])
    bits = struct.unpack(ifmt, struct.pack(fmt, value))[0]
    return f"tl.full({shape}, {bits}, {it}).to({t}, bitcast=True)"


def _init(rtype: str, t: str) -> float | int:
    if rtype == "sum":
        return 0
    if rtype == "prod":
        return 1
    if rtype == "any":
        return 0
    if t in _INTS:
        low, high = _INT_LIMITS[t]
        return low if rtype == "max" else high
    return -math.inf if rtype == "max" else math.inf


class TritonOverrides:
    """One node's body as Triton lines: ``init`` (before the inner loop), ``body`` (in it) and
    ``post`` (after it, a reduction's result); ``mask`` names the in-loop mask, ``xmask`` the rows'."""

    def __init__(
        self, arg_of: dict[str, str], dtype_of: dict[str, Any], prefix: str, rindex: str, looped: bool = True
    ) -> None:
        self.arg_of = arg_of  # buffer name -> pointer argument
        self.looped = looped  # whether the body runs in an inner loop (blocks of rows by lanes)
        self.dtype_of = dtype_of
        self.prefix = prefix
        self.rindex = rindex  # the linear index of the inner loop, for argmax/argmin
        self.init: list[str] = []
        self.body: list[str] = []
        self.post: list[str] = []
        self.reduction_type: str | None = None
        self.checks_indexes = False
        self._tuples: dict[str, list[str]] = {}
        self._n = 0

    @property
    def _lines(self) -> list[str]:
        return self.post if self.reduction_type else self.body

    @property
    def _mask(self) -> str:
        return "xmask" if self.reduction_type else f"{self.prefix}mask"

    def _var(self, expr: str) -> str:
        self._n += 1
        name = f"{self.prefix}t{self._n}"
        self._lines.append(f"{name} = {expr}")
        return name

    def _pointer(self, name: str, index: sympy.Expr) -> str:
        # a block of pointers shaped as the mask that guards it (Triton broadcasts masks to pointers, not
        # pointers to masks): the zeros fold away in compiled code
        zero = "xzero" if self.reduction_type or not self.looped else "rzero"
        return f"{self.arg_of[name]} + ({texpr(index)}) + {zero}"

    def load(self, name: str, index: sympy.Expr) -> str:
        dtype = self.dtype_of[name]
        value = f"tl.load({self._pointer(name, index)}, {self._mask}, other=0)"
        if dtype in (D.float16, D.bfloat16):
            value += ".to(tl.float32)"
        return self._var(value)

    def _store(self, name: str, index: sympy.Expr, value: str, mask: str) -> str:
        t = storage_type(self.dtype_of[name])
        cast = f"({value} != 0)" if t == "tl.int1" else f"{value}.to({t})"
        return f"tl.store({self._pointer(name, index)}, {cast}, {mask})"

    def store(self, name: str, index: sympy.Expr, value: str) -> None:
        self.body.append(self._store(name, index, value, f"{self.prefix}mask"))

    def store_reduction(self, name: str, index: sympy.Expr, value: str) -> None:
        self.post.append(self._store(name, index, value, "xmask"))

    def constant(self, value: float | int | bool, dtype: Any) -> str:
        return full(value, compute_type(dtype))

    def index_expr(self, expr: sympy.Expr, dtype: Any) -> str:
        return self._var(f"({texpr(expr)} + izero).to({compute_type(dtype)})")

    def to_dtype(self, x: str, dtype: Any) -> str:
        t = compute_type(dtype)
        return self._var(f"({x} != 0)" if t == "tl.int1" else f"{x}.to({t})")

    def where(self, cond: str, a: str, b: str) -> str:
        return self._var(f"tl.where({cond}, {a}, {b})")

    def reduction(self, dtype: Any, reduction_type: str, value: str) -> str:
        if self.reduction_type is not None:
            raise TritonUnsupported("a loop body with two reductions")
        t = compute_type(dtype)
        p, mask = self.prefix, f"{self.prefix}mask"
        block = "[XBLOCK, RBLOCK]"
        if reduction_type == "welford":
            self.init += [f"{p}mean = {full(0, t, block)}", f"{p}m2 = {full(0, t, block)}",
                          f"{p}n = {full(0, t, block)}"]  # fmt: skip
            self.body += [
                f"{p}v = {value}.to({t})",
                f"{p}n1 = {p}n + 1",
                f"{p}delta = {p}v - {p}mean",
                f"{p}mean1 = {p}mean + {p}delta / {p}n1",
                f"{p}m2 = tl.where({mask}, {p}m2 + {p}delta * ({p}v - {p}mean1), {p}m2)",
                f"{p}mean = tl.where({mask}, {p}mean1, {p}mean)",
                f"{p}n = tl.where({mask}, {p}n1, {p}n)",
            ]
            self.reduction_type = reduction_type
            out = [f"{p}rmean", f"{p}rm2", f"{p}rn"]
            self.post.append(
                f"{', '.join(out)} = tl.reduce(({p}mean, {p}m2, {p}n), 1, th.welford_combine, keep_dims=True)"
            )
            self._tuples[f"{p}welford"] = out
            return f"{p}welford"
        if reduction_type in ("argmax", "argmin"):
            self.init += [f"{p}av = {full(0, 'tl.float64', block)}", f"{p}ai = {full(-1, 'tl.int64', block)}"]
            self.body += [
                f"{p}v = {value}.to(tl.float64)",
                f"{p}cv, {p}ci = th.{reduction_type}_combine({p}av, {p}ai, {p}v, ({self.rindex} + izero).to(tl.int64))",
                f"{p}av = tl.where({mask}, {p}cv, {p}av)",
                f"{p}ai = tl.where({mask}, {p}ci, {p}ai)",
            ]
            self.reduction_type = reduction_type
            out = [f"{p}rv", f"{p}ri"]
            self.post.append(
                f"{p}rv, {p}ri = tl.reduce(({p}av, {p}ai), 1, th.{reduction_type}_combine, keep_dims=True)"
            )
            # the C++ reduction's tuple is (index,): getitem(0) is the index
            self._tuples[f"{p}arg"] = [f"{p}ri"]
            return f"{p}arg"
        acc = f"{p}acc"
        if reduction_type == "any":
            self.init.append(f"{acc} = {full(0, 'tl.int32', block)}")
            self.body.append(f"{acc} = tl.where({mask}, {acc} | ({value} != 0).to(tl.int32), {acc})")
            self.post.append(f"{p}red = tl.max({acc}, 1, keep_dims=True) != 0")
        else:
            combine = {"sum": "{a} + {v}", "prod": "{a} * {v}", "max": "th.maximum({a}, {v})",
                       "min": "th.minimum({a}, {v})"}[reduction_type]  # fmt: skip
            self.init.append(f"{acc} = {full(_init(reduction_type, t), t, block)}")
            update = combine.format(a=acc, v=f"{value}.to({t})")
            self.body.append(f"{acc} = tl.where({mask}, {update}, {acc})")
            if reduction_type == "sum":
                self.post.append(f"{p}red = tl.sum({acc}, 1, keep_dims=True)")
            else:
                fn = {"prod": "mul", "max": "maximum", "min": "minimum"}[reduction_type]
                self.post.append(f"{p}red = tl.reduce({acc}, 1, th.{fn}, keep_dims=True)")
        self.reduction_type = reduction_type
        return f"{p}red"

    def getitem(self, value: str, i: int) -> str:
        return self._tuples[value][i]

    def rand(self, seed: str, offset: str) -> str:
        return self._var(f"th.rand({seed}, {offset})")

    def randn(self, seed: str, offset: str) -> str:
        return self._var(f"th.randn({seed}, {offset})")

    def randint64(self, seed: str, offset: str, low: str, high: str) -> str:
        return self._var(f"th.randint64({seed}, {offset}, {low}, {high})")

    def indirect_indexing(
        self, value: str, size: Any, check: bool = True, wrap: bool = True, error: Any = None
    ) -> sympy.Symbol:
        """``value`` as an index in ``[0, size)`` (see ``CppOverrides.indirect_indexing``): a value out of
        range is recorded in the kernel's error block (code, value, size) and reads element 0."""
        self._n += 1
        sym = indirect_symbol(f"{self.prefix}{self._n}")
        v, n = sym.name, texpr(size)
        lines = [f"{v} = {value}.to(tl.int64)"]
        if wrap:
            lines.append(f"{v} = tl.where({v} < 0, {v} + {n}, {v})")
        if check:
            self.checks_indexes = True
            code = int(error) if error else error_code(ADVANCED, 0)
            bad = f"{v}_bad"
            zero = f"{v}_zero"  # zeros shaped as the checked lanes, to address the error block by
            lines += [
                f"{bad} = (({v} < 0) | ({v} >= {n})) & {self._mask}",
                f"{zero} = {bad}.to(tl.int64) * 0",
                f"tl.store(err_ptr + {zero}, {zero} + {code}, {bad})",
                f"tl.store(err_ptr + 1 + {zero}, {zero} + {value}.to(tl.int64), {bad})",
                f"tl.store(err_ptr + 2 + {zero}, {zero} + {n}, {bad})",
                f"{v} = tl.where({bad}, 0, {v})",
            ]
        self._lines.extend(lines)
        return sym


def _refused(name: str):
    def method(self: TritonOverrides, *args: str) -> str:
        raise TritonUnsupported(f"{name} has no Triton form here (no accurate one from Triton's core math)")

    method.__name__ = name
    return method


add_template_ops(TritonOverrides, _UNARY | _BINARY)
for _name in REFUSED:
    setattr(TritonOverrides, _name, _refused(_name))
