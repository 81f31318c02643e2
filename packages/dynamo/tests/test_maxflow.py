"""The max-flow under the min-cut partitioner against an exhaustive search for the minimum cut."""

from __future__ import annotations

import math
import random

import pytest

from ember.aot._maxflow import FlowNetwork


def _brute_min_cut(n: int, edges: list, s: int, t: int) -> float:
    others = [v for v in range(n) if v not in (s, t)]
    best = math.inf
    for mask in range(1 << len(others)):
        side = {s} | {others[i] for i in range(len(others)) if mask >> i & 1}
        best = min(best, sum(c for u, v, c in edges if u in side and v not in side))
    return best


@pytest.mark.parametrize("seed", range(5))
def test_max_flow_equals_the_minimum_cut(seed):
    rng = random.Random(seed)
    for _ in range(300):
        n = rng.randint(2, 7)
        edges = [
            (u, v, rng.choice([0, 1, 2, 3, 7, 2.5, math.inf]))
            for u in range(n)
            for v in range(n)
            if u != v and rng.random() < 0.4
        ]
        network = FlowNetwork()
        for u, v, c in edges:
            network.add_edge(u, v, c)
        flow = network.max_flow(0, n - 1)
        assert flow == _brute_min_cut(n, edges, 0, n - 1), edges
        if math.isinf(flow):
            continue
        side = network.source_side(0)
        assert 0 in side and n - 1 not in side
        # The source side is a minimum cut: the edges leaving it carry exactly the flow.
        assert sum(c for u, v, c in edges if u in side and v not in side) == pytest.approx(flow)


def test_named_nodes_and_a_chain():
    network = FlowNetwork()
    network.add_edge("source", ("a", "in"), math.inf)
    network.add_edge(("a", "in"), ("a", "out"), 10)
    network.add_edge(("a", "out"), ("b", "in"), math.inf)
    network.add_edge(("b", "in"), ("b", "out"), 4)
    network.add_edge(("b", "out"), "sink", math.inf)
    assert network.max_flow("source", "sink") == 4
    assert network.source_side("source") == {"source", ("a", "in"), ("a", "out"), ("b", "in")}


def test_negative_capacity_is_refused():
    with pytest.raises(ValueError, match="non-negative"):
        FlowNetwork().add_edge(0, 1, -1)
