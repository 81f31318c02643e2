"""``filter`` (``Filter``): keep the items for which a predicate is True."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe

__all__ = ["FilterIterDataPipe"]


@functional_datapipe("filter")
class FilterIterDataPipe(IterDataPipe):
    """The items whose ``filter_fn`` (of the item, or of its ``input_col`` columns) is True."""

    def __init__(self, datapipe: IterDataPipe, filter_fn: Callable, input_col=None) -> None:
        super().__init__()
        self.datapipe = datapipe
        self.filter_fn = filter_fn
        self.input_col = input_col

    def _keep(self, data) -> bool:
        if self.input_col is None:
            condition = self.filter_fn(data)
        elif isinstance(self.input_col, list | tuple):
            condition = self.filter_fn(*(data[col] for col in self.input_col))
        else:
            condition = self.filter_fn(data[self.input_col])
        if not isinstance(condition, bool):
            raise ValueError("Boolean output is required for `filter_fn` of FilterIterDataPipe, got", type(condition))
        return condition

    def __iter__(self) -> Iterator:
        for data in self.datapipe:
            if self._keep(data):
                yield data
