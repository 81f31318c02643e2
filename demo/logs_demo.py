"""A tour of ember.logs: components, artifacts, lazy formatting and the structured trace.

python demo/logs_demo.py
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import ember.logs
from ember.logs.report import write_report

# A program registers its own component and artifact exactly as Ember's packages do.
ember.logs.register_component("demo", "this demo's own messages", ["demo"])
ember.logs.register_artifact("demo_plan", "the plan the demo computes, as text", off_by_default=True)

log = logging.getLogger("demo.tour")
plan_log = ember.logs.get_artifact_logger("demo.tour", "demo_plan")


class Plan:
    """Stands for something costly to print (a graph, a kernel)."""

    formatted = 0

    def __str__(self) -> str:
        Plan.formatted += 1
        return "step 1: load\nstep 2: fuse\nstep 3: store"


def run(title: str, spec: str) -> None:
    print(f"\n--- EMBER_LOGS={spec!r}: {title}", flush=True)
    ember.logs.set_logs(spec=spec)
    log.debug("debug detail")
    log.info("starting the tour")
    log.warning("a warning shows by default")
    plan_log.debug("%s", Plan())


def main() -> None:
    print(ember.logs.help_text())
    run("defaults: warnings only, artifacts off", "")
    run("the component at DEBUG (an off-by-default artifact stays off)", "+demo")
    run("the component at INFO and the artifact on", "demo,demo_plan")
    run("quiet", "-demo")
    print(f"\nPlan was formatted {Plan.formatted} time(s) in 4 runs: only where its artifact was on.")

    with tempfile.TemporaryDirectory() as directory:
        ember.logs.set_trace_dir(directory)
        ember.logs.set_logs()
        ember.logs.trace_event("tour_start", runs=4)
        plan_log.debug("%s", Plan())  # traced though not printed
        ember.logs.trace_event("tour_end", formatted=Plan.formatted)
        ember.logs.set_trace_dir(None)
        page = write_report(directory)
        (trace,) = Path(directory).glob("*.jsonl")
        print(f"\nEMBER_TRACE wrote {trace.name}:")
        print(trace.read_text().rstrip())
        print(f"ember trace report wrote {page.name} ({page.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
