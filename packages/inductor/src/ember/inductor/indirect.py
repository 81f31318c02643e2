"""Indirect indexing: an integer value loaded at run time used as an index of a later load.

``ops.indirect_indexing(value, size, check, wrap, error)`` turns a loaded integer into an index symbol
(``virtualized.indirect_symbol``) that later loads put into their index expressions. With ``wrap`` the
C++ code counts a negative value from the end (``-1`` is the last element, as advanced indexing does;
embedding, index_select and gather refuse negative values) and, with ``check``,
tests it against ``size``: a value out of range is recorded in the kernel's error slot (the first one
recorded wins), the load reads element 0 instead of memory out of bounds, and the kernel returns
``-code`` once its loops are done. The wrapper turns that code into the error PyTorch raises.

An error code says which error (``KINDS``) and along which dimension of the indexed tensor:
``code = kind + (len(KINDS) + 1) * dim``. The kernel that records an error also writes the offending
value and the dimension's size into ``DETAIL``, a slot every kernel library is handed when it is loaded
(``attach``), and the message names them as PyTorch's does. The slot is one per process: should two
threads' kernels fail at once, a message may name the other's value; the exception type and the
dimension come from the kernel's own return code.
"""

from __future__ import annotations

import ctypes
from typing import Any, NoReturn

# kind -> (exception type, message); the message may name ``{dim}``
KINDS: dict[int, tuple[type[Exception], str]] = {
    # embedding, index_select: PyTorch's own message for them
    1: (IndexError, "index out of range in self"),
    # advanced indexing (index.Tensor, index_put)
    2: (IndexError, "index {value} is out of bounds for dimension {dim} with size {size}"),
    # gather
    3: (RuntimeError, "index {value} is out of bounds for dimension {dim} with size {size}"),
}
# the offending value and the size of the last index error a kernel recorded
DETAIL = (ctypes.c_int64 * 2)()
EMBEDDING, ADVANCED, GATHER = 1, 2, 3


def error_code(kind: int, dim: int) -> int:
    return kind + (len(KINDS) + 1) * dim


def index_error(code: int) -> Exception:
    """The exception of a kernel's error ``code`` (``-rc`` of a kernel that returned ``rc < 0``)."""
    kind, dim = code % (len(KINDS) + 1), code // (len(KINDS) + 1)
    if kind not in KINDS:
        return RuntimeError(f"a compiled kernel failed with the unknown error code {code}")
    exc, message = KINDS[kind]
    return exc(message.format(dim=dim, value=DETAIL[0], size=DETAIL[1]))


def raise_index_error(rc: int) -> NoReturn:
    raise index_error(-rc)


def attach(lib: Any) -> None:
    """Hand a freshly loaded kernel library the ``DETAIL`` slot (a library without kernels that check
    indexes, a GEMM template's, has nothing to hand it to)."""
    try:
        fn = lib.ember_set_error_detail
    except AttributeError:
        return
    fn.argtypes = [ctypes.c_void_p]
    fn.restype = None
    fn(ctypes.addressof(DETAIL))


# the C++ every kernel module gets: the error slot of a kernel call and how a check records into it
CPP_PRELUDE = r"""
#include <atomic>
#define EMBER_UNLIKELY(x) __builtin_expect(!!(x), 0)
struct ember_index_error { std::atomic<int> code{0}; };
static int64_t* ember_error_detail = nullptr;
extern "C" void ember_set_error_detail(void* p) { ember_error_detail = static_cast<int64_t*>(p); }
static inline void ember_index_fail(ember_index_error& e, int code, int64_t value, int64_t size) {
  int none = 0;
  if (e.code.compare_exchange_strong(none, code, std::memory_order_relaxed) && ember_error_detail) {
    ember_error_detail[0] = value; ember_error_detail[1] = size;
  }
}
static inline int ember_index_status(const ember_index_error& e) {
  int c = e.code.load(std::memory_order_relaxed); return c ? -c : 0;
}
"""
# declared at the top of each kernel function; its parallel loops capture it by reference
CPP_DECLARE = "ember_index_error ember_err;"
CPP_RETURN = "return ember_index_status(ember_err);"
