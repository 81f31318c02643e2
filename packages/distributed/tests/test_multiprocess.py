"""A job of several processes on loopback: the master process and workers started before it."""

import json
import socket
import subprocess
import sys
from datetime import timedelta

from ember.distributed import TCPStore

WORLD = 4

# Each rank publishes its address, counts itself in, elects a leader with compare_set, waits for
# every rank and reads them all, then meets the others at a barrier before leaving.
RANK = """
import json, sys
from datetime import timedelta
from ember.distributed import PrefixStore, TCPStore

def run(store, rank, world):
    store.set(f"addr/{rank}", f"10.0.0.{rank}:29500")
    arrival = store.add("arrived", 1)
    leader = store.compare_set("leader", "", str(rank)).decode()
    store.wait([f"addr/{r}" for r in range(world)])
    addresses = [v.decode() for v in store.multi_get([f"addr/{r}" for r in range(world)])]
    group = PrefixStore("group", store)
    group.append("members", f"{rank},")
    group.add("done", 1)
    return {"rank": rank, "arrival": arrival, "leader": leader, "addresses": addresses}, group

if __name__ == "__main__":
    port, rank, world = (int(a) for a in sys.argv[1:])
    store = TCPStore("127.0.0.1", port, world_size=world, timeout=timedelta(seconds=60))
    result, group = run(store, rank, world)
    store.wait(["group/release"])
    print(json.dumps(result))
"""


def test_ranks_in_separate_processes_agree():
    # The port is bound before any worker starts, so workers that come early wait in its backlog.
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", RANK, str(port), str(rank), str(WORLD)], stdout=subprocess.PIPE, text=True
        )
        for rank in range(1, WORLD)
    ]
    try:
        master = TCPStore(
            "127.0.0.1",
            port,
            world_size=WORLD,
            is_master=True,
            timeout=timedelta(seconds=60),
            master_listen_fd=listener.detach(),
        )
        namespace: dict = {}
        exec(RANK, namespace)
        mine, _group = namespace["run"](master, 0, WORLD)
        master.set("group/release", "go")
        outputs = []
        for worker in workers:
            out, _ = worker.communicate(timeout=60)
            assert worker.returncode == 0
            outputs.append(json.loads(out))
    finally:
        for worker in workers:
            worker.kill()
    results = [mine, *outputs]
    assert sorted(r["arrival"] for r in results) == list(range(1, WORLD + 1))
    assert len({r["leader"] for r in results}) == 1
    expected = [f"10.0.0.{r}:29500" for r in range(WORLD)]
    assert all(r["addresses"] == expected for r in results)
    assert master.get("group/done") == str(WORLD).encode()
    members = master.get("group/members").decode().rstrip(",").split(",")
    assert sorted(int(m) for m in members) == list(range(WORLD))
    # addr/0..3, arrived, leader, group/members, group/done, group/release, and the join key
    assert master.num_keys() == WORLD + 6
