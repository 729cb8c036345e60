#!/usr/bin/env python3
"""Writes DIR/dpkps.html: the whole app in one file that opens from disk, with no server.

    python3 scripts/single_file.py [DIR] [--allowed-endpoints FILE] [--with-vectors]

DIR is $TRUNK_STAGING_DIR when run as a trunk hook (Trunk.toml), else dist/. The file holds
both wasm binaries, their JS glue, the style sheet, the icon, and every file under DIR/models
and DIR/vocab (the ONNX model, tokenizer, reference embeddings, bundled vocabularies, and the
licences that travel with them); the stop lists are compiled into the worker. The bundled term
vectors (DIR/vectors, 30 MB that hardly compress) are left out unless --with-vectors: without
them the worker embeds the matched terms with the model, as it does for any list it has no
vectors for (crates/worker/src/sources.rs); the file stays at about half the size.

The LLM endpoints the file may call are fixed when it is written, since a file opened from
disk has no neighbour to read a list from: DIR/allowed-endpoints.txt (www/allowed-endpoints.txt
of the source tree; loopback when absent), or the file named by --allowed-endpoints, or the
host-sources in $DPKPS_ALLOWED_ENDPOINTS (space or comma separated). Same rules as
scripts/csp.py, which validates them. To allow another endpoint, write the file again:
    DPKPS_ALLOWED_ENDPOINTS="http://10.0.0.5:8000" python3 scripts/single_file.py dist

How it runs: each file is a data block (<script type="application/x-dpkps-asset">, never
executed), base64 of its gzip when that is smaller. One inline module, allowed by its sha256 in
the page's Content-Security-Policy, turns them into Blobs (gunzipped by DecompressionStream when
first asked for), starts the UI from a blob: module, and defines two globals the app looks for
(crates/inpage/src/lib.rs):
`dpkpsAssets` (asset path -> Promise of a Blob) and `dpkpsStartWorker()` (a new Web Worker
booted from an in-page source). The worker cannot read the page's blob: URLs (a file:// page
has an opaque origin), so the page posts it what it needs: its glue, its compiled wasm module
and the assets; the worker then defines the same two globals for its helper workers.
Workers made from blob: URLs inherit the page's policy, so they cannot reach the network
either (tests/e2e/file.mjs checks it).

Standard library only. Run after trunk has staged DIR; independent of scripts/csp.py (trunk
runs the post_build hooks at the same time).
"""
import base64
import glob
import gzip
import hashlib
import html
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csp  # noqa: E402  (the allowlist rules are the served page's)

OUT = "dpkps.html"
# The folders of assets the page or the worker fetches; vectors/ only with --with-vectors.
ASSET_DIRS = ("models", "vocab")
OPTIONAL_DIRS = ("vectors",)
# Stored as they are when gzip saves less than this share (decoding would cost for nothing).
MIN_SAVING = 0.05

# Both the page and the worker unpack an asset when it is first asked for (a Blob of the stored
# bytes, gzip or not), so neither waits for assets it has not used yet.
UNPACK = r"""
const unpack = (raw, gz, type) => gz
  ? new Response(raw.stream().pipeThrough(new DecompressionStream('gzip'))).blob().then((b) => new Blob([b], { type }))
  : Promise.resolve(new Blob([raw], { type }));
const lazyAssets = (packed) => {
  const memo = {};
  const out = {};
  for (const [path, [raw, gz, type]] of Object.entries(packed)) {
    Object.defineProperty(out, path, { enumerable: true, get: () => (memo[path] = memo[path] || unpack(raw, gz, type)) });
  }
  return out;
};
"""

# The worker's first script: waits for the page's boot message (never for a network fetch),
# loads the glue from a blob: URL it makes itself, and instantiates the module it was sent.
WORKER_BOOT = UNPACK + r"""
self.onmessage = (e) => {
  const m = e.data;
  if (!m || m.dpkpsBoot !== 1) {
    throw new Error(m && m.error ? m.error : 'the single-file page sent no boot message');
  }
  self.onmessage = null;
  self.dpkpsAssets = lazyAssets(m.assets);
  let url = null;
  self.dpkpsStartWorker = () => {
    url = url || URL.createObjectURL(new Blob([m.boot], { type: 'text/javascript' }));
    const w = new Worker(url);
    w.postMessage(m);
    return w;
  };
  importScripts(URL.createObjectURL(m.glue));
  wasm_bindgen({ module_or_path: m.module });
};
"""

