#!/usr/bin/env python3
"""Serves a built bundle (dist/) with the page's Content-Security-Policy as an HTTP header.

    python3 scripts/serve.py [--dir dist] [--host 127.0.0.1] [--port 8080] [--prefix /tools/dpkps/]

Used by scripts/serve.sh and by the browser tests (tests/e2e/harness.mjs). At start it runs
scripts/csp.py on the folder (so an edited allowed-endpoints.txt takes effect), then sends the
policy on every response: the page's <meta> policy covers the page, the header also covers
the Web Worker and its helper workers, whose scripts are loaded from here (a worker takes
its policy from its own script's response, not from the page). Prints
`listening http://HOST:PORT/` once it accepts connections (port 0: a free one).
Standard library only; GET and HEAD of files, no directory listings.

--prefix serves the bundle under a path, as an intranet server would (`/tools/dpkps/`): the
page and its assets exist only below it (everything else is 404), and the prefix without its
trailing slash redirects to it, so that the page's relative URLs resolve below the prefix.
The browser tests run the curator's flow this way (tests/e2e/app.mjs).
"""
import argparse
import http.server
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csp  # noqa: E402  (scripts/csp.py)

TYPES = {
    ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".wasm": "application/wasm",
    ".css": "text/css", ".json": "application/json", ".txt": "text/plain; charset=utf-8",
    ".svg": "image/svg+xml", ".onnx": "application/octet-stream", ".md": "text/plain; charset=utf-8",
}


def normalise_prefix(prefix):
    """`tools/dpkps` → `/tools/dpkps/`; `/` for no prefix. Refuses `..` and odd characters."""
    parts = [p for p in prefix.split("/") if p]
    for p in parts:
        if p in (".", "..") or not all(c.isalnum() or c in "-_.~" for c in p):
            raise ValueError(f"--prefix {prefix!r}: use plain path segments, e.g. /tools/dpkps/")
    return "/" + "".join(p + "/" for p in parts)


def handler(root, policy, prefix="/"):
    extra = {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
        # The policy and the allowlist may change between visits: always revalidate.
        "Cache-Control": "no-cache",
    }

    class Handler(http.server.SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **TYPES, "": "application/octet-stream"}

        def __init__(self, *a, **kw):
            super().__init__(*a, directory=root, **kw)

        def end_headers(self):
            for k, v in extra.items():
                self.send_header(k, v)
            super().end_headers()

        def _under_prefix(self):
            """Strips the prefix from self.path; False (after answering) when it is not under it."""
            if prefix == "/":
                return True
            path = self.path.split("?", 1)[0]
            if path == prefix[:-1]:
                self.send_response(301)
                self.send_header("Location", prefix)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return False
            if not self.path.startswith(prefix):
                self.send_error(404, "not found")
                return False
            self.path = "/" + self.path[len(prefix):]
            return True

        def do_GET(self):
            if self._under_prefix():
                super().do_GET()

        def do_HEAD(self):
            if self._under_prefix():
                super().do_HEAD()

        def list_directory(self, path):
            self.send_error(404, "not found")
            return None

        def log_message(self, fmt, *args):
            if os.environ.get("DPKPS_SERVE_LOG"):
                super().log_message(fmt, *args)

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="dist")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--prefix", default="/", help="serve the bundle under this path, e.g. /tools/dpkps/")
    a = ap.parse_args()
    try:
        prefix = normalise_prefix(a.prefix)
    except ValueError as e:
        sys.exit(f"serve.py: {e}")
    root = os.path.abspath(a.dir)
    if not os.path.isfile(os.path.join(root, "index.html")):
        sys.exit(f"serve.py: {root}/index.html is missing: build it first (trunk build --release)")
    try:
        policy = csp.apply(root)
    except (csp.CspError, OSError) as e:
        sys.exit(f"serve.py: {e}")
    server = http.server.ThreadingHTTPServer((a.host, a.port), handler(root, policy, prefix))
    server.daemon_threads = True
    host, port = server.server_address[:2]
    print(f"listening http://{host}:{port}{prefix}", flush=True)
    print(f"Content-Security-Policy: {policy}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
