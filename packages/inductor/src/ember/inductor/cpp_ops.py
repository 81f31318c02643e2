"""The C++ ops handler: each ``ops.*`` call appends a line of C++ and returns the variable it sets.

Values are C++ variables of the compute type (``float`` for float16/bfloat16, which are widened at
loads and narrowed at stores). A reduction splits the body: what comes before ``ops.reduction`` runs
in the reduction loop, what comes after (``store_reduction``) once the loop is done.
"""

from __future__ import annotations

import math
from typing import Any

import sympy

from ember.core import dtypes as D
from ember.inductor.indirect import ADVANCED, error_code
from ember.inductor.indirect import CPP_PRELUDE as INDIRECT_PRELUDE
from ember.inductor.sizevars import ExprPrinter
from ember.inductor.virtualized import BINARY, UNARY, add_template_ops, indirect_symbol

CTYPES = {
    D.bool_: "bool",
    D.uint8: "uint8_t",
    D.int8: "int8_t",
    D.int16: "int16_t",
    D.int32: "int32_t",
    D.int64: "int64_t",
    D.float16: "_Float16",
    D.bfloat16: "uint16_t",
    D.float32: "float",
    D.float64: "double",
}


def storage_ctype(dtype: Any) -> str:
    try:
        return CTYPES[dtype]
    except KeyError:
        raise NotImplementedError(f"the C++ code generator has no kernels for {dtype} tensors") from None


def compute_ctype(dtype: Any) -> str:
    return "float" if dtype in (D.float16, D.bfloat16) else storage_ctype(dtype)


class CppPrinter(ExprPrinter):
    """C++ source of an index expression: ``/`` divides (indexes are non-negative), ``std::min``/``max``
    bound the sizes of slices with symbolic bounds."""

    div = "/"
    language = "C++"
    minmax = ("std::max<int64_t>", "std::min<int64_t>")


cexpr = CppPrinter()


_UNARY_CPP = {
    "abs": "std::abs({0})",
    "neg": "(-{0})",
    "exp": "std::exp({0})",
    "exp2": "std::exp2({0})",
    "expm1": "std::expm1({0})",
    "log": "std::log({0})",
    "log2": "std::log2({0})",
    "log10": "std::log10({0})",
    "log1p": "std::log1p({0})",
    "sqrt": "std::sqrt({0})",
    "rsqrt": "(decltype({0})(1) / std::sqrt({0}))",
    "sin": "std::sin({0})",
    "cos": "std::cos({0})",
    "tan": "std::tan({0})",
    "tanh": "std::tanh({0})",
    "sinh": "std::sinh({0})",
    "cosh": "std::cosh({0})",
    "asin": "std::asin({0})",
    "acos": "std::acos({0})",
    "atan": "std::atan({0})",
    "asinh": "std::asinh({0})",
    "acosh": "std::acosh({0})",
    "atanh": "std::atanh({0})",
    "erf": "std::erf({0})",
    "erfc": "std::erfc({0})",
    "sigmoid": "(decltype({0})(1) / (decltype({0})(1) + std::exp(-{0})))",
    "reciprocal": "(decltype({0})(1) / {0})",
    "floor": "std::floor({0})",
    "ceil": "std::ceil({0})",
    "trunc": "std::trunc({0})",
    "round": "std::nearbyint({0})",
    "sign": "decltype({0})((decltype({0})(0) < {0}) - ({0} < decltype({0})(0)))",
    "logical_not": "(!{0})",
    "bitwise_not": "ember_bitwise_not({0})",
    "isnan": "ember_isnan({0})",
    "isinf": "ember_isinf({0})",
    "relu": "({0} < decltype({0})(0) ? decltype({0})(0) : {0})",
}
_BINARY_CPP = {
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "truediv": "({0} / {1})",
    "floordiv": "ember_floordiv({0}, {1})",
    "remainder": "ember_remainder({0}, {1})",
    "pow": "ember_pow({0}, {1})",
    "maximum": "ember_max({0}, {1})",
    "minimum": "ember_min({0}, {1})",
    "atan2": "std::atan2({0}, {1})",
    "eq": "({0} == {1})",
    "ne": "({0} != {1})",
    "lt": "({0} < {1})",
    "le": "({0} <= {1})",
    "gt": "({0} > {1})",
    "ge": "({0} >= {1})",
    "logical_and": "(bool({0}) && bool({1}))",
    "logical_or": "(bool({0}) || bool({1}))",
    "logical_xor": "(bool({0}) != bool({1}))",
    "bitwise_and": "({0} & {1})",
    "bitwise_or": "({0} | {1})",
    "bitwise_xor": "({0} ^ {1})",
}
assert set(_UNARY_CPP) == set(UNARY) and set(_BINARY_CPP) == set(BINARY)