# The page's start-up module. __WORKER_BOOT__ is replaced by the JSON string above.
PAGE_BOOT = UNPACK + r"""
const t0 = performance.now();
const packed = {};
for (const el of document.querySelectorAll('script[type="application/x-dpkps-asset"]')) {
  const text = el.textContent;
  el.remove();
  let bytes;
  if (Uint8Array.fromBase64) {
    bytes = Uint8Array.fromBase64(text);
  } else {
    const bin = atob(text);
    bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  }
  packed[el.dataset.path] = [new Blob([bytes]), el.dataset.gzip === '1', el.dataset.type || 'application/octet-stream'];
}
const code = lazyAssets(packed);
const need = (p) => code[p] || Promise.reject(new Error(`dpkps.html: ${p} is missing`));
const assets = Object.fromEntries(Object.entries(packed).filter(([p]) => /^[a-z]+\//.test(p)));
globalThis.dpkpsAssets = lazyAssets(assets);

const workerBoot = __WORKER_BOOT__;
const bootUrl = URL.createObjectURL(new Blob([workerBoot], { type: 'text/javascript' }));
let bootMessage = null;
const boot = () => (bootMessage = bootMessage || (async () => {
  const module = await WebAssembly.compile(await (await need('worker.wasm')).arrayBuffer());
  return { dpkpsBoot: 1, boot: workerBoot, glue: await need('worker.js'), module, assets };
})());
globalThis.dpkpsStartWorker = () => {
  const w = new Worker(bootUrl);
  boot().then((m) => w.postMessage(m), (e) => w.postMessage({ error: `dpkps.html could not be unpacked: ${e}` }));
  return w;
};

const glue = await import(URL.createObjectURL(await need('web.js')));
const wasm = await glue.default({ module_or_path: await (await need('web.wasm')).arrayBuffer() });
window.wasmBindings = glue;
globalThis.dpkpsStartedMs = performance.now() - t0;
dispatchEvent(new CustomEvent('TrunkApplicationStarted', { detail: { wasm } }));
"""


class BundleError(Exception):
    pass


def one(dist, pattern):
    found = sorted(glob.glob(os.path.join(dist, pattern)))
    if len(found) != 1:
        raise BundleError(f"{dist}: expected one {pattern}, found {len(found)}: run trunk build first")
    return found[0]


def allowlist(dist, file_arg):
    """The endpoints, from --allowed-endpoints, $DPKPS_ALLOWED_ENDPOINTS or DIR's list."""
    env = os.environ.get("DPKPS_ALLOWED_ENDPOINTS")
    if file_arg:
        if not os.path.exists(file_arg):
            raise BundleError(f"{file_arg}: no such file")
        return csp.read_allowlist(file_arg)
    if env is not None:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(env.replace(",", " ") + "\n")
        try:
            return csp.read_allowlist(f.name)
        except csp.CspError as e:
            raise csp.CspError(str(e).replace(f.name, "DPKPS_ALLOWED_ENDPOINTS")) from None
        finally:
            os.unlink(f.name)
    return csp.read_allowlist(os.path.join(dist, csp.ALLOWLIST))


def block(path, data, mime):
    packed = gzip.compress(data, 9, mtime=0)
    use_gzip = len(packed) < (1 - MIN_SAVING) * len(data)
    body = base64.b64encode(packed if use_gzip else data).decode("ascii")
    return (f'<script type="application/x-dpkps-asset" data-path="{html.escape(path)}" data-type="{mime}"'
            f' data-gzip="{1 if use_gzip else 0}">{body}</script>\n')


