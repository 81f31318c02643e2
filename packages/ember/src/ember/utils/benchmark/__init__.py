"""``ember.utils.benchmark``: ``Timer`` and its ``Measurement``, ``Compare``, and the input ``Fuzzer``,
and the Callgrind result containers, as ``torch.utils.benchmark`` offers them."""

from ember.utils.benchmark import utils
from ember.utils.benchmark.common import (
    Measurement,
    TaskSpec,
    ordered_unique,
    select_unit,
    set_torch_threads,
    trim_sigfig,
    unit_to_english,
)
from ember.utils.benchmark.compare import Colorize, Compare
from ember.utils.benchmark.fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from ember.utils.benchmark.sparse_fuzzer import FuzzedSparseTensor
from ember.utils.benchmark.timer import Language, Timer, timer
from ember.utils.benchmark.utils.valgrind_wrapper.timer_interface import (
    CallgrindStats,
    CopyIfCallgrind,
    FunctionCount,
    FunctionCounts,
)

__all__ = [
    "CallgrindStats",
    "Colorize",
    "Compare",
    "CopyIfCallgrind",
    "FunctionCount",
    "FunctionCounts",
    "FuzzedParameter",
    "FuzzedSparseTensor",
    "FuzzedTensor",
    "Fuzzer",
    "Language",
    "Measurement",
    "ParameterAlias",
    "TaskSpec",
    "Timer",
    "ordered_unique",
    "select_unit",
    "set_torch_threads",
    "timer",
    "trim_sigfig",
    "unit_to_english",
    "utils",
]
