import logging
import re
import sys

import pytest

import ember.logs
from ember.logs import get_artifact_logger, set_logs

LINE = re.compile(
    r"^(\[rank(?P<rank>\d+)\]:)?\[(?P<level>[DIWEC])(?P<date>\d{4}) (?P<time>\d\d:\d\d:\d\d\.\d{3}) "
    r"(?P<name>\S+) (?P<file>[^ :]+):(?P<line>\d+)\]( \[(?P<artifact>\w+)\])? (?P<message>.*)$"
)


def emit_line():
    logging.getLogger("ember.dynamo.convert_frame").info("compiled %s", "f")
    return sys._getframe().f_lineno - 1


def test_line_format(capsys):
    set_logs(dynamo=logging.INFO)
    lineno = emit_line()
    (line,) = capsys.readouterr().err.splitlines()
    m = LINE.match(line)
    assert m, line
    assert m["level"] == "I" and m["name"] == "ember.dynamo"
    assert m["file"] == "test_output.py" and int(m["line"]) == lineno
    assert m["rank"] is None and m["artifact"] is None and m["message"] == "compiled f"


def test_levels_have_their_letters(capsys):
    set_logs(core=logging.DEBUG)
    log = logging.getLogger("ember.core.x")
    for method in (log.debug, log.info, log.warning, log.error, log.critical):
        method("m")
    letters = [LINE.match(line)["level"] for line in capsys.readouterr().err.splitlines()]
    assert letters == ["D", "I", "W", "E", "C"]


def test_every_line_of_a_message_carries_the_prefix(capsys):
    set_logs(graph_code=True)
    get_artifact_logger("ember.fx.graph", "graph_code").debug("def forward(x):\n    return x + 1\n")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3
    matches = [LINE.match(line) for line in lines]
    assert all(m and m["artifact"] == "graph_code" and m["name"] == "ember.fx" for m in matches)
    assert [m["message"] for m in matches] == ["def forward(x):", "    return x + 1", ""]


def test_exceptions_are_printed(capsys):
    try:
        raise KeyError("lost")
    except KeyError:
        logging.getLogger("ember.export").exception("failed")
    err = capsys.readouterr().err
    assert "failed" in err and "KeyError: 'lost'" in err


def test_rank_prefix_only_in_a_distributed_run(capsys, monkeypatch):
    for variable in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        monkeypatch.delenv(variable, raising=False)
    log = logging.getLogger("ember.distributed")
    log.warning("plain")
    monkeypatch.setenv("RANK", "3")
    log.warning("ranked")
    monkeypatch.delenv("RANK")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "5")
    log.warning("mpi")
    ember.logs.set_rank(1)
    log.warning("explicit")
    lines = capsys.readouterr().err.splitlines()
    assert [LINE.match(line)["rank"] for line in lines] == [None, "3", "5", "1"]


def test_logs_ranks_limits_which_ranks_print(capsys, monkeypatch):
    log = logging.getLogger("ember.distributed")
    ember.logs.set_ranks("0,3")
    for rank in range(5):
        ember.logs.set_rank(rank)
        log.warning("from %d", rank)
    ember.logs.set_rank(None)
    for variable in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        monkeypatch.delenv(variable, raising=False)
    log.warning("no rank")
    messages = [LINE.match(line)["message"] for line in capsys.readouterr().err.splitlines()]
    assert messages == ["from 0", "from 3", "no rank"]


def test_bad_ranks_value():
    for bad in ("a,b", "", "-1", " , "):
        with pytest.raises(ValueError, match="EMBER_LOGS_RANKS"):
            ember.logs.set_ranks(bad)
    with pytest.raises(ValueError, match="non-negative int"):
        ember.logs.set_rank(-2)


def test_output_file_gets_the_same_lines(tmp_path, capsys):
    path = tmp_path / "logs" / "ember.log"
    ember.logs.set_output_file(path)
    set_logs(dynamo=logging.INFO, graph_code=True)
    logging.getLogger("ember.dynamo").info("to both")
    get_artifact_logger("ember.dynamo.out", "graph_code").debug("code too")
    ember.logs.set_output_file(None)
    logging.getLogger("ember.dynamo").info("stderr only")
    printed = capsys.readouterr().err.splitlines()
    written = path.read_text().splitlines()
    assert written == printed[:2]
    assert "stderr only" in printed[2]


def test_nothing_reaches_the_root_logger():
    root_seen = []

    class Spy(logging.Handler):
        def emit(self, record):
            root_seen.append(record)

    spy = Spy()
    logging.getLogger().addHandler(spy)
    try:
        set_logs(all=logging.DEBUG, graph_code=True)
        logging.getLogger("ember.dynamo").debug("x")
        get_artifact_logger("ember.dynamo", "graph_code").debug("y")
    finally:
        logging.getLogger().removeHandler(spy)
    assert root_seen == []
