"""``ember.utils.benchmark.utils``: PyTorch's module path for the benchmark parts
(``torch.utils.benchmark.utils.timer``, ``.common``, ``.compare``, ``.fuzzer``, ``.sparse_fuzzer``).
Each name is the module of ``ember.utils.benchmark`` itself, registered under this path too.
``valgrind_wrapper`` (the Callgrind result containers) lives here."""

import sys

from ember.utils.benchmark import common, compare, fuzzer, sparse_fuzzer, timer
from ember.utils.benchmark.utils import valgrind_wrapper

for _module in (common, compare, fuzzer, sparse_fuzzer, timer):
    sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[-1]}"] = _module
del _module

__all__ = ["common", "compare", "fuzzer", "sparse_fuzzer", "timer", "valgrind_wrapper"]
