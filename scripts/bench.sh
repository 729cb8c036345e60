#!/usr/bin/env bash
# Benchmarks: they print figures; nothing here passes or fails on speed.
#   scripts/bench.sh [CORPUS.csv TEXT_COLUMN]   native: matching, embeddings, DP-KDE + sampling
#   scripts/bench.sh --wasm                      the same core in headless Chromium (simd128)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$DPKPS_ROOT"
if [[ ${1:-} == --wasm ]]; then
  scripts/setup.sh >/dev/null
  WASM_BINDGEN_TEST_TIMEOUT=1200 cargo test --release --target wasm32-unknown-unknown --test web_bench -- --include-ignored --nocapture
  exit
fi
cargo build --release --locked
if [[ $# -ge 2 ]]; then
  target/release/dpkps bench match --corpus "$1" --text-col "$2"
fi
target/release/dpkps bench embed
target/release/dpkps bench kde
