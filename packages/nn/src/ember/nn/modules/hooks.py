"""``RemovableHandle``: what registering a hook returns; ``remove()`` takes the hook out again.

It holds its hook dicts weakly (a handle must not keep a module alive) and also clears the
companion dicts that mark a hook's options (``with_kwargs``, ``always_call``).
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any


class RemovableHandle:
    _ids = itertools.count()

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._ids)
        extras = [] if extra_dict is None else extra_dict if isinstance(extra_dict, list) else [extra_dict]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self) -> None:
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            hooks = ref()
            if hooks is not None and self.id in hooks:
                del hooks[self.id]

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()