def policy(allowed, boot_hash):
    return "; ".join([
        "default-src 'none'",
        # The start-up module by its hash; blob: for the glue it imports and the workers'
        # scripts (made in the page from the data blocks); compiling wasm. No 'unsafe-inline'.
        f"script-src 'sha256-{boot_hash}' blob: 'wasm-unsafe-eval'",
        "worker-src blob:",
        # Only the LLM endpoints: the assets are in the page, nothing is fetched.
        "connect-src " + (" ".join(allowed) if allowed else "'none'"),
        "img-src data:",
        "style-src 'unsafe-inline'",
        "form-action 'none'",
        "base-uri 'none'",
        "object-src 'none'",
    ])


def build(dist, allowed_file=None, with_vectors=False):
    """Writes dist/dpkps.html; returns (path, size in bytes, policy)."""
    allowed = allowlist(dist, allowed_file)
    web_js = one(dist, "dpkps-web-*.js")
    named = {
        "web.js": (web_js, "text/javascript"),
        "web.wasm": (one(dist, "dpkps-web-*_bg.wasm"), "application/wasm"),
        "worker.js": (one(dist, "dpkps-worker.js"), "text/javascript"),
        "worker.wasm": (one(dist, "dpkps-worker_bg.wasm"), "application/wasm"),
    }
    for d in ASSET_DIRS + (OPTIONAL_DIRS if with_vectors else ()):
        for p in sorted(glob.glob(os.path.join(dist, d, "**", "*"), recursive=True)):
            if os.path.isfile(p):
                rel = os.path.relpath(p, dist).replace(os.sep, "/")
                named[rel] = (p, "application/json" if p.endswith(".json") else "application/octet-stream")
    with open(one(dist, "style-*.css"), encoding="utf-8") as f:
        style = f.read()
    if "</style" in style.lower():
        raise BundleError("the style sheet contains </style>")
    icons = glob.glob(os.path.join(dist, "favicon*.svg"))
    icon = ""
    if icons:
        with open(icons[0], "rb") as f:
            icon = f'<link rel="icon" href="data:image/svg+xml;base64,{base64.b64encode(f.read()).decode()}" />\n'

    boot = PAGE_BOOT.replace("__WORKER_BOOT__", json.dumps(WORKER_BOOT)).strip() + "\n"
    if "</script" in boot.lower():
        raise BundleError("the start-up module contains </script>")
    boot_hash = base64.b64encode(hashlib.sha256(boot.encode("utf-8")).digest()).decode()
    csp_value = policy(allowed, boot_hash)

    out = os.path.join(dist, OUT)
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8" />\n'
                '<meta name="viewport" content="width=device-width, initial-scale=1" />\n'
                f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp_value, quote=False)}" />\n'
                f'<meta name="dpkps-allowed-endpoints" content="{html.escape(" ".join(allowed), quote=False)}" />\n'
                '<meta name="referrer" content="no-referrer" />\n'
                '<title>dpkps: private synthetic text</title>\n'
                f'{icon}<style>\n{style}\n</style>\n</head>\n<body>\n'
                '<noscript>dpkps needs JavaScript and WebAssembly to run in this page.</noscript>\n')
        for name, (path, mime) in named.items():
            with open(path, "rb") as g:
                f.write(block(name, g.read(), mime))
        f.write(f'<script type="module">{boot}</script>\n</body>\n</html>\n')
    os.replace(tmp, out)
    return out, os.path.getsize(out), csp_value


def main(argv):
    args = argv[1:]
    allowed_file = None
    with_vectors = "--with-vectors" in args
    args = [a for a in args if a != "--with-vectors"]
    if "--allowed-endpoints" in args:
        i = args.index("--allowed-endpoints")
        if i + 1 >= len(args):
            print("single_file.py: --allowed-endpoints needs a file", file=sys.stderr)
            return 2
        allowed_file = args[i + 1]
        del args[i:i + 2]
    dist = args[0] if args else os.environ.get("TRUNK_STAGING_DIR", "dist")
    try:
        out, size, csp_value = build(dist, allowed_file, with_vectors)
    except (BundleError, csp.CspError, OSError) as e:
        print(f"single_file.py: {e}", file=sys.stderr)
        return 1
    print(f"single_file.py: {out}: {size / 1e6:.1f} MB; opens from disk. Content-Security-Policy: {csp_value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
