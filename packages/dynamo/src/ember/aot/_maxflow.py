"""Maximum flow and minimum cut on a small directed graph (Dinic's algorithm).

The min-cut partitioner asks one question of a flow network: which nodes stay on the source side
of a minimum cut. Dinic's algorithm answers it in ``O(V^2 E)`` worst case and far less on the
layered, mostly-infinite networks a joint graph makes: it builds a level graph by breadth-first
search from the source, pushes blocking flows along it by depth-first search, and repeats until
the sink is unreachable. The source side of the cut is then what the source still reaches in the
residual network.

Capacities are floats; ``math.inf`` marks an edge that may never be cut.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable


class FlowNetwork:
    """A directed graph with capacities, nodes named by any hashable value."""

    def __init__(self) -> None:
        self._index: dict[Hashable, int] = {}
        self._names: list[Hashable] = []
        # Edges in flat lists: edge e goes to _to[e] with residual capacity _cap[e]; e ^ 1 is its reverse.
        self._to: list[int] = []
        self._cap: list[float] = []
        self._adjacent: list[list[int]] = []

    def _node(self, name: Hashable) -> int:
        index = self._index.get(name)
        if index is None:
            index = self._index[name] = len(self._names)
            self._names.append(name)
            self._adjacent.append([])
        return index

    def add_edge(self, u: Hashable, v: Hashable, capacity: float) -> None:
        if capacity < 0:
            raise ValueError(f"an edge's capacity must be non-negative, got {capacity}")
        a, b = self._node(u), self._node(v)
        self._adjacent[a].append(len(self._to))
        self._to.append(b)
        self._cap.append(float(capacity))
        self._adjacent[b].append(len(self._to))
        self._to.append(a)
        self._cap.append(0.0)

    def __contains__(self, name: Hashable) -> bool:
        return name in self._index

    def max_flow(self, source: Hashable, sink: Hashable) -> float:
        """Push the maximum flow from ``source`` to ``sink``; returns its value (``inf`` if unbounded)."""
        s, t = self._node(source), self._node(sink)
        total = 0.0
        while True:
            level = self._levels(s)
            if level[t] < 0:
                return total
            cursor = [0] * len(self._names)
            while True:
                pushed = self._push(s, t, math.inf, level, cursor)
                if pushed <= 0:
                    break
                total += pushed
                if math.isinf(pushed):
                    return math.inf

    def source_side(self, source: Hashable) -> set[Hashable]:
        """The nodes the source reaches in the residual network (after ``max_flow``)."""
        level = self._levels(self._node(source))
        return {self._names[i] for i, d in enumerate(level) if d >= 0}

    def _levels(self, s: int) -> list[int]:
        level = [-1] * len(self._names)
        level[s] = 0
        queue = deque([s])
        to, cap, adjacent = self._to, self._cap, self._adjacent
        while queue:
            u = queue.popleft()
            for e in adjacent[u]:
                v = to[e]
                if cap[e] > 0 and level[v] < 0:
                    level[v] = level[u] + 1
                    queue.append(v)
        return level

    def _push(self, s: int, t: int, limit: float, level: list[int], cursor: list[int]) -> float:
        """One augmenting path along the level graph, found by an explicit-stack depth-first search."""
        to, cap, adjacent = self._to, self._cap, self._adjacent
        path: list[int] = []  # edges from s
        u = s
        while True:
            if u == t:
                flow = min([limit, *(cap[e] for e in path)])
                for e in path:
                    cap[e] -= flow
                    cap[e ^ 1] += flow
                return flow
            edges = adjacent[u]
            advanced = False
            while cursor[u] < len(edges):
                e = edges[cursor[u]]
                v = to[e]
                if cap[e] > 0 and level[v] == level[u] + 1:
                    path.append(e)
                    u = v
                    advanced = True
                    break
                cursor[u] += 1
            if advanced:
                continue
            # A dead end: no edge of u leads on; retreat and skip the edge that led here.
            level[u] = -1
            if not path:
                return 0.0
            e = path.pop()
            u = to[e ^ 1]
            cursor[u] += 1