REDUCTION_INIT = {
    "sum": "0",
    "prod": "1",
    "any": "false",
    "max": "ember_lowest<{t}>()",
    "min": "ember_highest<{t}>()",
}
REDUCTION_UPDATE = {
    "sum": "{acc} = {acc} + {v};",
    "prod": "{acc} = {acc} * {v};",
    "any": "{acc} = {acc} || bool({v});",
    "max": "{acc} = ember_max({acc}, {v});",
    "min": "{acc} = ember_min({acc}, {v});",
    "welford": "{acc}.add({v});",
    "argmax": "{acc}.update_max({v}, {ridx});",
    "argmin": "{acc}.update_min({v}, {ridx});",
}
REDUCTION_COMBINE = {
    "sum": "{acc} = {acc} + {other};",
    "prod": "{acc} = {acc} * {other};",
    "any": "{acc} = {acc} || {other};",
    "max": "{acc} = ember_max({acc}, {other});",
    "min": "{acc} = ember_min({acc}, {other});",
    "welford": "{acc}.combine({other});",
    "argmax": "{acc}.combine_max({other});",
    "argmin": "{acc}.combine_min({other});",
}


class CppOverrides:
    """Writes one node's body as C++ lines: ``body`` (in the loop) and ``post`` (after a reduction)."""

    def __init__(self, arg_of: dict[str, str], dtype_of: dict[str, Any], ridx: str, prefix: str) -> None:
        self.arg_of = arg_of  # buffer name -> C++ pointer variable
        self.dtype_of = dtype_of
        self.ridx = ridx  # the linear reduction index, for argmax/argmin
        self.prefix = prefix
        self.body: list[str] = []
        self.post: list[str] = []
        self.reduction_info: tuple[str, str, str] | None = None  # (acc, reduction type, C++ acc type)
        self._n = 0

    def _var(self, expr: str) -> str:
        self._n += 1
        name = f"{self.prefix}t{self._n}"
        (self.post if self.reduction_info else self.body).append(f"auto {name} = {expr};")
        return name

    def load(self, name: str, index: sympy.Expr) -> str:
        dtype = self.dtype_of[name]
        ref = f"{self.arg_of[name]}[{cexpr(index)}]"
        if dtype == D.bfloat16:
            return self._var(f"ember_bf16_to_float({ref})")
        return self._var(f"static_cast<{compute_ctype(dtype)}>({ref})")

    def _store_expr(self, name: str, index: sympy.Expr, value: str) -> str:
        dtype = self.dtype_of[name]
        ref = f"{self.arg_of[name]}[{cexpr(index)}]"
        if dtype == D.bfloat16:
            return f"{ref} = ember_float_to_bf16({value});"
        return f"{ref} = static_cast<{storage_ctype(dtype)}>({value});"

    def store(self, name: str, index: sympy.Expr, value: str) -> None:
        self.body.append(self._store_expr(name, index, value))

    def store_reduction(self, name: str, index: sympy.Expr, value: str) -> None:
        self.post.append(self._store_expr(name, index, value))

    def constant(self, value: float | int | bool, dtype: Any) -> str:
        t = compute_ctype(dtype)
        if isinstance(value, bool) or t == "bool":
            return "true" if value else "false"
        if isinstance(value, float):
            if math.isnan(value):
                return f"std::numeric_limits<{t}>::quiet_NaN()"
            if math.isinf(value):
                return f"({'-' if value < 0 else ''}std::numeric_limits<{t}>::infinity())"
            if t in ("float", "double"):
                return f"static_cast<{t}>({value!r})"
            return f"static_cast<{t}>({int(value)})"
        return f"static_cast<{t}>({int(value)}LL)"

    def index_expr(self, expr: sympy.Expr, dtype: Any) -> str:
        return self._var(f"static_cast<{compute_ctype(dtype)}>({cexpr(expr)})")

    def to_dtype(self, x: str, dtype: Any) -> str:
        return self._var(f"static_cast<{compute_ctype(dtype)}>({x})")

    def where(self, cond: str, a: str, b: str) -> str:
        return self._var(f"({cond} ? {a} : decltype({a})({b}))")

    def reduction(self, dtype: Any, reduction_type: str, value: str) -> str:
        t = compute_ctype(dtype)
        acc = f"{self.prefix}acc"
        if reduction_type == "welford":
            acc_t = f"ember_welford<{t}>"
        elif reduction_type in ("argmax", "argmin"):
            acc_t = "ember_arg<double>"  # double holds every float and integer value an index is taken of
        else:
            acc_t = t
        self.body.append(REDUCTION_UPDATE[reduction_type].format(acc=acc, v=value, ridx=self.ridx))
        self.reduction_info = (acc, reduction_type, acc_t)
        return acc

    def getitem(self, value: str, i: int) -> str:
        return self._var(f"{value}.get({i})")

    # random numbers: Philox of (seed, offset), as eager's generator draws them (``ember.core.random_bits``)
    def rand(self, seed: str, offset: str) -> str:
        return self._var(f"ember_rand({seed}, {offset})")

    def randn(self, seed: str, offset: str) -> str:
        return self._var(f"ember_randn({seed}, {offset})")

    def randint64(self, seed: str, offset: str, low: str, high: str) -> str:
        return self._var(f"ember_randint64({seed}, {offset}, {low}, {high})")

    def indirect_indexing(
        self, value: str, size: Any, check: bool = True, wrap: bool = True, error: Any = None
    ) -> sympy.Symbol:
        """``value`` as an index in ``[0, size)``: with ``wrap``, counted from the end when negative; with ``check``, a value still
        out of range records ``error`` (``indirect.error_code``) in the kernel's error slot and reads
        element 0, never memory out of bounds. One line, which ``codegen_cpp`` may hoist out of the
        innermost loop when ``value`` does not depend on that loop's index."""
        self._n += 1
        sym = indirect_symbol(f"{self.prefix}{self._n}")
        v, n = sym.name, cexpr(size)
        line = f"int64_t {v} = static_cast<int64_t>({value});"
        if wrap:
            line += f" if ({v} < 0) {v} += {n};"
        if check:
            code = int(error) if error else error_code(ADVANCED, 0)  # never 0: 0 is "no error"
            line += (
                f" if (EMBER_UNLIKELY(static_cast<uint64_t>({v}) >= static_cast<uint64_t>({n})))"
                f" {{ ember_index_fail(ember_err, {code}, {value}, {n}); {v} = 0; }}"
            )
        (self.post if self.reduction_info else self.body).append(line)
        return sym


