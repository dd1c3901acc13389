"""Fuzzing kept in the project: mutated examples, --set and --grid values and
Python API calls get a clean error or a scenario the engine accepts — never a
traceback or a panic. Bounded for CI (about a minute); bench/fuzz.py runs the
same property for as long as it is given, and runs the simulator too."""

from hypothesis import HealthCheck, given, settings

from mutations import (api_calls, axes, check_api_calls, check_scenario_input, mutated_document, mutated_text, overrides,
                       tweaked_document)

FAST = settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                         HealthCheck.function_scoped_fixture])


@FAST
@given(mutated_document())
def test_mutated_documents(doc):
    _, data = doc
    check_scenario_input(data)


@FAST
@given(tweaked_document())
def test_tweaked_documents(doc):
    _, data = doc
    check_scenario_input(data)


@FAST
@given(mutated_text())
def test_mutated_files_through_the_reader(tmp_path, doc):
    _, text = doc
    check_scenario_input(text=text, tmp=tmp_path)


@FAST
@given(mutated_document(), overrides(), axes())
def test_set_and_grid_on_mutated_documents(doc, set_, grid):
    _, data = doc
    check_scenario_input(data, set_=set_, grid=grid)


@FAST
@given(api_calls())
def test_python_api_calls(calls):
    check_api_calls(calls)
