"""``ember.hub`` against ``torch.hub``: cache directories, downloads and hash checks over a local
HTTP server (no network), loading from a local repository's hubconf.py, and a GitHub-style archive
served locally."""

import hashlib
import http.server
import os
import threading
import zipfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

import ember  # noqa: E402
import ember.hub as hub  # noqa: E402


@pytest.fixture
def server(tmp_path):
    """A local HTTP server over ``tmp_path/"served"``; yields (folder, base URL)."""
    folder = tmp_path / "served"
    folder.mkdir()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    thread.join()


@pytest.fixture
def clean_hub_dir(monkeypatch):
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.setattr(torch.hub, "_hub_dir", None)
    for name in ("EMBER_HOME", "EMBER_HUB", "TORCH_HOME", "TORCH_HUB", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)


def test_cache_directories_follow_torch(clean_hub_dir, monkeypatch, tmp_path):
    home = os.path.expanduser("~")
    assert torch.hub.get_dir() == os.path.join(home, ".cache", "torch", "hub")
    assert hub.get_dir() == os.path.join(home, ".cache", "ember", "hub")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert torch.hub.get_dir() == str(tmp_path / "xdg" / "torch" / "hub")
    assert hub.get_dir() == str(tmp_path / "xdg" / "ember" / "hub")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "home"))
    assert hub.get_dir() == torch.hub.get_dir() == str(tmp_path / "home" / "hub")
    monkeypatch.setenv("EMBER_HUB", str(tmp_path / "hubenv"))
    assert hub.get_dir() == str(tmp_path / "hubenv")
    hub.set_dir("~/somewhere")
    torch.hub.set_dir("~/somewhere")
    assert hub.get_dir() == torch.hub.get_dir() == os.path.join(home, "somewhere")


def _served_weights(folder: Path, prefix_ok: bool) -> str:
    state = {"weight": ember.arange(6, dtype=ember.float32).reshape(2, 3), "step": ember.tensor(3)}
    raw = folder / "raw.pth"
    ember.save(state, raw)
    digest = hashlib.sha256(raw.read_bytes()).hexdigest()
    name = f"net-{digest[:8] if prefix_ok else 'deadbeef'}.pth"
    raw.rename(folder / name)
    return name


def test_load_state_dict_from_url_caches(server, tmp_path, capsys):
    folder, base = server
    name = _served_weights(folder, prefix_ok=True)
    model_dir = tmp_path / "models"
    state = hub.load_state_dict_from_url(f"{base}/{name}", model_dir=str(model_dir), check_hash=True)
    assert state["weight"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and state["step"].item() == 3
    assert (model_dir / name).exists()
    assert f'Downloading: "{base}/{name}" to {model_dir / name}' in capsys.readouterr().err
    (folder / name).unlink()  # served no more: the second load reads the cache
    again = hub.load_state_dict_from_url(f"{base}/{name}", model_dir=str(model_dir))
    assert again["weight"].tolist() == state["weight"].tolist()
    assert not [p for p in model_dir.iterdir() if p.name.endswith(".partial")]
    # file_name names the cached file, as in PyTorch.
    _served_weights(folder, prefix_ok=True)
    served = next(p.name for p in folder.iterdir())
    hub.load_state_dict_from_url(f"{base}/{served}", model_dir=str(model_dir), file_name="mine.pth")
    assert (model_dir / "mine.pth").exists()


def test_default_model_dir_is_checkpoints_under_hub_dir(server, clean_hub_dir, tmp_path):
    folder, base = server
    name = _served_weights(folder, prefix_ok=True)
    hub.set_dir(tmp_path / "hubdir")
    hub.load_state_dict_from_url(f"{base}/{name}", progress=False)
    assert (tmp_path / "hubdir" / "checkpoints" / name).exists()


def test_hash_mismatch_is_refused_like_torch(server, tmp_path):
    folder, base = server
    name = _served_weights(folder, prefix_ok=False)
    digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    with pytest.raises(RuntimeError) as want:
        torch.hub.download_url_to_file(
            f"{base}/{name}", str(tmp_path / "t.pth"), hash_prefix="deadbeef", progress=False
        )
    with pytest.raises(RuntimeError) as got:
        hub.load_state_dict_from_url(f"{base}/{name}", model_dir=str(tmp_path / "m"), check_hash=True)
    assert str(got.value) == str(want.value) == f'invalid hash value (expected "deadbeef", got "{digest}")'
    assert not (tmp_path / "m" / name).exists() and list((tmp_path / "m").iterdir()) == []
    # Without check_hash the same file is accepted.
    assert hub.load_state_dict_from_url(f"{base}/{name}", model_dir=str(tmp_path / "m"))["step"].item() == 3


def test_download_url_to_file_matches_torch(server, tmp_path):
    folder, base = server
    (folder / "blob.bin").write_bytes(os.urandom(300_000))
    hub.download_url_to_file(f"{base}/blob.bin", str(tmp_path / "ours.bin"), progress=False)
    torch.hub.download_url_to_file(f"{base}/blob.bin", str(tmp_path / "theirs.bin"), progress=False)
    assert (tmp_path / "ours.bin").read_bytes() == (tmp_path / "theirs.bin").read_bytes()
    digest = hashlib.sha256((folder / "blob.bin").read_bytes()).hexdigest()
    hub.download_url_to_file(f"{base}/blob.bin", str(tmp_path / "ok.bin"), hash_prefix=digest[:10], progress=False)
    assert (tmp_path / "ok.bin").exists()


def test_legacy_zip_checkpoint(server, tmp_path):
    folder, base = server
    inner = tmp_path / "inner.pth"
    ember.save({"a": ember.ones(2)}, inner)
    with zipfile.ZipFile(folder / "legacy.zip", "w") as archive:
        archive.write(inner, "inner.pth")
    state = hub.load_state_dict_from_url(f"{base}/legacy.zip", model_dir=str(tmp_path / "m"))
    assert state["a"].tolist() == [1.0, 1.0]


HUBCONF = '''
dependencies = ["numpy"]


def scaled(x, scale=2):
    """Multiply by scale."""
    return x * scale


def _private():
    return None
'''


@pytest.fixture
def repo(tmp_path):
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "hubconf.py").write_text(HUBCONF)
    return folder


