"""Builds ember.dynamo._eval_frame, the PEP 523 frame-evaluation hook of ``ember.compile``, in C.

The hook reads CPython's internal frame layout, so it is built only for the versions it knows
(CPython 3.11, 3.12 and 3.13, with the GIL). The extension is optional: without a C compiler or
Python's headers the package installs without it, and importing ``ember.dynamo._frame_hook`` then
raises an ImportError that says what is missing.
"""

from __future__ import annotations

import platform
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup

SOURCES = sorted(str(p) for p in Path("csrc/eval_frame").glob("*.c"))
HEADERS = sorted(str(p) for p in Path("csrc/eval_frame").glob("*.h"))


def _hook_supported() -> bool:
    return (
        platform.python_implementation() == "CPython"
        and (3, 11) <= sys.version_info[:2] <= (3, 13)
        and not sysconfig.get_config_var("Py_GIL_DISABLED")
    )


ext_modules = []
if _hook_supported():
    ext_modules.append(
        Extension(
            "ember.dynamo._eval_frame",
            SOURCES,
            depends=HEADERS,
            include_dirs=["csrc/eval_frame"],
            extra_compile_args=["-O2", "-std=gnu11"] if sys.platform != "win32" else [],
            optional=True,
        )
    )

setup(ext_modules=ext_modules)
