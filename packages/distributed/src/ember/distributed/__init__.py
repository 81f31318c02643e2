"""``ember.distributed``: process groups, collectives and the rendezvous store, as ``torch.distributed``.

    >>> import ember.distributed as dist          # under `ember run --nproc-per-node 4 train.py`
    >>> dist.init_process_group()                  # env:// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)
    >>> t = ember.ones(4) * dist.get_rank()
    >>> dist.all_reduce(t)                         # every rank now holds the sum

CPU collectives run on MPI (mpi4py over the MPICH wheel), started without ``mpiexec``: the
launcher (or a helper process) serves MPICH's start-up protocol from the job's ``TCPStore``.
``TCPStore`` serves the keys from the master process on uvloop (libuv); ``PrefixStore`` gives a group
its own key space in another store; ``HashStore`` keeps the keys in one process.
"""

from ember.distributed import flight_recorder
from ember.distributed._types import Backend, GroupMember, ReduceOp, _make_nccl_premul_sum, default_pg_timeout
from ember.distributed._work import Future, Work
from ember.distributed.distributed_c10d import (
    P2POp,
    ProcessGroup,
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    batch_isend_irecv,
    broadcast,
    broadcast_object_list,
    destroy_process_group,
    gather,
    gather_object,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_node_local_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    irecv,
    is_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    isend,
    monitored_barrier,
    new_group,
    new_subgroups,
    new_subgroups_by_enumeration,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    scatter_object_list,
    send,
)
from ember.distributed.hash_store import HashStore
from ember.distributed.prefix_store import PrefixStore
from ember.distributed.store import DistBackendError, DistError, DistNetworkError, DistStoreError, Store
from ember.distributed.tcp_store import TCPStore

__all__ = [
    "Backend", "DistBackendError", "DistError", "DistNetworkError", "DistStoreError", "Future", "GroupMember",
    "HashStore", "P2POp", "PrefixStore", "ProcessGroup", "ReduceOp", "Store", "TCPStore", "Work",
    "_make_nccl_premul_sum", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all",
    "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list", "default_pg_timeout",
    "destroy_process_group", "flight_recorder", "gather", "gather_object", "get_backend", "get_global_rank",
    "get_group_rank", "get_node_local_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group",
    "init_process_group", "irecv", "is_available", "is_gloo_available", "is_initialized", "is_mpi_available",
    "is_nccl_available", "is_torchelastic_launched", "isend", "monitored_barrier", "new_group", "new_subgroups",
    "new_subgroups_by_enumeration", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter",
    "scatter_object_list", "send",
]  # fmt: skip