add_template_ops(CppOverrides, _UNARY_CPP | _BINARY_CPP)


def acc_init(reduction_type: str, acc_t: str) -> str:
    if reduction_type in ("welford", "argmax", "argmin"):
        return f"{acc_t}()"
    return REDUCTION_INIT[reduction_type].format(t=acc_t)


PRELUDE = r"""
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

// glibc's vector math (libmvec) for the float functions, so loops calling them vectorize; glibc
// declares these only under -ffast-math, whose other effects (no NaN, no inf) we do not want.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(EMBER_NO_MVEC)
#define EMBER_SIMD __attribute__((__simd__("notinbranch")))
extern "C" {
EMBER_SIMD float expf(float) noexcept;
EMBER_SIMD float exp2f(float) noexcept;
EMBER_SIMD float expm1f(float) noexcept;
EMBER_SIMD float logf(float) noexcept;
EMBER_SIMD float log2f(float) noexcept;
EMBER_SIMD float log10f(float) noexcept;
EMBER_SIMD float log1pf(float) noexcept;
EMBER_SIMD float sinf(float) noexcept;
EMBER_SIMD float cosf(float) noexcept;
EMBER_SIMD float tanf(float) noexcept;
EMBER_SIMD float tanhf(float) noexcept;
EMBER_SIMD float sinhf(float) noexcept;
EMBER_SIMD float coshf(float) noexcept;
EMBER_SIMD float asinf(float) noexcept;
EMBER_SIMD float acosf(float) noexcept;
EMBER_SIMD float atanf(float) noexcept;
EMBER_SIMD float erff(float) noexcept;
EMBER_SIMD float erfcf(float) noexcept;
}
#endif

template <typename T> static inline T ember_lowest() {
  return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
}
template <typename T> static inline T ember_highest() {
  return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
}
template <typename T> static inline bool ember_isnan(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x); else return false;
}
template <typename T> static inline bool ember_isinf(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isinf(x); else return false;
}
// NaN-propagating max/min, as eager's maximum/minimum and amax/amin.
template <typename A, typename B> static inline auto ember_max(A a, B b) {
  using T = std::common_type_t<A, B>;
  return (ember_isnan(T(a)) || T(a) > T(b)) ? T(a) : T(b);
}
template <typename A, typename B> static inline auto ember_min(A a, B b) {
  using T = std::common_type_t<A, B>;
  return (ember_isnan(T(a)) || T(a) < T(b)) ? T(a) : T(b);
}
template <typename T> static inline T ember_bitwise_not(T x) {
  if constexpr (std::is_same_v<T, bool>) return !x; else return ~x;
}
template <typename A, typename B> static inline auto ember_floordiv(A a, B b) {
  using T = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<T>) return std::floor(T(a) / T(b));
  else { T q = T(a) / T(b); if ((T(a) % T(b) != 0) && ((T(a) < 0) != (T(b) < 0))) --q; return q; }
}
template <typename A, typename B> static inline auto ember_remainder(A a, B b) {
  using T = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<T>) { T r = std::fmod(T(a), T(b)); return (r != 0 && ((r < 0) != (T(b) < 0))) ? r + T(b) : r; }
  else { T r = T(a) % T(b); return (r != 0 && ((r < 0) != (T(b) < 0))) ? r + T(b) : r; }
}
template <typename A, typename B> static inline auto ember_pow(A a, B b) {
  using T = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(std::pow(T(a), T(b)));
  else { T r = 1, base = a; T e = b; if (e < 0) return T(base == 1 ? 1 : (base == -1 ? (e % 2 ? -1 : 1) : 0));
         while (e) { if (e & 1) r *= base; base *= base; e >>= 1; } return r; }
}
static inline float ember_bf16_to_float(uint16_t v) {
  uint32_t bits = uint32_t(v) << 16; float out; std::memcpy(&out, &bits, 4); return out;
}
static inline uint16_t ember_float_to_bf16(float f) {
  uint32_t bits; std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return 0x7fc0;
  bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest even
  return uint16_t(bits >> 16);
}
// Welford's running mean and sum of squared deviations (m2), and how to merge two of them.
template <typename T> struct ember_welford {
  T mean = 0, m2 = 0; int64_t n = 0;
  inline void add(T x) { n += 1; T d = x - mean; mean += d / T(n); m2 += d * (x - mean); }
  inline void combine(const ember_welford& o) {
    if (o.n == 0) return; if (n == 0) { *this = o; return; }
    int64_t total = n + o.n; T d = o.mean - mean; T w = T(o.n) / T(total);
    mean += d * w; m2 += o.m2 + d * d * T(n) * w; n = total;
  }
  inline T get(int i) const { return i == 0 ? mean : (i == 1 ? m2 : T(n)); }
};
// The first index of the max (min); NaN wins, as in eager's argmax.
template <typename T> struct ember_arg {
  T value = 0; int64_t index = -1;
  inline void update_max(T v, int64_t i) {
    if (index < 0 || (!ember_isnan(value) && (ember_isnan(v) || v > value))) { value = v; index = i; }
  }
  inline void update_min(T v, int64_t i) {
    if (index < 0 || (!ember_isnan(value) && (ember_isnan(v) || v < value))) { value = v; index = i; }
  }
  inline void combine_max(const ember_arg& o) {
    if (o.index < 0) return;
    if (index < 0 || (!ember_isnan(value) && (ember_isnan(o.value) || o.value > value || (o.value == value && o.index < index)))) *this = o;
  }
  inline void combine_min(const ember_arg& o) {
    if (o.index < 0) return;
    if (index < 0 || (!ember_isnan(value) && (ember_isnan(o.value) || o.value < value || (o.value == value && o.index < index)))) *this = o;
  }
  inline int64_t get(int) const { return index; }
};
"""

