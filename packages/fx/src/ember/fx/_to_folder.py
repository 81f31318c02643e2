"""``GraphModule.to_folder``: write a graph module as a package that plain Python imports.

The folder gets ``module.py`` (a ``Module`` subclass whose ``__init__`` rebuilds the submodules and
loads the state, and whose ``forward`` is the generated code), ``__init__.py``, the state as
``state_dict.pt`` (``ember.save``), and each submodule that cannot be written as its constructor
call pickled as ``<name>.pkl``.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import ember.nn as nn
from ember.core.serialization.checkpoint import save
from ember.fx._codegen import _custom_builtins
from ember.fx._graph_pickle import _format_import_block

if TYPE_CHECKING:
    from ember.fx.graph_module import GraphModule

# Modules whose repr is a constructor call that rebuilds them.
_SAFE_REPRS = tuple(
    getattr(nn, name)
    for name in ("Linear", "Conv1d", "Conv2d", "Conv3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d")
    if hasattr(nn, name)
)


def _addindent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    first = lines.pop(0)
    return first + (
        "\n" + "\n".join(num_spaces * " " + line if line.strip() else "" for line in lines) if lines else ""
    )


def write_folder(gm: GraphModule, folder: Path, module_name: str) -> None:
    folder.mkdir(exist_ok=True)
    save(gm.state_dict(), folder / "state_dict.pt")
    tab = " " * 4
    # The custom builtins and whatever else the generated code names (user functions, ...).
    imports = {v.import_str for v in _custom_builtins.values()}
    imports.update(_format_import_block(gm.graph.python_code("self").globals).split("\n"))
    builtins = "\n".join(sorted(i for i in imports if i))
    model_str = f"""
import pickle
import ember
{builtins}

from ember.nn import *
class {module_name}(ember.nn.Module):
    def __init__(self):
        super().__init__()
"""
    blobified: list[str] = []
    for name, module in gm.named_children():
        if type(module) in _SAFE_REPRS:
            model_str += f"{tab * 2}setattr(self, '{name}', {module!r})\n"
        else:
            # Pickled whole: ember.save takes tensors and containers of them, not modules.
            module_file = folder / f"{name}.pkl"
            module_file.write_bytes(pickle.dumps(module))
            blobified.append(name)
            module_repr = repr(module).replace("\r", " ").replace("\n", " ")
            model_str += (
                f"{tab * 2}setattr(self, '{name}', pickle.loads(open(r'{module_file}', 'rb').read())) # {module_repr}\n"
            )
    for name, buffer in gm._buffers.items():
        if buffer is not None:
            model_str += (
                f"{tab * 2}self.register_buffer('{name}', ember.empty({list(buffer.shape)}, dtype={buffer.dtype}))\n"
            )
    for name, param in gm._parameters.items():
        if param is not None:
            model_str += (
                f"{tab * 2}setattr(self, '{name}', "
                f"ember.nn.Parameter(ember.empty({list(param.shape)}, dtype={param.dtype})))\n"
            )
    model_str += f"{tab * 2}self.load_state_dict(ember.load(r'{folder}/state_dict.pt'))\n"
    model_str += f"{_addindent(gm.code, 4)}\n"
    (folder / "module.py").write_text(model_str)
    (folder / "__init__.py").write_text("from .module import *")
    if blobified:
        warnings.warn(
            f"Was not able to save the following children modules as reprs -saved as pickled files instead: {blobified}",
            stacklevel=3,
        )
