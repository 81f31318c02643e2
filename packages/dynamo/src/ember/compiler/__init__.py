"""``ember.compiler``: the user's controls over ``ember.compile`` (PyTorch's ``torch.compiler``)."""

from ember.dynamo.backends import list_backends
from ember.dynamo.decorators import allow_in_graph, disable, is_compiling, is_dynamo_compiling
from ember.dynamo.eval_frame import compile, reset
from ember.dynamo.stance import set_stance

__all__ = [
    "allow_in_graph",
    "compile",
    "disable",
    "is_compiling",
    "is_dynamo_compiling",
    "is_exporting",
    "list_backends",
    "reset",
    "set_stance",
]


def is_exporting() -> bool:
    """True while ``ember.export`` traces the code that calls it (export is not built yet: always False)."""
    return False
