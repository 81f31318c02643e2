"""``ember.hub``: pretrained weights by URL into a local cache, and models from a repository's ``hubconf.py``.

The cache directory is PyTorch's scheme under Ember's names: ``set_dir(d)`` wins; else ``EMBER_HUB``;
else ``$EMBER_HOME/hub``, where ``EMBER_HOME`` defaults to ``$XDG_CACHE_HOME/ember`` (``~/.cache/ember``).
Weights land in ``<hub dir>/checkpoints``. A file name such as ``resnet18-5c106cde.pth`` carries
the first hex digits of the file's SHA-256; with ``check_hash=True`` a download whose digest does
not start with them is refused. Downloads go to a temporary file beside the target and are moved
into place only when complete, so that an interrupted download never leaves a broken cache entry.

A GitHub repository (``owner/name[:ref]``) is fetched as an archive into ``<hub dir>/owner_name_ref``;
``source="local"`` loads from a directory already on disk.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlparse
from urllib.request import Request, urlopen

from ember.core.devices import device as _device

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

ENV_EMBER_HOME = "EMBER_HOME"
# PyTorch's names for its settings: the variable naming the home directory (Ember's is EMBER_HOME) and
# the one holding a GitHub token, sent with GitHub downloads when set.
ENV_TORCH_HOME = ENV_EMBER_HOME
ENV_GITHUB_TOKEN = "GITHUB_TOKEN"
ENV_EMBER_HUB = "EMBER_HUB"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"
READ_DATA_CHUNK = 128 * 1024
# Where a GitHub repository's archive is fetched from (tests point it at a local server).
GITHUB_ARCHIVE_URL = "https://github.com/{owner}/{name}/zipball/{ref}"

# What ``map_location`` may be (as ember.load takes it): a function of (storage, location), a device,
# a device string, a mapping of location strings, or None.
MAP_LOCATION = Callable[[Any, str], Any] | _device | str | dict[str, str] | None

_hub_dir: str | None = None


class tqdm:
    """A progress line on stderr with the few methods of ``tqdm.tqdm`` that downloads use (the
    ``tqdm`` package itself is not a dependency): the percentage done, or the count without a total."""

    def __init__(self, total: int | None = None, disable: bool = False, unit: str | None = None, *args, **kwargs):
        self.total = total
        self.disable = disable
        self.unit = unit or "it"
        self.n = 0

    def update(self, n: int) -> None:
        if self.disable:
            return
        self.n += n
        if self.total:
            sys.stderr.write(f"\r{100 * self.n / float(self.total):.1f}%")
        else:
            sys.stderr.write(f"\r{self.n} {self.unit}")
        sys.stderr.flush()

    def set_description(self, *args, **kwargs) -> None:
        pass  # one line of progress has no room for a description

    def write(self, s: str) -> None:
        sys.stderr.write(f"{s}\n")

    def close(self) -> None:
        self.disable = True

    def __enter__(self) -> tqdm:
        return self

    def __exit__(self, *exc) -> None:
        if not self.disable:
            sys.stderr.write("\n")


def _get_ember_home() -> str:
    default = os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "ember")
    return os.path.expanduser(os.getenv(ENV_EMBER_HOME, default))


def get_dir() -> str:
    """The hub's cache directory (see the module notes for the order of the settings)."""
    if _hub_dir is not None:
        return _hub_dir
    if os.getenv(ENV_EMBER_HUB):
        return os.path.expanduser(os.environ[ENV_EMBER_HUB])
    return os.path.join(_get_ember_home(), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Use ``d`` as the hub's cache directory from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Download ``url`` to ``dst``; with ``hash_prefix``, refuse (``RuntimeError``) a file whose SHA-256
    hex digest does not start with it."""
    _download(url, dst, hash_prefix, progress, {})


def _download(url: str, dst: str, hash_prefix: str | None, progress: bool, headers: dict[str, str]) -> None:
    dst = os.path.abspath(os.path.expanduser(dst))
    folder = os.path.dirname(dst)
    partial = os.path.join(folder, f"{os.path.basename(dst)}.{uuid.uuid4().hex}.partial")
    digest = hashlib.sha256()
    request = Request(url, headers={"User-Agent": "ember.hub", **headers})
    try:
        with urlopen(request) as response, open(partial, "wb") as out:
            total = response.headers.get("Content-Length") if hasattr(response, "headers") else None
            with tqdm(total=int(total) if total else None, disable=not progress, unit="B") as bar:
                while chunk := response.read(READ_DATA_CHUNK):
                    out.write(chunk)
                    digest.update(chunk)
                    bar.update(len(chunk))
        if hash_prefix is not None:
            found = digest.hexdigest()
            if found[: len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{found}")')
        shutil.move(partial, dst)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def _is_legacy_zip(path: str) -> bool:
    # PyTorch's old checkpoints were zip files holding one file; ember.save's zip files hold several.
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as archive:
        entries = archive.infolist()
    return len(entries) == 1 and not entries[0].is_dir()


def load_state_dict_from_url(
    url: str,
    model_dir: str | None = None,
    map_location: Any = None,
    progress: bool = True,
    check_hash: bool = False,
    file_name: str | None = None,
    weights_only: bool = False,
) -> dict[str, Any]:
    """Load the object saved at ``url``, downloading it into ``model_dir`` (default
    ``<hub dir>/checkpoints``) unless it is already there."""
    import ember

    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stderr.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            match = HASH_REGEX.search(filename)
            hash_prefix = match.group(1) if match else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    if _is_legacy_zip(cached_file):
        with zipfile.ZipFile(cached_file) as archive:
            member = archive.infolist()[0].filename
            archive.extractall(model_dir)
        cached_file = os.path.join(model_dir, member)
    return ember.load(cached_file, map_location=map_location, weights_only=weights_only)


# -- models from a repository's hubconf.py ---------------------------------------------------------


@contextlib.contextmanager
def _on_sys_path(path: str) -> Iterator[None]:
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_hubconf(repo_dir: str):
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No {MODULE_HUBCONF} in {repo_dir}")
    spec = importlib.util.spec_from_file_location("hubconf", path)
    module = importlib.util.module_from_spec(spec)
    with _on_sys_path(repo_dir):
        spec.loader.exec_module(module)
    missing = [dep for dep in getattr(module, VAR_DEPENDENCY, []) if importlib.util.find_spec(dep) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _entry(module, model: str) -> Callable:
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    entry = getattr(module, model, None)
    if entry is None or not callable(entry):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return entry


def _parse_repo(github: str) -> tuple[str, str, str]:
    repo, _, ref = github.partition(":")
    owner, slash, name = repo.partition("/")
    if not slash or not owner or not name:
        raise ValueError(f'Invalid github repo "{github}": expected "repo_owner/repo_name[:ref]"')
    return owner, name, ref or "main"


def _check_trust(repo: str, trust_repo: Any) -> None:
    trusted_file = os.path.join(get_dir(), "trusted_list")
    trusted = set()
    if os.path.exists(trusted_file):
        with open(trusted_file) as f:
            trusted = {line.strip() for line in f}
    key = repo.replace("/", "_")
    if key in trusted:
        return
    if trust_repo is None:
        warnings.warn(
            f"You are about to download and run code from an untrusted repository ({repo}). Pass trust_repo=True "
            "to trust it from now on, or trust_repo='check' to be asked.",
            UserWarning,
            stacklevel=3,
        )
        return
    if trust_repo is not True:
        answer = input(f"The repository {repo} is not in the trusted list. Do you trust this repository? (y/N) ")
        if answer.strip().lower() not in ("y", "yes"):
            raise RuntimeError("Untrusted repository.")
    os.makedirs(get_dir(), exist_ok=True)
    with open(trusted_file, "a") as f:
        f.write(key + "\n")


def _github_dir(github: str, force_reload: bool, trust_repo: Any, verbose: bool) -> str:
    owner, name, ref = _parse_repo(github)
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    _check_trust(f"{owner}/{name}", trust_repo)
    repo_dir = os.path.join(hub_dir, f"{owner}_{name}_{ref.replace('/', '_')}")
    if os.path.exists(repo_dir) and not force_reload:
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    url = GITHUB_ARCHIVE_URL.format(owner=owner, name=name, ref=ref)
    with tempfile.TemporaryDirectory(dir=hub_dir) as scratch:
        archive = os.path.join(scratch, "repo.zip")
        if verbose:
            sys.stderr.write(f'Downloading: "{url}" to {archive}\n')
        token = os.getenv(ENV_GITHUB_TOKEN)
        _download(url, archive, None, False, {"Authorization": f"token {token}"} if token else {})
        with zipfile.ZipFile(archive) as z:
            top = z.infolist()[0].filename.split("/")[0]
            z.extractall(scratch)
        shutil.rmtree(repo_dir, ignore_errors=True)
        shutil.move(os.path.join(scratch, top), repo_dir)
    return repo_dir


def load(
    repo_or_dir: str,
    model: str,
    *args: Any,
    source: str = "github",
    trust_repo: Any = "check",
    force_reload: bool = False,
    verbose: bool = True,
    skip_validation: bool = False,
    **kwargs: Any,
) -> Any:
    """Call the entry point ``model`` of the ``hubconf.py`` of a GitHub repository or a local directory."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        repo_or_dir = _github_dir(repo_or_dir, force_reload, trust_repo, verbose)
    with _on_sys_path(repo_or_dir):
        return _entry(_import_hubconf(repo_or_dir), model)(*args, **kwargs)


def list(
    github: str,
    force_reload: bool = False,
    skip_validation: bool = False,
    trust_repo: Any = "check",
    verbose: bool = True,
) -> builtins.list[str]:
    """The entry points of a GitHub repository's ``hubconf.py``."""
    module = _import_hubconf(_github_dir(github, force_reload, trust_repo, verbose))
    return [name for name in dir(module) if callable(getattr(module, name)) and not name.startswith("_")]


def help(
    github: str,
    model: str,
    force_reload: bool = False,
    skip_validation: bool = False,
    trust_repo: Any = "check",
) -> str | None:
    """The docstring of entry point ``model`` of a GitHub repository's ``hubconf.py``."""
    module = _import_hubconf(_github_dir(github, force_reload, trust_repo, verbose=True))
    return _entry(module, model).__doc__
