#!/usr/bin/env bash
# Benchmarks: they print figures; nothing here passes or fails on speed.
#   scripts/bench.sh [CORPUS.csv TEXT_COLUMN]   native: matching, embeddings, DP-KDE + sampling
#   scripts/bench.sh --wasm                      in headless Chromium (simd128): embeddings in the
#                                                app's worker (release build), then DP-KDE + sampling
#   scripts/bench.sh --pipeline                  in headless Chromium: MTSamples × 12 (≈ 60,000 notes)
#                                                through the page, Run → results per stage, per
#                                                sampler and vocabulary (release build)
#   scripts/bench.sh --ort [TERMS [THREADS]]     the yardstick of issue 5: the same model and terms
#                                                under onnxruntime, one thread (needs PyPI once:
#                                                a venv in target/ort-venv)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$DPKPS_ROOT"
if [[ ${1:-} == --ort ]]; then
  venv=target/ort-venv
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q onnxruntime==1.31.1 tokenizers==0.23.3 numpy
  "$venv/bin/python" scripts/bench_ort.py "${2:-512}" "${3:-1}"
  exit
fi
if [[ ${1:-} == --pipeline ]]; then
  scripts/setup.sh >/dev/null
  [[ -f dist/index.html ]] || trunk build --release --config Trunk.toml
  node tests/e2e/bench_pipeline.mjs
  exit
fi
if [[ ${1:-} == --wasm ]]; then
  scripts/setup.sh >/dev/null
  [[ -f dist/index.html ]] || trunk build --release --config Trunk.toml
  node tests/e2e/bench.mjs
  WASM_BINDGEN_TEST_TIMEOUT=1200 cargo test --release --target wasm32-unknown-unknown --no-default-features --test web_bench -- --include-ignored --nocapture
  exit
fi
cargo build --release --locked
if [[ $# -ge 2 ]]; then
  target/release/dpkps bench match --corpus "$1" --text-col "$2"
fi
target/release/dpkps bench embed
target/release/dpkps bench kde
