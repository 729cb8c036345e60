# Sourced by the other scripts: where the tools live, which Rust route is in use, and a check
# that every tool is present at the pinned version (with how to install it if not).

DPKPS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Pinned tool versions (see README, "Toolchain").
TRUNK_VERSION=0.21.14            # 0.22 needs rustc >= 1.96.1
BINARYEN_VERSION=132.0.0         # npm build; Debian's binaryen 108 breaks wasm-bindgen output
PLAYWRIGHT_VERSION=$(sed -n 's/.*"playwright-core": "\(.*\)".*/\1/p' "$DPKPS_ROOT/tests/e2e/package.json")
# wasm-bindgen-cli must equal the wasm-bindgen crate in Cargo.lock (trunk checks it).
WBG_VERSION=$(awk '/^name = "wasm-bindgen"$/ {getline; gsub(/version = |"/, ""); print; exit}' "$DPKPS_ROOT/Cargo.lock")
TOOLS_ROOT=${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}
export PATH="$TOOLS_ROOT/bin:$PATH"
export TRUNK_SKIP_VERSION_CHECK=true   # trunk must not ask crates.io for updates
export CHROMEDRIVER=${CHROMEDRIVER:-/usr/bin/chromedriver}

# The Debian route (rustc-web + -Zbuild-std), chosen by setup.sh when rustup cannot add the
# wasm32 target, is recorded in .tools/route; these variables select it for every build.
if [[ -f "$DPKPS_ROOT/.tools/route" && $(cat "$DPKPS_ROOT/.tools/route") == debian ]]; then
  export RUSTUP_TOOLCHAIN=debian RUSTC_BOOTSTRAP=1
  export CARGO_UNSTABLE_BUILD_STD=std,panic_abort
  export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=wasm-ld-22
fi

playwright_version() {
  node -p "require('$DPKPS_ROOT/tests/e2e/node_modules/playwright-core/package.json').version" 2>/dev/null || true
}

has_version() { command -v "$1" >/dev/null 2>&1 && "$1" --version 2>/dev/null | grep -qF "$2"; }

# Prints every missing or wrong tool with the command that installs it; fails if any.
check_tools() {
  local bad=0
  need() { # name, expected --version text, install hint
    if ! has_version "$1" "$2"; then
      local got; got=$(command -v "$1" >/dev/null 2>&1 && "$1" --version 2>/dev/null | head -1 || echo "not installed")
      echo "missing tool: $1 (need '$2', found: ${got:-not installed}); install it with: $3" >&2
      bad=1
    fi
  }
  need cargo "cargo" "rustup (https://rustup.rs) or: apt-get install cargo-web rustc-web rust-web-src lld-22"
  if [[ -n ${CARGO_UNSTABLE_BUILD_STD:-} ]]; then
    [[ -d /usr/lib/rustlib/src/rust/library ]] || { echo "missing: Rust std sources for -Zbuild-std; install them with: apt-get install rust-web-src" >&2; bad=1; }
  elif ! rustup target list --installed 2>/dev/null | grep -q '^wasm32-unknown-unknown$'; then
    echo "missing: the Rust standard library for wasm32; install it with: rustup target add wasm32-unknown-unknown (or run scripts/setup.sh)" >&2
    bad=1
  fi
  need wasm-bindgen "wasm-bindgen $WBG_VERSION" "scripts/setup.sh (cargo install --locked wasm-bindgen-cli, see there)"
  need trunk "trunk $TRUNK_VERSION" "cargo install --locked trunk --version $TRUNK_VERSION"
  need wasm-opt "wasm-opt version ${BINARYEN_VERSION%%.*}" "npm install -g --prefix $TOOLS_ROOT binaryen@$BINARYEN_VERSION"
  need chromium "Chromium" "apt-get install chromium"
  need chromedriver "ChromeDriver" "apt-get install chromium-driver"
  need node "v" "apt-get install nodejs npm"
  need python3 "Python 3" "apt-get install python3"
  if [[ $(playwright_version) != "$PLAYWRIGHT_VERSION" ]]; then
    echo "missing: playwright-core $PLAYWRIGHT_VERSION for the browser tests; install it with: (cd tests/e2e && npm ci)" >&2
    bad=1
  fi
  return $bad
}
