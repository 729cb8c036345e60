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

Hardening (tests/serve_test.py):
- Redirects (a folder asked for without its trailing slash) always name a path on this server
  under the prefix: a request path such as `/tools/dpkps//evil.example/x` must not become a
  `Location: //evil.example/x/`, which a browser reads as another host (an open redirect).
- Only requests whose Host header names this server are answered (421 otherwise): a web page
  elsewhere could point its own host name at 127.0.0.1 (DNS rebinding) and read the files.
  The names accepted are the --host address, `localhost`/`127.0.0.1`/`[::1]` when bound to
  loopback, and each --allow-host NAME, at the port served.
- A connection that sends nothing for --timeout seconds (30) is closed, so that a few slow
  clients cannot hold every thread.
- Files are served only if they are inside --dir once symbolic links are resolved.
- Binding to an address other than loopback prints a warning: over plain http from another
  address the page is not a secure context, so the browser gives it no Web Locks and the
  privacy ledger refuses to run (serve it over https there, e.g. behind a reverse proxy).
"""
import argparse
import http.server
import ipaddress
import os
import socket
import sys
import urllib.parse

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


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def is_loopback(host):
    """Whether `host` (a --host value) is this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_unspecified(host):
    """Whether `host` means every address of this machine (0.0.0.0, ::)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def allowed_hosts(host, port, extra=()):
    """The `name:port` values of the Host header this server answers (lowercase)."""
    bound = f"[{host}]" if ":" in host and not host.startswith("[") else host
    names = {bound.lower(), *(n.lower().rstrip(".") for n in extra)}
    if is_loopback(host) or is_unspecified(host):
        names.update(LOOPBACK_NAMES)
    if is_unspecified(host):
        # Every address of this machine: its own names too.
        names.update(n.lower() for n in (socket.gethostname(), socket.getfqdn()) if n)
    return {f"{n}:{port}" for n in names}


def host_of(header):
    """The Host header as `name:port` (port 80 when it has none), lowercase; None if absent."""
    if not header:
        return None
    h = header.strip().lower()
    name, _, port = h.rpartition(":") if not h.endswith("]") else (h, "", "")
    if not name or not port.isdigit():
        name, port = h, "80"
    return f"{name.rstrip('.')}:{int(port)}"


def handler(root, policy, prefix="/", hosts=None, timeout=30):
    """The request handler: `hosts` are the Host values answered (None: any, for tests of
    other things); `timeout` the seconds a connection may stay silent."""
    real_root = os.path.realpath(root)
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

        def setup(self):
            # StreamRequestHandler applies `self.timeout` to the socket: every read and write.
            self.timeout = timeout
            super().setup()

        def end_headers(self):
            for k, v in extra.items():
                self.send_header(k, v)
            super().end_headers()

        def _host_ok(self):
            """False (after answering 421) when the Host header does not name this server."""
            if hosts is None or host_of(self.headers.get("Host")) in hosts:
                return True
            self.send_error(421, "unknown host", f"this server answers only for {', '.join(sorted(hosts))}")
            return False

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
            # One leading slash, whatever followed the prefix: `//host/x` would be read as a
            # network-path reference by what comes next (urlsplit, a Location header).
            self.path = "/" + self.path[len(prefix):].lstrip("/")
            return True

        def send_head(self):
            path = self.translate_path(self.path)
            inside = lambda p: (lambda r: r == real_root or r.startswith(real_root + os.sep))(os.path.realpath(p))
            # The file actually opened is checked too: for a folder the standard library opens
            # its index.html, which may be a link out of the served folder.
            index = os.path.join(path, "index.html")
            if not inside(path) or (os.path.isdir(path) and os.path.exists(index) and not inside(index)):
                self.send_error(404, "not found")
                return None
            url_path = self.path.split("?", 1)[0].split("#", 1)[0]
            if os.path.isdir(path) and not url_path.endswith("/"):
                # The folder's URL with its slash, as a path under the prefix (the standard
                # library's redirect would drop the prefix and keep a `//host` start), with any
                # byte a browser could read as another host (`\`) percent-encoded.
                self.send_response(301)
                location = urllib.parse.quote(prefix + url_path.lstrip("/") + "/", safe="/%-._~!$&'()*+,;=:@")
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            return super().send_head()

        def do_GET(self):
            if self._host_ok() and self._under_prefix():
                super().do_GET()

        def do_HEAD(self):
            if self._host_ok() and self._under_prefix():
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
    ap.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                    help="also answer requests for this host name (repeatable), e.g. the name a LAN uses for this machine")
    ap.add_argument("--timeout", type=float, default=30, help="seconds a connection may stay silent (default 30)")
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
    # The port is known once bound (port 0: a free one); the handler reads `hosts` per request.
    hosts = set()
    server = http.server.ThreadingHTTPServer((a.host, a.port), handler(root, policy, prefix, hosts, a.timeout))
    server.daemon_threads = True
    host, port = server.server_address[:2]
    hosts.update(allowed_hosts(a.host, port, a.allow_host))
    if not is_loopback(a.host):
        print(f"serve.py: warning: serving over plain http on {a.host}, not loopback. From another machine the page "
              "is not a secure context: the browser gives it no Web Locks, so the privacy ledger refuses to run. "
              "Serve it over https there (e.g. behind a reverse proxy). Requests are answered for "
              f"{', '.join(sorted(hosts))}; --allow-host NAME adds a name it is reached by.",
              file=sys.stderr, flush=True)
    print(f"listening http://{host}:{port}{prefix}", flush=True)
    print(f"Content-Security-Policy: {policy}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
