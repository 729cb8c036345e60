#!/usr/bin/env bash
# Serves the app with its bundled model and vocabularies on http://127.0.0.1:8080
# (installs what is missing, builds the release bundle into dist/ if needed).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$DPKPS_ROOT"
scripts/setup.sh
echo "==> serving on http://127.0.0.1:8080 (Ctrl-C to stop)"
exec trunk serve --release --config Trunk.toml
