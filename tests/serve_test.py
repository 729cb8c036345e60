#!/usr/bin/env python3
"""Tests of scripts/serve.py, the static server of scripts/serve.sh and the browser tests:
the redirects it writes, the Host header check, the socket timeout and symbolic links.

    python3 tests/serve_test.py        (scripts/test.sh runs it)

Each test starts the handler on a free loopback port over a throw-away folder and talks raw
HTTP to it, so that the request line and the Host header are exactly what an attacker sends.
"""
import http.client
import http.server
import os
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import serve  # noqa: E402  (scripts/serve.py)
import csp  # noqa: E402  (scripts/csp.py)

PREFIX = "/tools/dpkps/"


class Served:
    """The handler over `root`, on 127.0.0.1 at a free port, in a thread of its own."""

    def __init__(self, root, prefix=PREFIX, timeout=30, check_host=True):
        self.hosts = set()
        self.server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), serve.handler(root, "default-src 'none'", prefix, self.hosts if check_host else None, timeout))
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.hosts.update(serve.allowed_hosts("127.0.0.1", self.port))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def raw(self, request):
        """Sends `request` as it is; the status line and the headers of the answer."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(request.encode())
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:])}
        return head[0], headers

    def get(self, path, host=None):
        host = host if host is not None else f"127.0.0.1:{self.port}"
        return self.raw(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class ServeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.join(self.tmp.name, "dist")
        os.makedirs(os.path.join(self.root, "models"))
        with open(os.path.join(self.root, "index.html"), "w") as f:
            f.write("<!doctype html><title>t</title>")
        with open(os.path.join(self.root, "models", "m.txt"), "w") as f:
            f.write("model")
        with open(os.path.join(self.tmp.name, "secret.txt"), "w") as f:
            f.write("outside dist")
        self.served = []

    def tearDown(self):
        for s in self.served:
            s.close()
        self.tmp.cleanup()

    def serve(self, **kw):
        s = Served(self.root, **kw)
        self.served.append(s)
        return s

    def test_no_redirect_leaves_this_server(self):
        # CVE-2021-28861 again: the standard library collapses a leading `//` before the prefix
        # is stripped; what follows the prefix must not start a network-path reference.
        s = self.serve()
        for path in [PREFIX + "/evil.example/..%2fmodels", PREFIX + "//evil.example/..%2fmodels", PREFIX + "///evil.example/%2e%2e/models"]:
            status, headers = s.get(path)
            location = headers.get("location", "")
            self.assertFalse(location.startswith("//"), f"{path}: {status} Location {location}")
            if location:
                self.assertTrue(location.startswith(PREFIX), f"{path}: {location}")
        # A folder without its slash is redirected to itself under the prefix.
        status, headers = s.get(PREFIX + "models")
        self.assertEqual((status.split()[1], headers.get("location")), ("301", PREFIX + "models/"))
        # Without a prefix too.
        plain = self.serve(prefix="/")
        status, headers = plain.get("//evil.example/..%2fmodels")
        self.assertFalse(headers.get("location", "").startswith("//"), f"{status} {headers.get('location')}")
        self.assertEqual(plain.get("/models")[1].get("location"), "/models/")
        # The prefix without its slash still goes to the prefix.
        self.assertEqual(s.get(PREFIX[:-1])[1].get("location"), PREFIX)

    def test_only_this_servers_host_names_are_answered(self):
        s = self.serve()
        ok = s.get(PREFIX + "models/m.txt")[0]
        self.assertIn(" 200 ", ok)
        for name in ["localhost", "127.0.0.1", "[::1]", "LOCALHOST"]:
            self.assertIn(" 200 ", s.get(PREFIX + "models/m.txt", host=f"{name}:{s.port}")[0], name)
        # DNS rebinding: another site's name pointed at 127.0.0.1; another port; no Host.
        for host in ["evil.example", f"evil.example:{s.port}", f"127.0.0.1:{s.port + 1}", "127.0.0.1"]:
            status, _ = s.get(PREFIX + "models/m.txt", host=host)
            self.assertIn(" 421 ", status, host)
        status, _ = s.raw(f"GET {PREFIX}index.html HTTP/1.0\r\n\r\n")
        self.assertIn(" 421 ", status)
        # Bound to every address: loopback and this machine's own name; named ones added.
        every = serve.allowed_hosts("0.0.0.0", 8080, ["dpkps.lan"])
        for h in ["localhost:8080", "127.0.0.1:8080", f"{socket.gethostname().lower()}:8080", "dpkps.lan:8080"]:
            self.assertIn(h, every)
        self.assertNotIn("evil.example:8080", every)
        self.assertEqual(serve.host_of("LocalHost."), "localhost:80")
        self.assertEqual(serve.host_of("[::1]:9"), "[::1]:9")

    def test_a_silent_connection_is_closed(self):
        # Slowloris: a request line and then nothing. The server closes the connection after
        # its timeout instead of holding a thread for ever.
        s = self.serve(timeout=1)
        with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
            c.sendall(f"GET {PREFIX}index.html HTTP/1.1\r\n".encode())
            t0 = time.monotonic()
            try:
                data = c.recv(4096)
            except socket.timeout:
                self.fail("the server kept a silent connection open for 10 s")
            self.assertLess(time.monotonic() - t0, 5)
            self.assertEqual(data, b"", "closed without an answer")

    def test_symbolic_links_out_of_the_folder_are_not_followed(self):
        os.symlink(os.path.join(self.tmp.name, "secret.txt"), os.path.join(self.root, "secret.txt"))
        os.symlink(self.tmp.name, os.path.join(self.root, "up"))
        s = self.serve()
        self.assertIn(" 404 ", s.get(PREFIX + "secret.txt")[0])
        self.assertIn(" 404 ", s.get(PREFIX + "up/secret.txt")[0])
        self.assertIn(" 200 ", s.get(PREFIX + "index.html")[0])
        self.assertIn(" 200 ", s.get(PREFIX)[0])

    def test_a_wildcard_on_a_public_suffix_is_refused(self):
        path = os.path.join(self.tmp.name, "allowed.txt")
        for entry in ["https://*.com", "https://*.co.uk", "https://*.a", "http://*.com.au:*"]:
            with open(path, "w") as f:
                f.write(entry + "\n")
            with self.assertRaises(csp.CspError, msg=entry):
                csp.read_allowlist(path)
        with open(path, "w") as f:
            f.write("https://*.corp.example.org\nhttps://*.example.com\nhttps://*.nhs.uk.example\nhttp://10.0.0.5:8000\n")
        self.assertEqual(len(csp.read_allowlist(path)), 4)

    def test_a_linked_index_out_of_the_folder_is_not_served(self):
        os.makedirs(os.path.join(self.root, "sub"))
        os.symlink(os.path.join(self.tmp.name, "secret.txt"), os.path.join(self.root, "sub", "index.html"))
        s = self.serve()
        self.assertIn(" 404 ", s.get(PREFIX + "sub/")[0])
        # A raw backslash in a folder's redirect is percent-encoded (`/\evil.example` is another host).
        os.makedirs(os.path.join(self.root, "a\\b"))
        status, headers = s.raw(f"GET {PREFIX}a\\b HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nConnection: close\r\n\r\n")
        self.assertEqual((status.split()[1], headers.get("location")), ("301", PREFIX + "a%5Cb/"))

    def test_every_answer_carries_the_policy(self):
        s = self.serve()
        for path in [PREFIX, PREFIX + "nothing-here", "/elsewhere"]:
            _, headers = s.get(path)
            self.assertEqual(headers.get("content-security-policy"), "default-src 'none'", path)
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=5)
        conn.request("GET", PREFIX + "index.html")
        r = conn.getresponse()
        self.assertEqual((r.status, r.read()), (200, b"<!doctype html><title>t</title>"))
        conn.close()


if __name__ == "__main__":
    unittest.main()
