"""``ember.utils.data.datapipes``: the DataPipe classes and the common DataPipes (``iter``, ``map``)."""

from ember.utils.data.datapipes import datapipe, iter, map

__all__ = ["datapipe", "iter", "map"]
