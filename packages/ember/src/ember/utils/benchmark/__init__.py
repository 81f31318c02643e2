"""``ember.utils.benchmark``: ``Timer`` and its ``Measurement``, as ``torch.utils.benchmark`` offers them."""

from ember.utils.benchmark.common import Measurement, TaskSpec, select_unit, trim_sigfig, unit_to_english
from ember.utils.benchmark.compare import Colorize, Compare
from ember.utils.benchmark.timer import Language, Timer, timer

__all__ = [
    "Colorize",
    "Compare",
    "Language",
    "Measurement",
    "TaskSpec",
    "Timer",
    "select_unit",
    "timer",
    "trim_sigfig",
    "unit_to_english",
]
