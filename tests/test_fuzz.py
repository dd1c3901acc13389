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


def test_fuzz_corpus_survives_a_run_cut_off_mid_write(tmp_path):
    """bench/fuzz.py keeps what it learns in a gzip file it appends to; a
    run stopped mid-write leaves a cut-off member, after which a plain
    gzip reader fails: the fuzzer must still read every whole entry before
    and after it (the committed corpus once had one, and the fuzzer would
    not start)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("fuzz", Path(__file__).parent.parent / "bench" / "fuzz.py")
    fuzz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz)
    corpus = tmp_path / "corpus.jsonl.gz"
    entries = [{"kind": "document", "input": {"n": i}, "outcome": "x" * (i % 7), "shapes": [f"s{i}"]} for i in range(300)]
    for doc in entries[:100]:
        fuzz.append_to_corpus(corpus, doc)
    for doc in entries[100:199]:  # a run that is stopped while writing its last entry
        fuzz.append_to_corpus(corpus, doc)
    before = corpus.stat().st_size
    fuzz.append_to_corpus(corpus, entries[199])
    data = corpus.read_bytes()
    corpus.write_bytes(data[:before + (len(data) - before) // 2])
    for doc in entries[200:]:  # the next run appends
        fuzz.append_to_corpus(corpus, doc)
    docs, lost = fuzz.read_corpus(corpus)
    assert lost > 0
    assert docs == entries[:199] + entries[200:]
    fuzz.compact_corpus(corpus)  # what a run that ends normally does
    assert fuzz.read_corpus(corpus) == (entries[:199] + entries[200:], 0)
