"""Ember's TCPStore against PyTorch's libuv TCPStore: N clients doing set/add/get/wait, one run.

    python tools/bench/store.py [--clients 16 64 256] [--processes 4] [--ops 100000] [--rounds 3]

Each case is a real rendezvous: this process is the master (its store's server runs in a thread of
it, for both libraries), and N clients (``--processes`` processes x N/processes threads, one store
each) connect and join with ``world_size=N``. The clients import everything first and then wait
for one signal, so that "connect" times only the connecting: from the signal until the last
client's constructor has returned (connected, handshaken, joined). Then each client warms up (a
few untimed requests on keys of its own) and, once all have, every client runs the same
loop of set, add (one shared counter), get and wait on its own keys until ``--ops`` requests are
done in total; "ops/s" is that total over the time from the start signal (a key the master sets)
until the last client has finished. Rounds alternate the two libraries; each case reports its
best round. Prints a table with the ratio Ember/PyTorch (above 1 means Ember is faster).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import threading
import time
from datetime import timedelta

# PyTorch's clients warn once per connection when a reverse name lookup fails; keep the table readable.
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
TIMEOUT = timedelta(seconds=120)
PAYLOAD = b"x" * 64
WARMUP = 5


def _library(name: str):
    if name == "ember":
        import ember.distributed as dist
    else:
        import torch.distributed as dist
    return dist


def _client_process(library, port, threads, first_id, clients, iterations, ready, go, results) -> None:
    dist = _library(library)
    start = threading.Event()
    connected_at: list[float] = []

    def client(cid: int) -> None:
        start.wait()
        store = dist.TCPStore("127.0.0.1", port, world_size=clients, timeout=TIMEOUT)
        connected_at.append(time.monotonic())
        if len(connected_at) == threads:
            results.put(max(connected_at))
        # Untimed warm-up on keys of its own, so that the timed loop runs warm code on both sides.
        for i in range(WARMUP):
            store.set(f"w{cid}/{i}", PAYLOAD)
            store.get(f"w{cid}/{i}")
        if store.add("warm", 1) == clients:
            store.set("all-warm", "1")
        store.wait(["start"])
        for i in range(iterations):
            key = f"c{cid}/{i}"
            store.set(key, PAYLOAD)
            store.add("counter", 1)
            store.get(key)
            store.wait([key])
        if store.add("done", 1) == clients:
            store.set("all-done", "1")

    workers = [threading.Thread(target=client, args=(first_id + t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    ready.wait()
    go.wait()
    start.set()
    for worker in workers:
        worker.join()


def run_case(library: str, clients: int, processes: int, total_ops: int) -> tuple[float, float]:
    """(seconds to connect all, ops per second) for one library and one N."""
    dist = _library(library)
    processes = min(processes, clients)
    iterations = max(1, total_ops // (4 * clients))
    context = mp.get_context("spawn")
    ready = context.Barrier(processes + 1)
    go = context.Event()
    results = context.Queue()
    master = dist.TCPStore("127.0.0.1", 0, None, True, TIMEOUT)
    per_process = [clients // processes + (p < clients % processes) for p in range(processes)]
    children = []
    first_id = 0
    for threads in per_process:
        args = (library, master.port, threads, first_id, clients, iterations, ready, go, results)
        children.append(context.Process(target=_client_process, args=args))
        first_id += threads
    for child in children:
        child.start()
    ready.wait()
    began = time.monotonic()
    go.set()
    connected_at = [results.get(timeout=TIMEOUT.total_seconds()) for _ in children]
    connected = max(connected_at) - began
    master.wait(["all-warm"])
    started = time.monotonic()
    master.set("start", "1")
    master.wait(["all-done"])
    elapsed = time.monotonic() - started
    for child in children:
        child.join(timeout=60)
    del master
    return connected, iterations * 4 * clients / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    best: dict[tuple[str, int], tuple[float, float]] = {}
    for round_index in range(args.rounds):
        order = ["ember", "torch"] if round_index % 2 == 0 else ["torch", "ember"]
        for clients in args.clients:
            for library in order:
                connect, rate = run_case(library, clients, args.processes, args.ops)
                old_connect, old_rate = best.get((library, clients), (float("inf"), 0.0))
                best[(library, clients)] = (min(connect, old_connect), max(rate, old_rate))

    print(f"{args.ops} requests per case (set/add/get/wait), {args.processes} client processes, best of {args.rounds}")
    print(
        f"{'N':>5} {'ember ops/s':>12} {'torch ops/s':>12} {'ratio':>6}   {'ember connect':>13} {'torch connect':>13} {'ratio':>6}"
    )
    for clients in args.clients:
        (e_connect, e_rate), (t_connect, t_rate) = best[("ember", clients)], best[("torch", clients)]
        print(
            f"{clients:>5} {e_rate:>12,.0f} {t_rate:>12,.0f} {e_rate / t_rate:>6.2f}   "
            f"{e_connect * 1000:>10.1f} ms {t_connect * 1000:>10.1f} ms {t_connect / e_connect:>6.2f}"
        )
    print("ratios: Ember over PyTorch for ops/s, PyTorch over Ember for connect time; above 1 means Ember is faster")


if __name__ == "__main__":
    main()
