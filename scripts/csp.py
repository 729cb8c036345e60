#!/usr/bin/env python3
"""Writes the page's Content-Security-Policy into a built bundle (dist/), from its allowlist.

    python3 scripts/csp.py [DIR]      # DIR: $TRUNK_STAGING_DIR (as a trunk hook), else dist/

Run by trunk after every build (Trunk.toml, [[hooks]] stage = "post_build") and by
scripts/serve.py when it starts; run it by hand after editing DIR/allowed-endpoints.txt in a
deployed copy. It is idempotent. What it does to DIR:

1. Reads DIR/allowed-endpoints.txt: the LLM endpoints the page may call, one CSP host-source
   per line (`https://llm.example.org`, `http://10.0.0.5:8000`, `https://*.corp.example`,
   `http://127.0.0.1:*`), `#` comments. Anything else (paths, `*`, keywords, bare schemes) is
   refused with the line number: the list is a security boundary, not a pattern language.
2. Moves every inline <script> of DIR/index.html (trunk writes its start-up module inline) to
   a file DIR/start-<sha256>.js and loads it with src=, so script-src needs no 'unsafe-inline'
   and no hash, and the policy does not change from one build to the next.
3. Writes the policy into index.html's <meta http-equiv="Content-Security-Policy"> and the
   allowlist into <meta name="dpkps-allowed-endpoints"> (the page reads it to explain a
   refused endpoint before sending anything).
4. Prints the HTTP header form of the policy (the meta policy plus frame-ancestors, which a
   meta tag cannot carry). scripts/serve.py sends it on every response, which is what puts
   the Web Worker and its helper workers under the policy too; another web server should be
   configured to send the same header.

Standard library only.
"""
import hashlib
import html
import os
import re
import sys

ALLOWLIST = "allowed-endpoints.txt"
# The default: a model server on this machine only. (Not http://[::1]:*: Chromium refuses IPv6
# literals in a policy, "contains an invalid source", and ignores them.)
DEFAULT_ALLOWED = ["http://127.0.0.1:*", "http://localhost:*"]

_HOST_SOURCE = re.compile(
    r"^(?P<scheme>https?)://"
    r"(?P<host>(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)"
    r"(?P<port>:(\*|[0-9]{1,5}))?/?$"
)


class CspError(Exception):
    pass


def read_allowlist(path):
    """The host-sources in `path` (the defaults if the file does not exist)."""
    if not os.path.exists(path):
        return list(DEFAULT_ALLOWED)
    out = []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            for entry in line.split():
                src = entry.lower().rstrip("/")
                if "[" in src:
                    raise CspError(
                        f"{path}:{n}: {entry!r}: browsers do not accept IPv6 addresses in a Content-Security-Policy; "
                        "use a host name for that machine (for this one: localhost)")
                m = _HOST_SOURCE.match(src)
                if not m or (m.group("port") and m.group("port") != ":*" and int(m.group("port")[1:]) > 65535):
                    raise CspError(
                        f"{path}:{n}: {entry!r} is not an endpoint origin; write scheme://host[:port], e.g. "
                        "https://llm.example.org or http://10.0.0.5:8000 (no path, no bare *)")
                if m.group("host").startswith("*.") and too_wide(m.group("host")[2:]):
                    raise CspError(
                        f"{path}:{n}: {entry!r}: a wildcard on a public suffix allows nearly any host; name the "
                        "organisation's domain after *. (e.g. https://*.corp.example.org)")
                if src not in out:
                    out.append(src)
    return out


# Second-level labels under a two-letter country code that registries sell names under
# (co.uk, com.au, ac.jp, …): `*.co.uk` is as wide as `*.com`. Not the whole Public Suffix
# List (the script has no dependencies), but the forms met in practice.
_SELLER_LABELS = {"co", "com", "net", "org", "gov", "ac", "edu", "ne", "or", "go", "gob", "nic", "ltd", "plc", "sch", "nhs", "mil"}


