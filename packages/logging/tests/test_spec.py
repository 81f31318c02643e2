import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ember.logs import registry
from ember.logs._spec import parse_spec

COMPONENTS = sorted(registry.components)
ARTIFACTS = sorted(registry.artifacts)


def parse(spec):
    return parse_spec(spec, registry)


def test_signs_give_levels():
    s = parse("+dynamo,-inductor,fx")
    assert s.components == {"dynamo": logging.DEBUG, "inductor": logging.ERROR, "fx": logging.INFO}
    assert s.artifacts == set() and s.modules == {} and s.all_level is None


def test_bare_and_plus_artifacts_turn_on():
    assert parse("graph_code,+guards").artifacts == {"graph_code", "guards"}


def test_all_is_a_default_that_named_components_override_wherever_they_stand():
    s = parse("-inductor, +all")
    assert s.all_level == logging.DEBUG
    assert s.component_level("inductor") == logging.ERROR
    assert s.component_level("dynamo") == logging.DEBUG
    assert parse("all").component_level("core") == logging.INFO
    assert parse("-all").component_level("core") == logging.ERROR


def test_qualified_module_names():
    s = parse("+ember.inductor.codegen,-ember.fx.passes.fuse")
    assert s.modules == {"ember.inductor.codegen": logging.DEBUG, "ember.fx.passes.fuse": logging.ERROR}


def test_whitespace_and_empty_spec():
    assert parse("  +dynamo ,\tguards  ").components == {"dynamo": logging.DEBUG}
    assert parse("") == parse("   ")
    assert parse("").components == {}


def test_later_entries_override_earlier():
    assert parse("+dynamo,-dynamo").components == {"dynamo": logging.ERROR}


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("dynamo,,guards", "empty entry"),
        ("dynamo,", "empty entry"),
        ("+", "not a log name"),
        ("++dynamo", "not a log name"),
        ("dyn amo", "not a log name"),
        ("ember..fx", "not a log name"),
        ("-graph_code", "turned on by naming it"),
        ("numpy.linalg", "not under any registered component"),
        ("ember.nothing_here", "not under any registered component"),
    ],
)
def test_bad_specs_raise_value_error_naming_the_problem(spec, fragment):
    with pytest.raises(ValueError, match=fragment):
        parse(spec)


def test_unknown_name_is_named_with_suggestions():
    with pytest.raises(ValueError) as info:
        parse("+dynamo,indcutor")
    message = str(info.value)
    assert "'indcutor'" in message and "did you mean inductor" in message
    with pytest.raises(ValueError, match="did you mean graph_code"):
        parse("grpah_code")
    with pytest.raises(ValueError, match="unknown log name 'zzz'") as info:
        parse("zzz")
    assert "did you mean" not in str(info.value)


entries = st.tuples(st.sampled_from(["+", "-", ""]), st.sampled_from(COMPONENTS))


@given(st.lists(entries, min_size=1, max_size=12), st.lists(st.sampled_from(ARTIFACTS), max_size=4))
def test_each_component_takes_the_level_of_its_last_entry(pairs, artifacts):
    items = [sign + name for sign, name in pairs] + artifacts
    s = parse(",".join(items))
    expected = {}
    for sign, name in pairs:
        expected[name] = {"+": logging.DEBUG, "-": logging.ERROR, "": logging.INFO}[sign]
    assert s.components == expected
    assert s.artifacts == set(artifacts)