# ``logcumsumexp``'s step: log(exp(a) + exp(b)) without overflow.
LOGADDEXP = r"""
template <typename T> static inline T ember_logaddexp(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  T hi = a < b ? b : a, lo = a < b ? a : b;
  if (lo == -std::numeric_limits<T>::infinity() || hi == std::numeric_limits<T>::infinity()) return hi;
  return hi + std::log1p(std::exp(lo - hi));
}
"""

# Philox 4x32-10 of (seed, counter), and eager's samplers on its words (``ember.core.philox`` and
# ``ember.core.random_bits`` define them; these give the same bits, the normal's libm calls aside).
PHILOX = r"""
struct ember_philox_out { uint32_t w0, w1, w2, w3; };
static inline ember_philox_out ember_philox(uint64_t seed, uint64_t counter) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t(c0) * 0xD2511F53ull, p2 = uint64_t(c2) * 0xCD9E8D57ull;
    uint32_t n0 = uint32_t(p2 >> 32) ^ c1 ^ k0, n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p2); c3 = uint32_t(p0); c0 = n0; c2 = n2;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  return {c0, c1, c2, c3};
}
static inline float ember_uint_to_uniform(uint32_t w) {
  int32_t x = int32_t(w); if (x < 0) x = ~x;
  return float(x) * 4.6566127342e-10f;
}
static inline float ember_rand(int64_t seed, int64_t offset) {
  float u = ember_uint_to_uniform(ember_philox(uint64_t(seed), uint64_t(offset)).w0);
  return u < 0.99999994039535522461f ? u : 0.99999994039535522461f;  // eager never returns 1
}
static inline float ember_randn(int64_t seed, int64_t offset) {
  ember_philox_out o = ember_philox(uint64_t(seed), uint64_t(offset));
  float u1 = ember_uint_to_uniform(o.w0); u1 = u1 < 1.0e-7f ? 1.0e-7f : u1;
  float theta = 6.283185307179586f * ember_uint_to_uniform(o.w1);
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(theta);
}
static inline int64_t ember_randint64(int64_t seed, int64_t offset, int64_t low, int64_t high) {
  ember_philox_out o = ember_philox(uint64_t(seed), uint64_t(offset));
  uint64_t span = uint64_t(high) - uint64_t(low);
  uint64_t drawn = span <= (1ull << 32) ? uint64_t(o.w0) % span : ((uint64_t(o.w1) << 32) | o.w0) % span;
  return int64_t(drawn + uint64_t(low));
}
"""
PRELUDE += LOGADDEXP + PHILOX + INDIRECT_PRELUDE
