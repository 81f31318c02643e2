"""Builds ember.sdpa.kernels._flash_cpu, the C++ FlashAttention-2 kernel, with the system compiler.

The kernel is written with GCC/Clang vector extensions, so its speed comes from the instruction set
the compiler may use: we build with ``-march=native`` (the extension is built on the machine that
runs it) and fall back to the compiler's default target where the flag is refused. No OpenMP: a
call's parts run on Ember's CPU threads (``flash_cpu.py`` says why). ``EMBER_SDPA_MARCH``
overrides the target (e.g. ``x86-64-v3`` for a portable wheel, or an empty value for the
compiler's default).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup

SOURCES = ["csrc/flash_cpu/module.cpp"]
HEADERS = [str(p) for p in sorted(Path("csrc/flash_cpu").glob("*.h"))]


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


class BuildFlashCpu(build_ext):
    """Chooses the optimization flags this machine's compiler accepts before building."""

    def build_extensions(self) -> None:
        if self.compiler.compiler_type != "msvc":
            march = os.environ.get("EMBER_SDPA_MARCH", "native")
            compile_flags = ["-O3", "-ffp-contract=fast", "-fno-math-errno"]
            if march and _compiles(self.compiler, [f"-march={march}"], []):
                compile_flags.append(f"-march={march}")
            for ext in self.extensions:
                ext.extra_compile_args += compile_flags
        else:
            for ext in self.extensions:
                ext.extra_compile_args += ["/O2"]
        super().build_extensions()


setup(
    ext_modules=[
        Pybind11Extension(
            "ember.sdpa.kernels._flash_cpu",
            SOURCES,
            depends=HEADERS,
            include_dirs=["csrc/flash_cpu"],
            cxx_std=17,
        )
    ],
    cmdclass={"build_ext": BuildFlashCpu},
)
