"""Units: parsing and the dump → parse round trip (property-based)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import netbraid as nb
from netbraid import units


@given(st.integers(min_value=1, max_value=10**6))
def test_rates_are_decimal(n):
    assert units.parse_rate(f"{n}Mbps") == n * 10**6
    assert units.parse_rate(f"{n}kbps") == n * 10**3
    assert units.parse_rate(f"{n % 10_000 + 1} Gb/s") == (n % 10_000 + 1) * 10**9  # up to the 10 Tb/s limit


@given(st.integers(min_value=1, max_value=10**6))
def test_tc_spellings_are_the_same_bits_per_second(n):
    # tc writes "10mbit" for 10^7 bit/s (tc's own "mbps" is bytes per second; here Mbps is bits, as docs/scenario.md says)
    assert units.parse_rate(f"{n}mbit") == units.parse_rate(f"{n}Mbit") == n * 10**6
    assert units.parse_rate(f"{n}kbit") == n * 10**3


def test_rates_above_the_limit_and_byte_rates_are_refused():
    with pytest.raises(ValueError, match="too large"):
        units.parse_rate("20000Gbps")
    with pytest.raises(ValueError, match="bits per second, not bytes"):
        units.parse_rate("10MB/s")


@given(st.integers(min_value=0, max_value=10**6))
def test_sizes_are_binary_like_iperf(n):
    assert units.parse_size(f"{n}KB") == n * 1024
    assert units.parse_size(f"{n}MiB") == n * 1024**2
    assert units.parse_size(n) == n


@given(st.integers(min_value=0, max_value=10**15))
def test_times_round_trip_through_nanoseconds(ns):
    assert units.parse_time(f"{ns}ns") == ns
    assert units.parse_time(f"{ns / 1e9!r}s") == pytest.approx(ns, abs=1)


@given(st.integers(min_value=1, max_value=10**12), st.integers(min_value=0, max_value=10**12),
       st.integers(min_value=1, max_value=10**6))
def test_a_dumped_scenario_validates_to_the_same_values(rate, delay, queue):
    s = nb.Scenario(name="rt", duration="1s")
    s.add_host("a").add_host("b").add_link("a", "b", rate=f"{rate}bps", delay=f"{delay}ns", queue=queue)
    s.add_flow("f", "a", "b")
    again = nb.Scenario.model_validate(s.model_dump(mode="json", by_alias=True, exclude_none=True))
    assert nb.resolve(again) == nb.resolve(s)


@pytest.mark.parametrize("bad", ["10", "10 Mbsp", "fast", "-5Mbps", "0Mbps", "", True])
def test_bad_rates_say_what_is_allowed(bad):
    with pytest.raises(ValueError, match="Mbps|positive|negative|rate"):
        units.parse_rate(bad)
