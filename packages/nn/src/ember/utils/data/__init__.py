"""``ember.utils.data``: datasets, samplers and the ``DataLoader``, as ``torch.utils.data``."""

from ember.utils.data import datapipes, graph, graph_settings
from ember.utils.data.collate import default_collate, default_convert
from ember.utils.data.dataloader import DataLoader
from ember.utils.data.datapipes._decorator import (
    argument_validation,
    functional_datapipe,
    guaranteed_datapipes_determinism,
    non_deterministic,
    runtime_validation,
    runtime_validation_disabled,
)
from ember.utils.data.datapipes.datapipe import DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe
from ember.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from ember.utils.data.distributed import DistributedSampler
from ember.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from ember.utils.data.worker import WorkerInfo, get_worker_info

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DFIterDataPipe",
    "DataChunk",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterDataPipe",
    "IterableDataset",
    "MapDataPipe",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "argument_validation",
    "datapipes",
    "default_collate",
    "default_convert",
    "functional_datapipe",
    "get_worker_info",
    "graph",
    "graph_settings",
    "guaranteed_datapipes_determinism",
    "non_deterministic",
    "random_split",
    "runtime_validation",
    "runtime_validation_disabled",
]
