#!/usr/bin/env bash
# Fuzz netbraid proxy's SOCKS5 parsers for MINUTES (default 5) with SEED
# (default: random); new inputs join bench/proxy-fuzz-corpus/ (kept in git and
# replayed by `cargo test -p netbraid-proxy`); exit 1 on a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --release -p netbraid-proxy --example fuzz_socks5 -- \
  bench/proxy-fuzz-corpus "${1:-5}" "${2:-$RANDOM$RANDOM}"
