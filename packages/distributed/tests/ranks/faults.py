"""Run by every rank: one of the faults `ember run` and the Flight Recorder must handle.

faults.py raise RANK    RANK raises after two collectives; the others wait in a third forever
faults.py hang RANK     RANK sleeps instead of joining collective #3; the group's timeout is 3 s
faults.py skip RANK     RANK skips the all_reduce #3 and goes on to a barrier
"""

import sys
import time
from datetime import timedelta

import ember
import ember.distributed as dist

kind, culprit = sys.argv[1], int(sys.argv[2])
dist.init_process_group()
group = dist.new_group(timeout=timedelta(seconds=3), group_desc="short_timeout")  # named "1"
rank = dist.get_rank()
t = ember.ones(8)
dist.all_reduce(t, group=group)
dist.broadcast(t, src=0, group=group)
if rank == culprit:
    if kind == "raise":
        raise ValueError(f"rank {rank} gives up")
    if kind == "hang":
        time.sleep(60)
    if kind == "skip":
        dist.barrier(group=group)
        time.sleep(60)
dist.all_reduce(t, group=group)
dist.barrier(group=group)
print(f"rank {rank}: finished", flush=True)
