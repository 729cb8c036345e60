#!/usr/bin/env bash
# Serves the app with its bundled model and vocabularies on http://127.0.0.1:8080
# (installs what is missing, builds the release bundle into dist/ if needed). The server
# (scripts/serve.py) sends the page's Content-Security-Policy, built from
# dist/allowed-endpoints.txt, as an HTTP header on every response.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$DPKPS_ROOT"
scripts/setup.sh
trunk build --release --config Trunk.toml
echo "==> serving dist/ on http://127.0.0.1:8080 (Ctrl-C to stop)"
exec python3 scripts/serve.py --dir dist --host 127.0.0.1 --port 8080
