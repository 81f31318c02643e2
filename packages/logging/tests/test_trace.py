import json
import logging
import os
import warnings
from datetime import datetime

import pytest

import ember.logs
from ember.logs import get_artifact_logger, set_logs, trace_event
from ember.logs._trace import PAYLOAD_INLINE_CHARS


def read_events(directory):
    (path,) = directory.glob("*.jsonl")
    return path, [json.loads(line) for line in path.read_text().splitlines()]


def test_trace_events_are_json_lines_with_process_fields(tmp_path, monkeypatch):
    for variable in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        monkeypatch.delenv(variable, raising=False)
    ember.logs.set_trace_dir(tmp_path)
    trace_event("compile_start", frame="f", line=3)
    trace_event("compile_end", frame="f", seconds=0.25, sizes=[2, 3], name="kept")
    path, events = read_events(tmp_path)
    assert path.name == f"ember_trace.pid{os.getpid()}.jsonl"
    assert [e["event"] for e in events] == ["compile_start", "compile_end"]
    assert [e["seq"] for e in events] == [1, 2]
    assert all(e["pid"] == os.getpid() and e["rank"] is None for e in events)
    assert events[1]["sizes"] == [2, 3] and events[1]["seconds"] == 0.25 and events[1]["name"] == "kept"
    stamp = datetime.fromisoformat(events[0]["ts"].replace("Z", "+00:00"))
    assert abs((datetime.now(stamp.tzinfo) - stamp).total_seconds()) < 60


def test_rank_is_in_the_file_name_and_lines(tmp_path):
    ember.logs.set_rank(2)
    ember.logs.set_trace_dir(tmp_path)
    trace_event("hello")
    path, events = read_events(tmp_path)
    assert path.name == f"ember_trace.rank2.pid{os.getpid()}.jsonl" and events[0]["rank"] == 2


def test_artifact_records_are_traced_even_when_not_printed(tmp_path, capsys):
    log = get_artifact_logger("ember.inductor.codegen", "output_code")
    ember.logs.set_trace_dir(tmp_path)
    log.debug("kernel %s", "k0")
    assert capsys.readouterr().err == ""
    _, events = read_events(tmp_path)
    (event,) = events
    assert event["event"] == "artifact" and event["artifact"] == "output_code"
    assert event["message"] == "kernel k0" and event["logger"] == "ember.inductor"
    assert event["file"].endswith("test_trace.py") and event["level"] == "DEBUG"
    # plain component records are not traced
    set_logs(inductor=logging.DEBUG)
    logging.getLogger("ember.inductor").debug("not traced")
    assert len(read_events(tmp_path)[1]) == 1


def test_large_payloads_go_to_side_files(tmp_path):
    ember.logs.set_trace_dir(tmp_path)
    code = "def f(x):\n" + "    x = x + 1\n" * 200
    assert len(code) > PAYLOAD_INLINE_CHARS
    trace_event("graph", code=code, small="inline")
    _, (event,) = read_events(tmp_path)
    assert event["small"] == "inline"
    assert event["code"]["chars"] == len(code)
    assert (tmp_path / event["code"]["payload"]).read_text() == code
    assert len(list((tmp_path / "payloads").iterdir())) == 1


def test_reserved_field_names_are_refused(tmp_path):
    ember.logs.set_trace_dir(tmp_path)
    for field in ("ts", "pid", "rank", "seq", "event"):
        with pytest.raises(ValueError, match="reserved"):
            trace_event("x", **{field: 1})


def test_unwritable_directory_warns_once_and_goes_on(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    ember.logs.set_trace_dir(blocker / "trace")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace_event("one")
        trace_event("two")
        get_artifact_logger("ember.fx", "graph").debug("three")
    assert len(caught) == 1
    assert issubclass(caught[0].category, RuntimeWarning) and "EMBER_TRACE" in str(caught[0].message)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_writes_its_own_file(tmp_path):
    ember.logs.set_trace_dir(tmp_path)
    trace_event("parent_before")
    pid = os.fork()
    if pid == 0:  # child
        try:
            trace_event("child")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    trace_event("parent_after")
    files = {
        p.name: [json.loads(line)["event"] for line in p.read_text().splitlines()] for p in tmp_path.glob("*.jsonl")
    }
    assert files == {
        f"ember_trace.pid{os.getpid()}.jsonl": ["parent_before", "parent_after"],
        f"ember_trace.pid{pid}.jsonl": ["child"],
    }
