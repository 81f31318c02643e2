"""``immutable_list`` and ``immutable_dict``: the containers a node's arguments are stored in.

A node's ``args`` and ``kwargs`` are shared with its users' bookkeeping (``users``,
``all_input_nodes``); mutating them in place would bypass that bookkeeping, so the lists and dicts
inside them are frozen. Assign ``node.args``/``node.kwargs`` (or use ``update_arg``) to change them.
Both types stay ``list``/``dict`` subclasses so that code reading arguments needs no special case,
and both are hashable (by content), as in PyTorch.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["immutable_dict", "immutable_list"]


def _no_mutation(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise NotImplementedError(
        f"'{type(self).__name__}' object does not support mutation. "
        "If you are attempting to modify the kwargs or args of an ember.fx.Node object, "
        "instead create a new copy of it and assign the copy to the node:\n"
        "    new_args = ... # copy and mutate args\n"
        "    node.args = new_args\n"
    )


class immutable_list(list):
    """A list that refuses in-place changes; ``+`` and slicing still build new values."""

    __delitem__ = _no_mutation
    __iadd__ = _no_mutation
    __imul__ = _no_mutation
    __setitem__ = _no_mutation
    append = _no_mutation
    clear = _no_mutation
    extend = _no_mutation
    insert = _no_mutation
    pop = _no_mutation
    remove = _no_mutation
    reverse = _no_mutation
    sort = _no_mutation

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> tuple:
        return (immutable_list, (tuple(iter(self)),))


class immutable_dict(dict):
    """A dict that refuses in-place changes; ``|`` still builds a new value."""

    __delitem__ = _no_mutation
    __ior__ = _no_mutation
    __setitem__ = _no_mutation
    clear = _no_mutation
    pop = _no_mutation
    popitem = _no_mutation
    setdefault = _no_mutation
    update = _no_mutation

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self.items()))

    def __reduce__(self) -> tuple:
        return (immutable_dict, (tuple(self.items()),))
