"""The map-style DataPipes, by their class names."""

from ember.utils.data.datapipes.map.datapipes import BatcherMapDataPipe as Batcher
from ember.utils.data.datapipes.map.datapipes import ConcaterMapDataPipe as Concater
from ember.utils.data.datapipes.map.datapipes import MapperMapDataPipe as Mapper
from ember.utils.data.datapipes.map.datapipes import SequenceWrapperMapDataPipe as SequenceWrapper
from ember.utils.data.datapipes.map.datapipes import ShufflerIterDataPipe as Shuffler
from ember.utils.data.datapipes.map.datapipes import ZipperMapDataPipe as Zipper

__all__ = ["Batcher", "Concater", "Mapper", "SequenceWrapper", "Shuffler", "Zipper"]
