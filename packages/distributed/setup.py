"""Builds the two C++ extensions of ember.distributed (the rest is in pyproject.toml)."""

from pybind11.setup_helpers import Pybind11Extension
from setuptools import setup

SOURCES = "src/ember/distributed"

setup(
    ext_modules=[
        Pybind11Extension(
            f"ember.distributed.{name}", [f"{SOURCES}/{name}.cpp"], cxx_std=17, extra_compile_args=["-O2"]
        )
        for name in ("_channel", "_fastpath")
    ]
)
