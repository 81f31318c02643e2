import logging

import pytest

import ember.logs
from ember.logs import registry, set_logs


def level_of(qname: str) -> int:
    return logging.getLogger(qname).getEffectiveLevel()


def test_defaults_are_warning_everywhere():
    for qname in registry.component_loggers():
        assert level_of(qname) == logging.WARNING
        assert level_of(qname + ".some.module") == logging.WARNING
    assert ember.logs.get_settings().artifacts == set()


def test_component_levels_reach_every_logger_of_the_component():
    set_logs(core=logging.DEBUG, inductor="error")
    for qname in registry.components["core"].loggers:
        assert level_of(qname + ".x") == logging.DEBUG
    assert level_of("ember.inductor.codegen") == logging.ERROR
    assert level_of("ember.dynamo") == logging.WARNING


def test_each_call_replaces_the_previous_settings():
    set_logs(dynamo=logging.DEBUG, guards=True, modules={"ember.fx.passes": logging.INFO})
    assert level_of("ember.dynamo") == logging.DEBUG and ember.logs.is_artifact_enabled("guards")
    set_logs(inductor=logging.INFO)
    assert level_of("ember.dynamo") == logging.WARNING
    assert level_of("ember.fx.passes") == logging.WARNING
    assert not ember.logs.is_artifact_enabled("guards")
    assert level_of("ember.inductor") == logging.INFO
    set_logs()
    assert level_of("ember.inductor") == logging.WARNING


def test_all_sets_every_component_and_named_ones_win():
    set_logs(all=logging.DEBUG, inductor=logging.ERROR)
    assert level_of("ember.dynamo") == logging.DEBUG
    assert level_of("ember.cuda") == logging.DEBUG
    assert level_of("ember.inductor") == logging.ERROR


def test_spec_keyword_takes_the_env_grammar_and_keywords_refine_it():
    set_logs(spec="+dynamo,graph_code,guards", guards=False, fx=logging.INFO)
    assert level_of("ember.dynamo") == logging.DEBUG
    assert level_of("ember.fx") == logging.INFO
    assert ember.logs.get_settings().artifacts == {"graph_code"}


def test_modules_set_single_loggers():
    set_logs(modules={"ember.inductor.codegen": logging.DEBUG})
    assert level_of("ember.inductor.codegen.cpp") == logging.DEBUG
    assert level_of("ember.inductor.scheduler") == logging.WARNING


def test_none_means_unset():
    set_logs(dynamo=None, all=None, graph_code=False)
    assert level_of("ember.dynamo") == logging.WARNING


def test_spec_help_prints_every_name(capsys):
    set_logs(spec="help")
    err = capsys.readouterr().err
    for name, component in registry.components.items():
        assert name in err and component.description in err
    for name, artifact in registry.artifacts.items():
        assert name in err and artifact.description in err


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"dynamoo": logging.DEBUG}, "unknown log name 'dynamoo'; did you mean dynamo"),
        ({"graph_cod": True}, "did you mean graph_code"),
        ({"graph_code": 1}, "on or off"),
        ({"dynamo": True}, "not a log level"),
        ({"dynamo": 17}, "not a log level"),
        ({"dynamo": "loud"}, "not a log level"),
        ({"all": "verbose"}, "not a log level"),
        ({"modules": {"nope.module": logging.DEBUG}}, "not under any registered component"),
        ({"modules": {"ember..x": logging.DEBUG}}, "not a dotted module name"),
        ({"spec": "+dynamo,bogus"}, "unknown log name 'bogus'"),
    ],
)
def test_bad_settings_raise_value_error(kwargs, fragment):
    set_logs(dynamo=logging.INFO)
    with pytest.raises(ValueError, match=fragment):
        set_logs(**kwargs)
    # a refused call changes nothing
    assert level_of("ember.dynamo") == logging.INFO


def test_wrong_types_raise_type_error():
    with pytest.raises(TypeError, match="spec"):
        set_logs(spec=3)
    with pytest.raises(TypeError, match="modules"):
        set_logs(modules=["ember.fx"])


def test_registration_checks_names():
    with pytest.raises(ValueError, match="reserved"):
        ember.logs.register_component("all", "x", ["ember.x"])
    with pytest.raises(ValueError, match="identifier"):
        ember.logs.register_artifact("two words", "x")
    with pytest.raises(ValueError, match="already an artifact"):
        ember.logs.register_component("graph_code", "x", ["ember.gc"])
    with pytest.raises(ValueError, match="registered differently"):
        ember.logs.register_component("dynamo", "another description", ["ember.dynamo"])
    with pytest.raises(ValueError, match="at least one logger"):
        ember.logs.register_component("lonely", "x", [])
    # registering the same thing twice is harmless
    dynamo = registry.components["dynamo"]
    ember.logs.register_component("dynamo", dynamo.description, list(dynamo.loggers))


def test_a_component_registered_later_follows_the_current_settings(capsys):
    set_logs(all=logging.DEBUG)
    ember.logs.register_component("test_late", "registered by a test", ["ember_test_late"])
    assert level_of("ember_test_late") == logging.DEBUG
    logging.getLogger("ember_test_late.sub").debug("late hello")
    assert "ember_test_late" in capsys.readouterr().err
    set_logs(test_late=logging.ERROR)
    assert level_of("ember_test_late") == logging.ERROR
