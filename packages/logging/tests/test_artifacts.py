import logging

import pytest

import ember.logs
from ember.logs import get_artifact_logger, set_logs


class CountsStr:
    def __init__(self):
        self.calls = 0

    def __str__(self):
        self.calls += 1
        return "<graph>"


def test_an_off_artifact_never_formats_its_message(capsys):
    log = get_artifact_logger("ember.dynamo.convert", "graph_code")
    arg = CountsStr()
    log.debug("graph %s", arg)
    log.info("graph %s", arg)
    assert arg.calls == 0
    assert not log.isEnabledFor(logging.DEBUG)
    set_logs(graph_code=True)
    log.debug("graph %s", arg)
    assert arg.calls == 1
    assert "[graph_code] graph <graph>" in capsys.readouterr().err


def test_artifact_shows_with_debug_component_unless_off_by_default(capsys):
    guards = get_artifact_logger("ember.dynamo.guards", "guards")
    bytecode = get_artifact_logger("ember.dynamo.convert", "bytecode")
    assert registry_flag("bytecode") and not registry_flag("guards")
    set_logs(dynamo=logging.DEBUG)
    arg = CountsStr()
    guards.debug("guard %s", "x.shape[0] == 3")
    bytecode.debug("bytecode %s", arg)
    err = capsys.readouterr().err
    assert "[guards] guard x.shape[0] == 3" in err
    assert "bytecode" not in err and arg.calls == 0
    set_logs(dynamo=logging.INFO)
    guards.debug("hidden")
    assert capsys.readouterr().err == ""
    set_logs(bytecode=True)
    bytecode.debug("now %s", "visible")
    assert "[bytecode] now visible" in capsys.readouterr().err


def registry_flag(name):
    return ember.logs.registry.artifacts[name].off_by_default


def test_artifact_on_shows_even_when_its_component_is_quiet(capsys):
    log = get_artifact_logger("ember.inductor.codegen", "output_code")
    set_logs(inductor=logging.ERROR, output_code=True)
    log.debug("kernel")
    assert "[D" in capsys.readouterr().err


def test_artifact_logger_made_before_settings_is_reconfigured(capsys):
    log = get_artifact_logger("ember.fx.passes", "graph")
    log.debug("first")
    set_logs(spec="graph")
    log.debug("second")
    set_logs()
    log.debug("third")
    err = capsys.readouterr().err
    assert "first" not in err and "second" in err and "third" not in err


def test_same_logger_for_same_module_and_artifact():
    assert get_artifact_logger("ember.a.b", "guards") is get_artifact_logger("ember.a.b", "guards")
    assert get_artifact_logger("ember.a.b", "guards") is not get_artifact_logger("ember.a.b", "graph")


def test_unknown_artifact_raises_with_suggestion():
    with pytest.raises(ValueError, match="did you mean recompiles"):
        get_artifact_logger(__name__, "recompile")


def test_records_go_to_one_place_only(capsys):
    set_logs(dynamo=logging.DEBUG, guards=True)
    get_artifact_logger("ember.dynamo.x", "guards").debug("once")
    logging.getLogger("ember.dynamo.x").info("also once")
    err = capsys.readouterr().err
    assert err.count("once") == 2 and err.count("also once") == 1


def test_user_handlers_are_left_alone():
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    logger = logging.getLogger("ember.nn")
    handler = Keep()
    logger.addHandler(handler)
    try:
        set_logs(nn=logging.INFO)
        set_logs()
        logger.warning("kept")
        assert seen == ["kept"]
    finally:
        logger.removeHandler(handler)
