"""``map`` (``Mapper``) and ``collate`` (``Collator``): apply a function to each item, or to some
columns of it (``input_col``), writing the result in place or to ``output_col``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sized

from ember.utils.data.collate import default_collate
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe

__all__ = ["CollatorIterDataPipe", "MapperIterDataPipe"]


def _apply(fn: Callable, data, input_col, output_col):
    """``fn`` of the item or of its ``input_col`` columns; with columns, the item with the result
    written back (over the first input column, the others removed; or at ``output_col``, -1 appends)."""
    if input_col is None:
        return fn(data)
    if isinstance(input_col, list | tuple):
        result = fn(*(data[col] for col in input_col))
    else:
        result = fn(data[input_col])
    was_tuple = isinstance(data, tuple)
    data = list(data) if was_tuple else data
    if output_col is None:
        if isinstance(input_col, list | tuple):
            data[input_col[0]] = result
            for index in sorted(input_col[1:], reverse=True):
                del data[index]
        else:
            data[input_col] = result
    elif output_col == -1:
        data.append(result)
    else:
        data[output_col] = result
    return tuple(data) if was_tuple else data


@functional_datapipe("map")
class MapperIterDataPipe(IterDataPipe):
    """Each item through ``fn`` (functional name ``map``)."""

    def __init__(self, datapipe: IterDataPipe, fn: Callable, input_col=None, output_col=None) -> None:
        super().__init__()
        self.datapipe = datapipe
        self.fn = fn
        self.input_col = input_col
        if input_col is None and output_col is not None:
            raise ValueError("`output_col` must be None when `input_col` is None.")
        if isinstance(output_col, list | tuple):
            if len(output_col) > 1:
                raise ValueError("`output_col` must be a single-element list or tuple")
            output_col = output_col[0]
        self.output_col = output_col

    def __iter__(self) -> Iterator:
        for data in self.datapipe:
            yield _apply(self.fn, data, self.input_col, self.output_col)

    def __len__(self) -> int:
        if isinstance(self.datapipe, Sized):
            return len(self.datapipe)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


@functional_datapipe("collate")
class CollatorIterDataPipe(MapperIterDataPipe):
    """Each item (a batch) through a collate function, ``default_collate`` unless given (functional
    name ``collate``). PyTorch's dict ``conversion`` for data frames is not supported."""

    def __init__(
        self,
        datapipe: IterDataPipe,
        conversion: Callable | dict | None = default_collate,
        collate_fn: Callable | None = None,
    ) -> None:
        if collate_fn is not None:
            super().__init__(datapipe, fn=collate_fn)
        elif callable(conversion):
            super().__init__(datapipe, fn=conversion)
        else:
            raise NotImplementedError("collate: a dict of per-column conversions needs data frames, which Ember lacks")
