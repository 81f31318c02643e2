"""``ember.utils.benchmark``: ``Timer`` and its ``Measurement``, as ``torch.utils.benchmark`` offers them."""

from ember.utils.benchmark.common import Measurement, TaskSpec, select_unit
from ember.utils.benchmark.timer import Language, Timer, timer

__all__ = ["Language", "Measurement", "TaskSpec", "Timer", "select_unit", "timer"]
