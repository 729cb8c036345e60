#!/usr/bin/env bash
# The bundled vectors (crates/core/src/embed/bundle.rs): int8 embeddings of the bundled vocabularies,
# computed natively by `dpkps embed-vocab` with the app's model, so that the page reads them
# instead of running the model. They depend only on public inputs, listed below; the result is
# cached in target/vectors/<hash of the inputs>/, so a warm run costs nothing.
#
#   scripts/vectors.sh          makes sure they exist; prints the cache folder (last line)
#   as trunk's build hook       (Trunk.toml) also copies them into $TRUNK_STAGING_DIR/vectors/
#
# DPKPS_BIN: a built `dpkps` to use (else `cargo build --bin dpkps`, the dev profile).
# Measured here (2 shared cores): medical 27,589 terms in ~2 min, the English head in ~2.5 min.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$DPKPS_ROOT"

# The English list is ordered by frequency: its first ENGLISH_HEAD terms are shipped, the rest
# is embedded live when a corpus matches it (README, "Bundled vectors": why this many).
ENGLISH_HEAD=50000
inputs=(models/all-MiniLM-L6-v2.int8w.onnx models/tokenizer.json
        www/vocab/medical_mesh2017.txt www/vocab/stoplist_medical.txt
        www/vocab/english_glove6b.txt www/vocab/stoplist_english.txt
        crates/core/src/embed/*.rs src/cli/vectors.rs crates/core/src/input/public_vocab.rs crates/core/src/input/text.rs Cargo.lock scripts/vectors.sh)
# Every source file of the embedding crate, in whatever folder: each can change a vector's bits.
# (A command substitution, not `< <(…)`: a failing `find` then stops the script under set -e.)
embed_sources=$(find crates/embed/src -name '*.rs' | LC_ALL=C sort)
mapfile -t embed_sources <<< "$embed_sources"
inputs+=("${embed_sources[@]}")
key=$({ sha256sum "${inputs[@]}"; echo "english head $ENGLISH_HEAD"; } | sha256sum | cut -c1-16)
cache=target/vectors/$key
mkdir -p target/vectors
exec 9>target/vectors/.lock
flock 9   # one generator at a time (a test and a trunk build may both ask)
if [[ ! -f $cache/SHA256SUMS ]]; then
  t0=$SECONDS
  bin=${DPKPS_BIN:-}
  if [[ -z $bin ]]; then
    cargo build --locked --bin dpkps >&2
    bin=${CARGO_TARGET_DIR:-target}/debug/dpkps
  fi
  rm -rf "$cache.tmp"
  mkdir -p "$cache.tmp"
  "$bin" embed-vocab --vocabulary medical --out "$cache.tmp/medical_mesh2017.vec" >&2
  "$bin" embed-vocab --vocabulary english --head "$ENGLISH_HEAD" --out "$cache.tmp/english_glove6b.vec" >&2
  (cd "$cache.tmp" && sha256sum ./*.vec > SHA256SUMS)
  mv "$cache.tmp" "$cache"
  # Older generations are of no further use.
  find target/vectors -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
  echo "bundled vectors generated in $((SECONDS - t0)) s: $cache" >&2
fi
if [[ -n ${TRUNK_STAGING_DIR:-} ]]; then
  mkdir -p "$TRUNK_STAGING_DIR/vectors"
  cp "$cache"/*.vec "$cache/SHA256SUMS" "$TRUNK_STAGING_DIR/vectors/"
fi
echo "$DPKPS_ROOT/$cache"
