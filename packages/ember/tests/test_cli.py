import os
import subprocess
import sys
from importlib.metadata import EntryPoint, version

import typer
from typer.testing import CliRunner

import ember
import ember.cli
from ember.logs import registry, trace_event
from ember.logs import set_trace_dir as set_trace_dir

runner = CliRunner()


def test_env_reports_python_packages_compiler_and_gpu():
    result = runner.invoke(ember.cli.app, ["env"])
    assert result.exit_code == 0, result.output
    rows = dict(line.split(None, 1) for line in result.output.splitlines() if " " in line.strip())
    assert sys.version.split()[0] in rows["Python"]
    assert rows["ember-logging"] == version("ember-logging")
    assert rows["ember-tensor"] == version("ember-tensor")
    assert rows["ember"] == version("ember")
    assert "C++" in result.output and "GPU" in result.output


def test_env_names_the_compiler_from_cxx(monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-xyz")
    result = runner.invoke(ember.cli.app, ["env"])
    assert "not found (looked for no-such-compiler-xyz; set CXX)" in result.output


def test_logs_lists_every_component_and_artifact_with_its_description():
    result = runner.invoke(ember.cli.app, ["logs"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    for entry in [*registry.components.values(), *registry.artifacts.values()]:
        assert any(entry.name in line and entry.description in line for line in lines), entry.name


def test_trace_report_writes_a_page(tmp_path):
    set_trace_dir(tmp_path)
    trace_event("step", n=1)
    set_trace_dir(None)
    out = tmp_path / "report.html"
    result = runner.invoke(ember.cli.app, ["trace", "report", str(tmp_path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.output
    assert "<h1>Ember trace</h1>" in out.read_text()


def test_trace_report_of_a_missing_directory_is_a_usage_error(tmp_path):
    result = runner.invoke(ember.cli.app, ["trace", "report", str(tmp_path / "absent")], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    assert "is not a directory" in result.output


def _hello() -> None:
    """Say hello."""
    typer.echo("hello from a plugin")


def test_plugins_are_added_and_a_broken_one_is_skipped(monkeypatch, capsys):
    app = typer.Typer()
    app.command("noop")(lambda: None)
    plugins = [
        EntryPoint("hello", f"{__name__}:_hello", "ember.cli"),
        EntryPoint("broken", "ember_no_such_module:app", "ember.cli"),
        EntryPoint("odd", "sys:maxsize", "ember.cli"),
    ]
    monkeypatch.setattr(ember.cli, "entry_points", lambda group: plugins if group == "ember.cli" else [])
    ember.cli._add_plugins(app)
    err = capsys.readouterr().err
    assert "cannot load subcommand 'broken'" in err and "'odd' is neither" in err
    result = runner.invoke(app, ["hello"])
    assert result.exit_code == 0 and "hello from a plugin" in result.output


def clean_env(**overrides):
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    env.update(overrides)
    return env


def test_real_subprocess_with_ember_logs():
    ok = subprocess.run(
        [sys.executable, "-m", "ember", "logs"],
        capture_output=True,
        text=True,
        env=clean_env(EMBER_LOGS="+dynamo,graph_code"),
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert "graph_code" in ok.stdout and ok.stderr == ""
    bad = subprocess.run(
        [sys.executable, "-m", "ember", "env"],
        capture_output=True,
        text=True,
        env=clean_env(EMBER_LOGS="+dynamo,grpah"),
        timeout=120,
    )
    assert bad.returncode != 0
    assert "EMBER_LOGS: unknown log name 'grpah'; did you mean graph?" in bad.stderr
