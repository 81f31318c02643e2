"""EMBER_LOGS and friends are read at import, so these tests start fresh interpreters."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import logging
    import ember.logs
    logging.getLogger("ember.dynamo.convert").info("dynamo info")
    logging.getLogger("ember.inductor").warning("inductor warning")
    ember.logs.get_artifact_logger("ember.dynamo.convert", "graph_code").debug("graph code")
    ember.logs.get_artifact_logger("ember.dynamo.convert", "bytecode").debug("byte code")
    ember.logs.trace_event("done", ok=True)
    """
)


def run(env_overrides, script=SCRIPT):
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_") and k not in ("RANK",)}
    env.update(env_overrides)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)


def test_no_settings_prints_warnings_only():
    done = run({})
    assert done.returncode == 0, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("[W") and line.endswith("] inductor warning")


def test_ember_logs_is_read_at_import():
    done = run({"EMBER_LOGS": "+dynamo,-inductor,graph_code"})
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert "dynamo info" in err and "[graph_code] graph code" in err
    assert "inductor warning" not in err and "byte code" not in err


def test_bad_ember_logs_fails_the_import_with_a_named_error():
    done = run({"EMBER_LOGS": "+dynamo,gaurds"})
    assert done.returncode != 0
    assert "ValueError: EMBER_LOGS: unknown log name 'gaurds'; did you mean guards?" in done.stderr


def test_help_lists_every_name_and_the_program_goes_on():
    done = run({"EMBER_LOGS": "help"})
    assert done.returncode == 0, done.stderr
    import ember.logs

    for name in [*ember.logs.registry.components, *ember.logs.registry.artifacts]:
        assert name in done.stderr
    assert "inductor warning" in done.stderr


def test_logs_out_and_ranks(tmp_path):
    out = tmp_path / "ember.log"
    shown = run({"EMBER_LOGS": "dynamo", "EMBER_LOGS_OUT": str(out), "EMBER_LOGS_RANKS": "0,3", "RANK": "3"})
    assert shown.returncode == 0, shown.stderr
    assert "[rank3]:[I" in shown.stderr and "dynamo info" in shown.stderr
    assert out.read_text().splitlines() == shown.stderr.splitlines()
    hidden = run({"EMBER_LOGS": "dynamo", "EMBER_LOGS_RANKS": "0,3", "RANK": "1"})
    assert hidden.returncode == 0 and hidden.stderr == ""


def test_bad_ranks_fail_the_import():
    done = run({"EMBER_LOGS_RANKS": "zero"})
    assert done.returncode != 0 and "EMBER_LOGS_RANKS" in done.stderr


def test_ember_trace_writes_the_trace(tmp_path):
    done = run({"EMBER_TRACE": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    (path,) = tmp_path.glob("*.jsonl")
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(e["event"], e.get("artifact")) for e in events] == [
        ("artifact", "graph_code"),
        ("artifact", "bytecode"),
        ("done", None),
    ]


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else False, reason="root can write anywhere")
def test_unwritable_trace_dir_warns_once(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    done = run({"EMBER_TRACE": str(locked / "trace")})
    assert done.returncode == 0
    assert done.stderr.count("EMBER_TRACE") == 1


def test_trace_dir_that_is_a_file_warns_once(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = run({"EMBER_TRACE": str(blocker)})
    assert done.returncode == 0
    assert done.stderr.count("EMBER_TRACE: cannot write the trace") == 1
    assert "inductor warning" in done.stderr
