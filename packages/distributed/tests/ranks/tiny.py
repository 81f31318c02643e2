"""A rank that joins its job however it was started and checks one all_reduce.

tiny.py                       env:// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)
tiny.py tcp://HOST:PORT RANK WORLD_SIZE
"""

import sys

import ember
import ember.distributed as dist

if len(sys.argv) > 1:
    dist.init_process_group(init_method=sys.argv[1], rank=int(sys.argv[2]), world_size=int(sys.argv[3]))
else:
    dist.init_process_group()
t = ember.ones(2) * dist.get_rank()
dist.all_reduce(t)
world = dist.get_world_size()
assert t.tolist() == [float(sum(range(world)))] * 2, t.tolist()
print(f"rank {dist.get_rank()} of {world}: ok", flush=True)
