"""A disabled artifact log call against a disabled stdlib logger call, measured in one run.

    python tools/bench/logs.py [--calls N] [--rounds R]

Both calls pass an argument whose formatting would be expensive; neither should format it. The
rounds interleave the two so that machine noise hits both alike; the ratio uses each one's best
round.
"""

from __future__ import annotations

import argparse
import logging
import timeit

import ember.logs


class Expensive:
    def __str__(self) -> str:  # never called while the logs are off
        raise AssertionError("a disabled log call formatted its argument")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    ember.logs.set_logs()
    artifact = ember.logs.get_artifact_logger("ember.bench.logs", "graph_code")
    stdlib = logging.getLogger("bench.stdlib.disabled")
    stdlib.setLevel(logging.WARNING)
    arg = Expensive()
    cases = {
        "artifact off: log.debug('%s', x)": lambda: artifact.debug("graph %s", arg),
        "stdlib off:   log.debug('%s', x)": lambda: stdlib.debug("graph %s", arg),
    }
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(args.rounds):
        for name, call in cases.items():
            best[name] = min(best[name], timeit.timeit(call, number=args.calls) / args.calls)
    for name, seconds in best.items():
        print(f"{name}  {seconds * 1e9:7.1f} ns/call")
    ours, theirs = best.values()
    print(f"ratio artifact/stdlib: {ours / theirs:.2f}x")


if __name__ == "__main__":
    main()
