"""``ember.distributed``: the rendezvous store of a distributed job, as ``torch.distributed``.

    >>> from datetime import timedelta
    >>> import ember.distributed as dist
    >>> store = dist.TCPStore("127.0.0.1", 0, world_size=1, is_master=True, timeout=timedelta(seconds=30))
    >>> store.set("first_key", "first_value")
    >>> store.get("first_key")
    b'first_value'

``TCPStore`` serves the keys from the master process on uvloop (libuv) and speaks the versioned
protocol specified in this package's README; ``PrefixStore`` gives a group its own key space in
another store; ``HashStore`` keeps the keys in one process. Every blocking call has a timeout and
raises ``DistStoreError`` (a ``RuntimeError``) when it passes.
"""

from ember.distributed.hash_store import HashStore
from ember.distributed.prefix_store import PrefixStore
from ember.distributed.store import DistError, DistNetworkError, DistStoreError, Store
from ember.distributed.tcp_store import TCPStore

__all__ = ["DistError", "DistNetworkError", "DistStoreError", "HashStore", "PrefixStore", "Store", "TCPStore"]
