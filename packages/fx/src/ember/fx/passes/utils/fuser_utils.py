"""Checks on partitions of a graph (a subset of PyTorch's ``torch.fx.passes.utils.fuser_utils``)."""

from __future__ import annotations

from ember.fx.node import Node

__all__ = ["validate_partition"]


def validate_partition(partition: list[Node]) -> bool:
    """Whether the nodes of ``partition`` could become one node without making a cycle.

    They could not when a value leaves the partition and, through nodes outside it, comes back
    into it: fused, the partition would depend on itself.
    """
    inside = set(partition)
    # The nodes outside the partition that read its values, walked forward along their users.
    frontier = [user for node in partition for user in node.users if user not in inside]
    visited: set[Node] = set()
    while frontier:
        node = frontier.pop()
        if node in visited:
            continue
        visited.add(node)
        for user in node.users:
            if user in inside:
                return False
            if user not in visited:
                frontier.append(user)
    return True
