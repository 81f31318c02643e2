"""Run by every rank: write the launcher's variables to DIR/RANK.json; check ranks agree over MPI."""

import json
import os
import sys
from pathlib import Path

import ember
import ember.distributed as dist

names = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"]
env = {n: os.environ.get(n) for n in names}
env["argv"] = [Path(sys.argv[0]).name, *sys.argv[1:]]
Path(sys.argv[1], f"{os.environ['RANK']}.json").write_text(json.dumps(env))
dist.init_process_group()
assert dist.is_torchelastic_launched() and dist.get_node_local_rank() == int(os.environ["LOCAL_RANK"])
t = ember.tensor([float(dist.get_rank())])
dist.all_reduce(t)
assert t.item() == 1.0
if dist.get_rank() == 0:
    print("ranks agree", flush=True)