def test_load_local_matches_torch(repo):
    assert hub.load(str(repo), "scaled", 3, source="local") == torch.hub.load(str(repo), "scaled", 3, source="local")
    assert hub.load(str(repo), "scaled", 3, scale=5, source="local") == 15
    for kwargs, error in (({"source": "local"}, RuntimeError), ({"source": "gitlab"}, ValueError)):
        model = "missing" if kwargs["source"] == "local" else "scaled"
        with pytest.raises(error) as want:
            torch.hub.load(str(repo), model, **kwargs)
        with pytest.raises(error) as got:
            hub.load(str(repo), model, **kwargs)
        assert str(got.value) == str(want.value)


def test_missing_dependencies_like_torch(repo):
    (repo / "hubconf.py").write_text('dependencies = ["no_such_module_xyz"]\n\ndef m():\n    return 1\n')
    with pytest.raises(RuntimeError) as want:
        torch.hub.load(str(repo), "m", source="local")
    with pytest.raises(RuntimeError) as got:
        hub.load(str(repo), "m", source="local")
    assert str(got.value) == str(want.value)


def test_github_source_from_a_served_archive(server, repo, clean_hub_dir, tmp_path, monkeypatch):
    folder, base = server
    with zipfile.ZipFile(folder / "archive.zip", "w") as archive:
        archive.write(repo / "hubconf.py", "owner-name-abc123/hubconf.py")
    monkeypatch.setattr(hub, "GITHUB_ARCHIVE_URL", base + "/archive.zip")
    hub.set_dir(tmp_path / "hubdir")
    assert hub.list("owner/name", trust_repo=True) == ["scaled"]
    assert hub.help("owner/name", "scaled", trust_repo=True) == "Multiply by scale."
    assert hub.load("owner/name", "scaled", 4, trust_repo=True) == 8
    assert (tmp_path / "hubdir" / "owner_name_main" / "hubconf.py").exists()
    assert "owner_name" in (tmp_path / "hubdir" / "trusted_list").read_text()
    (folder / "archive.zip").unlink()  # cached: no second download
    assert hub.load("owner/name", "scaled", 1, trust_repo="check") == 2
    with pytest.raises(ValueError, match="repo_owner/repo_name"):
        hub.load("no-slash", "scaled")
