"""ember.hub's PyTorch-named settings: ENV_TORCH_HOME, ENV_GITHUB_TOKEN, MAP_LOCATION and tqdm."""

import typing

import pytest

import ember
import ember.hub as hub


def test_env_torch_home_names_the_home_variable(monkeypatch, tmp_path):
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.delenv("EMBER_HUB", raising=False)
    monkeypatch.setenv(hub.ENV_TORCH_HOME, str(tmp_path))
    assert hub.get_dir() == str(tmp_path / "hub")


def test_the_github_token_goes_with_archive_downloads(monkeypatch, tmp_path):
    sent = []

    def fake_download(url, dst, hash_prefix, progress, headers):
        sent.append(headers)
        raise ConnectionError("no network in tests")

    monkeypatch.setattr(hub, "_download", fake_download)
    monkeypatch.setattr(hub, "_hub_dir", str(tmp_path))
    monkeypatch.setenv(hub.ENV_GITHUB_TOKEN, "secret")
    with pytest.raises(ConnectionError):
        hub.list("owner/name", trust_repo=True, force_reload=True)
    monkeypatch.delenv(hub.ENV_GITHUB_TOKEN)
    with pytest.raises(ConnectionError):
        hub.list("owner/name", trust_repo=True, force_reload=True)
    assert sent == [{"Authorization": "token secret"}, {}]


def test_map_location_admits_what_load_takes():
    allowed = typing.get_args(hub.MAP_LOCATION)
    assert str in allowed and type(None) in allowed and type(ember.device("cpu")) in allowed


def test_tqdm_writes_a_progress_line(capsys):
    with hub.tqdm(total=200, unit="B") as bar:
        bar.update(50)
        bar.update(150)
    assert capsys.readouterr().err == "\r25.0%\r100.0%\n"
    with hub.tqdm(disable=True) as bar:
        bar.update(10)
    assert capsys.readouterr().err == ""


def test_the_names_match_torch_hub():
    torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
    assert hub.ENV_GITHUB_TOKEN == torch.hub.ENV_GITHUB_TOKEN
    assert torch.hub.ENV_TORCH_HOME == "TORCH_HOME" and hub.ENV_TORCH_HOME == "EMBER_HOME"
