"""One start of a whole-model case of ``_inductor_models`` in a new process, as a program of one library
starts: ``python _start.py LIB CASE THREADS`` prints ``{"compile": s, "step": s}``.

The process imports the library it measures first (Ember before NumPy, as a user's ``import ember``
comes first, so that Ember's OpenBLAS thread timeout applies), and not the other library where it
can do without: PyTorch's threads would share the cores with Ember's first call. PyTorch's case
imports Ember too, to build the same weights.
"""

from __future__ import annotations

import importlib
import json
import os
import sys

LIB, CASE, THREADS = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.environ["OMP_NUM_THREADS"] = str(THREADS)
lib = importlib.import_module(LIB)

from _inductor_models import start  # noqa: E402

compile_s, step_s = start(lib, CASE, THREADS, rounds=5)
print(json.dumps({"compile": compile_s, "step": step_s}))
