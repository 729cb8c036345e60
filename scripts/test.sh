#!/usr/bin/env bash
# Runs every test: native unit and integration tests, the core's tests compiled to wasm32 in
# headless Chromium, and end-to-end browser tests of the built app. Installs what is missing.
set -euo pipefail
# Nothing here reads the terminal; cargo's target probe (`rustc -`) reads stdin, so a stdin
# that carries stray text (a pipe another process wrote to) would break the wasm32 build.
exec </dev/null
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$DPKPS_ROOT"
t0=$SECONDS
lap() { printf '==> %s (%d s so far)\n' "$*" $((SECONDS - t0)); }

scripts/setup.sh

lap "scripts: the static server (tests/serve_test.py) and the pinned tool installs (tests/setup_test.py)"
python3 tests/serve_test.py
python3 tests/setup_test.py

lap "native tests: cargo test"
cargo test --locked

lap "wasm32 tests in headless Chromium: cargo test --target wasm32-unknown-unknown"
# The core without the embedding model (`embed` feature): tract is compiled for wasm32 once,
# by trunk below, and the embedder is tested in the browser through the app's worker
# (tests/e2e/app.mjs: reference-vector check).
WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-300} \
  cargo test --locked --target wasm32-unknown-unknown --no-default-features --test web

lap "release bundle: trunk build --release"
trunk build --release --config Trunk.toml
ls -l dist/*.wasm

lap "end-to-end browser tests"
node tests/e2e/smoke.mjs
node tests/e2e/app.mjs
node tests/e2e/file.mjs

lap "the local LLM: install (node-llama-cpp's prebuilt CPU binary, the pinned model), its server's unit tests, then the app generating through the real model"
scripts/local-llm.sh install
node --test tests/llm/
node tests/e2e/llm_real.mjs

lap "all tests passed"
