"""``ember.torch_version``: ``TorchVersion``, the type of ``ember.__version__``.

A ``TorchVersion`` is the version string itself (it prints, hashes and equals as that string) that
also compares with other versions by PEP 440's order: ``ember.__version__ >= "2.1"`` and
``ember.__version__ < (3, 0)`` work. The order is PEP 440's as ``packaging`` implements it
(releases with trailing zeros ignored, then pre-, post- and dev-releases, then local labels, so
that ``"1.0+cpu" > "1.0"``), written here so that Ember needs no ``packaging``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["InvalidVersion", "TorchVersion", "Version", "internal_version"]


class InvalidVersion(ValueError):
    """A string that is not a PEP 440 version."""


_PATTERN = re.compile(
    r"""
    v?
    (?:(?P<epoch>[0-9]+)!)?
    (?P<release>[0-9]+(?:\.[0-9]+)*)
    (?:[-_.]?(?P<pre_l>alpha|beta|preview|pre|a|b|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)?
    (?:-(?P<post_n1>[0-9]+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?)?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    """,
    re.VERBOSE | re.IGNORECASE,
)
_PRE_NAMES = {"alpha": "a", "beta": "b", "c": "rc", "pre": "rc", "preview": "rc"}


class Version:
    """A parsed PEP 440 version, ordered as PEP 440 orders them."""

    __slots__ = ("_key", "dev", "epoch", "local", "post", "pre", "release")

    def __init__(self, text: str) -> None:
        match = _PATTERN.fullmatch(text.strip())
        if match is None:
            raise InvalidVersion(f"Invalid version: {text!r}")
        self.epoch = int(match["epoch"] or 0)
        self.release = tuple(int(part) for part in match["release"].split("."))
        self.pre = None
        if match["pre_l"]:
            letter = match["pre_l"].lower()
            self.pre = (_PRE_NAMES.get(letter, letter), int(match["pre_n"] or 0))
        post = match["post_n1"] or match["post_n2"] or ("0" if match["post_l"] else None)
        self.post = None if post is None else int(post)
        self.dev = None if match["dev_l"] is None else int(match["dev_n"] or 0)
        self.local = (
            None
            if match["local"] is None
            else tuple(int(p) if p.isdigit() else p.lower() for p in re.split(r"[-_.]", match["local"]))
        )
        self._key = self._sort_key()

    def _sort_key(self) -> tuple:
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:  # 1.0 == 1.0.0
            release.pop()
        # Each part becomes a tuple whose first item ranks "absent" against "present" as PEP 440 says.
        if self.pre is None and self.post is None and self.dev is not None:
            pre: tuple = (-1,)  # 1.0.dev0 comes before 1.0a0
        elif self.pre is None:
            pre = (2,)  # a final release comes after its pre-releases
        else:
            pre = (0, *self.pre)
        post = (-1,) if self.post is None else (0, self.post)
        dev = (1,) if self.dev is None else (0, self.dev)
        # A local label sorts after none; within one, numbers sort after words.
        local = (
            (0,)
            if self.local is None
            else (1, tuple((1, p, "") if isinstance(p, int) else (0, 0, p) for p in self.local))
        )
        return (self.epoch, tuple(release), pre, post, dev, local)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._key == other._key

    def __lt__(self, other: Version) -> bool:
        return self._key < other._key

    def __le__(self, other: Version) -> bool:
        return self._key <= other._key

    def __gt__(self, other: Version) -> bool:
        return self._key > other._key

    def __ge__(self, other: Version) -> bool:
        return self._key >= other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"<Version({'.'.join(map(str, self.release))!r})>"


def _as_version(value: Any) -> Version | None:
    if isinstance(value, Version):
        return value
    if isinstance(value, str):
        return Version(value)
    if isinstance(value, Iterable):  # (2, 1) and [2, 1, 0]
        return Version(".".join(str(part) for part in value))
    return None


class TorchVersion(str):
    """A version string that compares as a version with strings, tuples and ``Version``s."""

    def _compare(self, other: Any, op: str) -> Any:
        other_version = _as_version(other)
        if other_version is None:
            return NotImplemented
        return getattr(Version(self), op)(other_version)

    def __eq__(self, other: object) -> Any:
        return self._compare(other, "__eq__")

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, "__lt__")

    def __le__(self, other: Any) -> Any:
        return self._compare(other, "__le__")

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, "__gt__")

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, "__ge__")

    # `!=` stays str's, as PyTorch's does: "2.1" != "2.1.0" is True though the versions are equal.
    __hash__ = str.__hash__


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ember")
    except PackageNotFoundError:  # a source tree that is not installed
        return "0+unknown"


internal_version = _installed_version()
__version__ = TorchVersion(internal_version)