def too_wide(domain):
    """Whether `*.domain` spans a public suffix: a bare top-level label (`*.com`), or a
    registry's second level under a country code (`*.co.uk`)."""
    labels = domain.split(".")
    if len(labels) < 2:
        return True
    return len(labels) == 2 and len(labels[1]) == 2 and labels[0] in _SELLER_LABELS


def policy(allowed, header=False):
    """The policy for the page (meta) or for every response (header)."""
    directives = [
        "default-src 'none'",
        # 'self': the start-up module, the wasm-bindgen glue, the worker's loader shim.
        # 'wasm-unsafe-eval': compiling the two .wasm modules (no JS eval is allowed).
        "script-src 'self' 'wasm-unsafe-eval'",
        # The worker and its helper workers: same-origin script URLs, never blob:.
        "worker-src 'self'",
        # Own origin (model, vocabularies, wasm) and the deploy-time LLM endpoints only.
        "connect-src " + " ".join(["'self'"] + list(allowed)),
        "img-src 'self'",
        # Leptos sets style attributes; styles cannot send anything (img/font are 'self'/none).
        "style-src 'self' 'unsafe-inline'",
        "manifest-src 'self'",
        "form-action 'none'",
        "base-uri 'none'",
        "object-src 'none'",
    ]
    if header:
        directives.append("frame-ancestors 'none'")
    return "; ".join(directives)


_INLINE_SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.S | re.I)
_CSP_META = re.compile(r"<meta\s+http-equiv=\"Content-Security-Policy\"[^>]*>", re.S | re.I)
_LIST_META = re.compile(r"<meta\s+name=\"dpkps-allowed-endpoints\"[^>]*>\s*", re.S | re.I)


def apply(dist):
    """Rewrites dist/index.html (scripts out, policy in); returns the header policy."""
    index = os.path.join(dist, "index.html")
    allowed = read_allowlist(os.path.join(dist, ALLOWLIST))
    with open(index, encoding="utf-8") as f:
        page = f.read()

    def externalise(m):
        attrs, body = m.group("attrs"), m.group("body")
        if re.search(r"\bsrc\s*=", attrs, re.I):
            if body.strip():
                raise CspError("a <script src=…> with a body: not expected in index.html")
            return m.group(0)
        if not body.strip():
            return ""
        name = "start-" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:16] + ".js"
        with open(os.path.join(dist, name), "w", encoding="utf-8") as f:
            f.write(body.strip() + "\n")
        if not re.search(r"type\s*=\s*\"module\"", attrs, re.I):
            raise CspError("an inline classic <script> in index.html: only trunk's module is expected")
        return f'<script type="module" src="./{name}"></script>'

    page = _INLINE_SCRIPT.sub(externalise, page)
    if not _CSP_META.search(page):
        raise CspError(f"{index}: no <meta http-equiv=\"Content-Security-Policy\"> to fill in")
    # The policy holds no `"`, `<`, `&` (the allowlist is validated): single quotes stay as they are.
    meta = (f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy(allowed), quote=False)}" />'
            f'\n    <meta name="dpkps-allowed-endpoints" content="{html.escape(" ".join(allowed), quote=False)}" />\n    ')
    page = _LIST_META.sub("", page)
    page = _CSP_META.sub(lambda _: meta.rstrip() , page, count=1)
    # What the policy relies on: no inline script and no inline event handler is left.
    for m in _INLINE_SCRIPT.finditer(page):
        if m.group("body").strip():
            raise CspError(f"{index}: an inline script is left")
    if re.search(r"<[^>]+\son[a-z]+\s*=", page, re.I):
        raise CspError(f"{index}: an inline event handler (on…=) would be blocked by the policy")
    tmp = index + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(tmp, index)
    return policy(allowed, header=True)


def main(argv):
    dist = argv[1] if len(argv) > 1 else os.environ.get("TRUNK_STAGING_DIR", "dist")
    try:
        header = apply(dist)
    except (CspError, OSError) as e:
        print(f"csp.py: {e}", file=sys.stderr)
        return 1
    print(f"csp.py: {dist}/index.html: policy written; HTTP header for web servers:")
    print(f"Content-Security-Policy: {header}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
