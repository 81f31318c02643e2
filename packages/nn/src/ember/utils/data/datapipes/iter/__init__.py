"""The iterable DataPipes, by their class names (each also has a functional name, ``dp.map(...)``)."""

from ember.utils.data.datapipes.iter.callable import CollatorIterDataPipe as Collator
from ember.utils.data.datapipes.iter.callable import MapperIterDataPipe as Mapper
from ember.utils.data.datapipes.iter.combinatorics import SamplerIterDataPipe as Sampler
from ember.utils.data.datapipes.iter.combinatorics import ShufflerIterDataPipe as Shuffler
from ember.utils.data.datapipes.iter.combining import ConcaterIterDataPipe as Concater
from ember.utils.data.datapipes.iter.combining import DemultiplexerIterDataPipe as Demultiplexer
from ember.utils.data.datapipes.iter.combining import ForkerIterDataPipe as Forker
from ember.utils.data.datapipes.iter.combining import MultiplexerIterDataPipe as Multiplexer
from ember.utils.data.datapipes.iter.combining import ZipperIterDataPipe as Zipper
from ember.utils.data.datapipes.iter.grouping import BatcherIterDataPipe as Batcher
from ember.utils.data.datapipes.iter.grouping import GrouperIterDataPipe as Grouper
from ember.utils.data.datapipes.iter.grouping import ShardingFilterIterDataPipe as ShardingFilter
from ember.utils.data.datapipes.iter.grouping import UnBatcherIterDataPipe as UnBatcher
from ember.utils.data.datapipes.iter.selecting import FilterIterDataPipe as Filter
from ember.utils.data.datapipes.iter.utils import IterableWrapperIterDataPipe as IterableWrapper

# Left out: FileLister, FileOpener, StreamReader and RoutedDecoder (PyTorch's file-reading pipes).
__all__ = [
    "Batcher",
    "Collator",
    "Concater",
    "Demultiplexer",
    "Filter",
    "Forker",
    "Grouper",
    "IterableWrapper",
    "Mapper",
    "Multiplexer",
    "Sampler",
    "ShardingFilter",
    "Shuffler",
    "UnBatcher",
    "Zipper",
]
