"""``ember.version``: what this build of Ember is (PyTorch's ``torch.version``).

Programs read ``ember.version.cuda`` to learn whether the build has CUDA: Ember has no CUDA device, so
it is ``None``, as in PyTorch's CPU build.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__", "cuda", "debug", "git_version", "hip", "rocm", "xpu"]

try:
    __version__ = version("ember")
except PackageNotFoundError:  # run from a source tree without installing
    __version__ = "0+unknown"

debug = False
git_version = "Unknown"
hip = None
rocm = None
xpu = None

cuda = None
