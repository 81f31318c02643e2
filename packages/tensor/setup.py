"""Builds ember.core._philox, the C++ Philox 4x32-10 kernel, ember.core._parallel, the thread pool of
Ember's C++ kernels, ember.core._conv, the direct float32 convolutions, and ember.core._fastpath, the C
common case of small eager ops, with the system compiler.

The same build as ember-sdpa's kernel: ``-O3`` with ``-march=native`` where the compiler accepts it
(the loop vectorizes); no OpenMP (Ember's threads run the pieces of a long draw). ``EMBER_PHILOX_MARCH``
overrides the target (e.g. ``x86-64-v3`` for a portable wheel, or empty for the compiler's default).
Python falls back to the NumPy Philox when the extension is absent, with the same bits.

``_conv`` is built the same way but without FMA contraction (its kernels call fma where they mean it, so every target rounds alike); it is optional:
without it convolutions run on NumPy's GEMMs.

``_fastpath`` is optional: where it fails to build, the install goes on without it and Ember runs the
Python code it stands for, with the same results (``EMBER_FASTPATH=0`` does the same at run time).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import Extension, setup

SOURCES = ["csrc/philox/module.cpp"]
FASTPATH = "ember.core._fastpath"
CONV = "ember.core._conv"
PARALLEL = "ember.core._parallel"


def _compiles(compiler, flags: list[str], link_flags: list[str], source: str = "int main() { return 0; }\n") -> bool:
    """Whether a small program compiles and links with these flags."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "probe.cpp")
        path.write_text(source)
        try:
            objects = compiler.compile([str(path)], output_dir=tmp, extra_postargs=flags)
            compiler.link_executable(objects, "probe", output_dir=tmp, extra_postargs=link_flags)
        except Exception:  # any compiler or linker failure means "not available"
            return False
    return True


class BuildPhilox(build_ext):
    """Chooses the optimization flags this machine's compiler accepts before building."""

    def build_extensions(self) -> None:
        if self.compiler.compiler_type != "msvc":
            march = os.environ.get("EMBER_PHILOX_MARCH", "native")
            compile_flags = ["-O3"]
            if march and _compiles(self.compiler, [f"-march={march}"], []):
                compile_flags.append(f"-march={march}")
            for ext in self.extensions:
                if ext.name == FASTPATH:
                    # No FMA contraction: its element loops must round as NumPy's ufuncs do.
                    ext.extra_compile_args += ["-O2", "-ffp-contract=off", "-fvisibility=hidden"]
                    continue
                if ext.name == CONV:
                    # Its kernels call fma where they mean it.
                    ext.extra_compile_args += compile_flags + ["-ffp-contract=off"]
                    continue
                ext.extra_compile_args += compile_flags
        else:
            for ext in self.extensions:
                ext.extra_compile_args += ["/O2"]
        super().build_extensions()


setup(
    ext_modules=[
        Pybind11Extension(
            "ember.core._philox",
            SOURCES,
            cxx_std=17,
        ),
        Pybind11Extension(PARALLEL, ["csrc/parallel/pool.cpp"], cxx_std=17, extra_link_args=["-pthread"]),
        # A compile failure skips these (optional=True): the Python path then runs.
        Pybind11Extension(CONV, ["csrc/conv/module.cpp"], cxx_std=17, optional=True),
        Extension(FASTPATH, sorted(str(p) for p in Path("csrc/fastpath").glob("*.c")), optional=True),
    ],
    cmdclass={"build_ext": BuildPhilox},
)
