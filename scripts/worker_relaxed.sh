#!/usr/bin/env bash
# The worker again, built with WebAssembly's relaxed SIMD: tract-linalg's matrix kernels then fuse
# each multiply and add (f32x4.relaxed_madd), which makes a document's model call about 1.3–1.8
# times quicker in Chromium (docs/benchmarks.md, "Whole documents in the page"). A module that
# uses relaxed SIMD does not load at all in a browser without it (Safari), so the page ships both
# and starts this one only where `WebAssembly.validate` accepts a relaxed instruction
# (crates/inpage: `WorkerBuild::for_this_browser`; the single file: scripts/single_file.py). If its
# files are missing, the page starts the plain worker instead (crates/web/src/engine.rs).
#
#   scripts/worker_relaxed.sh cargo   the cargo build alone (scripts/test.sh runs it in its wasm
#                                     track, so that trunk's hook finds it done)
#   as trunk's build-stage hook       (Trunk.toml) the cargo build, then wasm-bindgen and wasm-opt
#                                     exactly as trunk runs them for the plain worker (index.html:
#                                     data-type="worker" data-loader-shim, data-wasm-opt="s"), into
#                                     $TRUNK_STAGING_DIR as dpkps-worker-relaxed{.js,_bg.wasm,_loader.js}
#
# Its own target folder (${CARGO_TARGET_DIR:-target}/relaxed-simd): its RUSTFLAGS differ from the
# plain build's, and in one folder each build would throw the other's away.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$DPKPS_ROOT"

NAME=dpkps-worker-relaxed
target_root=${CARGO_TARGET_DIR:-$DPKPS_ROOT/target}
target_dir=$target_root/relaxed-simd
# Trunk passes its profile; a release bundle uses the worker's release profile (index.html).
if [[ ${TRUNK_PROFILE:-release} == release ]]; then profile=wasm-release; else profile=dev; fi

# RUSTFLAGS replaces .cargo/config.toml's rustflags for wasm32 (+simd128), so both are named.
# (CARGO_ENCODED_RUSTFLAGS would win over it: unset.) --offline as trunk's own cargo calls
# (Trunk.toml: offline).
folder=$profile
[[ $profile == dev ]] && folder=debug
wasm=$target_dir/wasm32-unknown-unknown/$folder/dpkps-worker.wasm
env -u CARGO_ENCODED_RUSTFLAGS RUSTFLAGS="-C target-feature=+simd128,+relaxed-simd" CARGO_TARGET_DIR=$target_dir \
  cargo build --locked --offline --target wasm32-unknown-unknown --profile "$profile" \
  --manifest-path crates/worker/Cargo.toml --bin dpkps-worker
# The linker lists the features the module was compiled with in its target_features section.
if ! grep -qa relaxed-simd "$wasm"; then
  echo "worker_relaxed.sh: $wasm was not built with relaxed SIMD (RUSTFLAGS ignored?)" >&2
  exit 1
fi
[[ ${1:-} == cargo ]] && exit 0

stage=${TRUNK_STAGING_DIR:?"run as trunk's hook (Trunk.toml), or with the argument cargo"}
mkdir -p "$target_dir"
out=$(mktemp -d "$target_dir/bindgen.XXXXXX")   # one folder a run: two `trunk serve` rebuilds may overlap
trap 'rm -rf "$out"' EXIT
wasm-bindgen --target=no-modules --out-dir="$out" --out-name="$NAME" --no-typescript \
  "$wasm"
if [[ $profile == wasm-release ]]; then
  wasm-opt --output="$out/opt.wasm" -Os "$out/${NAME}_bg.wasm"
  mv "$out/opt.wasm" "$out/${NAME}_bg.wasm"
fi
cp "$out/$NAME.js" "$out/${NAME}_bg.wasm" "$stage/"
printf 'importScripts("./%s.js");wasm_bindgen("./%s_bg.wasm");' "$NAME" "$NAME" > "$stage/${NAME}_loader.js"
echo "worker_relaxed.sh: $stage/${NAME}_bg.wasm ($(stat -c %s "$stage/${NAME}_bg.wasm") bytes)" >&2
