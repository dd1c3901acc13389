"""Fuzzing kept in the project: mutated examples, --set and --grid values and
Python API calls get a clean error or a scenario the engine accepts — never a
traceback or a panic. Bounded for CI (about a minute); bench/fuzz.py runs the
same property for as long as it is given, and runs the simulator too."""

import pytest
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


def _fuzz_module():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("fuzz", Path(__file__).parent.parent / "bench" / "fuzz.py")
    fuzz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz)
    return fuzz


def _entries(n, start=0):
    import random

    rng = random.Random(start)
    words = ["flows[0].rate", "must be", "a rate", "got", "'x'", "links.r1-r2", "at most", "10Gbps", "–", "é"]
    return [{"kind": "document", "input": {"n": i}, "outcome": " ".join(rng.choices(words, k=rng.randrange(1, 300))),
             "shapes": [f"s{i}"]} for i in range(start, start + n)]


@pytest.mark.parametrize("after", [1, 2, 100])
@pytest.mark.parametrize("compacted", [False, True])
def test_fuzz_corpus_survives_a_run_cut_off_mid_write(tmp_path, after, compacted):
    """bench/fuzz.py keeps what it learns in a gzip file it appends to; a
    run stopped mid-write leaves a cut-off member, after which a plain
    gzip reader fails: the fuzzer must still read every whole entry before
    and after it (the committed corpus once had one, and the fuzzer would
    not start), and nothing else. The cut falls inside the last entry
    written one at a time, or inside a corpus compacted into one member."""
    fuzz = _fuzz_module()
    corpus = tmp_path / "corpus.jsonl.gz"
    entries = _entries(200)
    for doc in entries[:100]:
        fuzz.append_to_corpus(corpus, doc)
    if compacted:
        fuzz.compact_corpus(corpus)
    for doc in entries[100:199]:
        fuzz.append_to_corpus(corpus, doc)
    if compacted:  # one member holds all 199; the cut loses those after its point
        fuzz.compact_corpus(corpus)
        before = 0
    else:
        before = corpus.stat().st_size
        fuzz.append_to_corpus(corpus, entries[199])
    data = corpus.read_bytes()
    corpus.write_bytes(data[:before + (len(data) - before) // 2])
    later = _entries(after, start=1000)
    for doc in later:  # the next run appends
        fuzz.append_to_corpus(corpus, doc)
    docs, lost = fuzz.read_corpus(corpus)
    assert lost > 0
    kept = docs[: len(docs) - after]
    assert docs[len(docs) - after:] == later
    assert kept == entries[: len(kept)]  # whole entries from before the cut, in order, nothing invented
    assert len(kept) >= (199 if not compacted else 50)
    fuzz.compact_corpus(corpus)  # not with something unreadable in it: left for a look
    assert fuzz.read_corpus(corpus) == (docs, lost)
