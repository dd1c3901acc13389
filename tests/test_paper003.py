"""`netbraid paper 003 --quick`: runs in well under two minutes, writes its
tables, and reproduces the paper where the model agrees (docs/papers/003.md)."""

import csv
import subprocess

import pytest


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("p003")
    r = subprocess.run(["netbraid", "paper", "003", "--quick", "--out", str(out), "-q"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    with (out / "comparison.csv").open() as f:
        rows = {(row["config"], row["metric"]): row for row in csv.DictReader(f)}
    return out, r.stdout, rows


def mean(rows, config, metric):
    return float(rows[(config, metric)]["netbraid_mean"])


def test_tables_and_plots_are_written(quick):
    out, stdout, _ = quick
    for name in ("tables.md", "comparison.csv", "homogeneous.png", "homogeneous.svg", "heterogeneous.png"):
        assert (out / name).stat().st_size > 0
    for table in ("3.1", "3.2", "3.3", "3.4", "3.5"):
        assert f"Table {table}" in stdout


def test_tcp_rates_match_the_paper(quick):
    # Tables 3.1 and 3.3 within the issue's ±10 %: TCP throughput and goodput
    # are steady even in 3 × 30 s. UDP throughput (a few bursty sources)
    # needs the full run, whose agreement is recorded in docs/papers/003.md.
    _, _, rows = quick
    for (config, metric), row in rows.items():
        if metric in ("tcp_thr", "tcp_good"):
            assert abs(float(row["relative_difference"])) <= 0.10, (config, metric)


def test_loss_within_a_factor_1_5_of_the_paper(quick):
    _, _, rows = quick
    for (config, metric), row in rows.items():
        if metric in ("tcp_loss", "udp_loss"):
            low, high = float(row["paper_low"]), float(row["paper_high"])
            ratio = float(row["netbraid_mean"]) / ((low + high) / 2)
            assert 1 / 1.5 <= ratio <= 1.5, (config, metric, ratio)


def test_loss_follows_the_papers_orderings(quick):
    _, _, rows = quick
    for metric in ("tcp_loss", "udp_loss"):
        by_d = [mean(rows, f"d={d}", metric) for d in (1, 2, 3, 4)]
        assert by_d == sorted(by_d, reverse=True), (metric, by_d)  # falls as d grows
    # the more unequal split loses more at the same d
    for even, uneven in (("12,8", "15,5"), ("15,10,5", "20,7,3"), ("15,10,10,5", "20,10,7,3")):
        assert mean(rows, uneven, "tcp_loss") > mean(rows, even, "tcp_loss")
