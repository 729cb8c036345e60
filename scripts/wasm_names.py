#!/usr/bin/env python3
"""Removes the name section from the worker's WebAssembly module (trunk's post_build hook, in
Trunk.toml, before scripts/single_file.py reads the module).

The worker is not run through wasm-opt (index.html: `data-wasm-opt="0"`): on the 2-core machine
its -O1 took about 115 s of one core in every release build, for a module 4% smaller in its
code and no measured difference in speed (docs/benchmarks.md, "The worker without wasm-opt").
What wasm-opt also removed was the name section, the functions' names (1.7 MB of the 15.9 MB
module): only a debugger or a stack trace reads it, and the release profile's
`strip = "debuginfo"` keeps it. (`strip = "symbols"` was not tried: it is reported to drop the
target_features section as well, which wasm-bindgen reads; cloudflare/workers-rs#1015.) So this
hook removes that one custom section and leaves every other byte as wasm-bindgen wrote it.

    python3 scripts/wasm_names.py [FILE.wasm ...]
        (default: dpkps-worker_bg.wasm in $TRUNK_STAGING_DIR)
"""
import os
import sys

MAGIC = b"\0asm\x01\0\0\0"


def uleb(data, at):
    """The unsigned LEB128 number at `at`, and where it ends."""
    value = shift = 0
    while True:
        if at >= len(data):
            raise ValueError("cut short inside a number")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def without_names(data):
    """`data` (a WebAssembly module) without its custom section "name"; every other section as
    it was, in its order. Refuses what is not a module."""
    if data[:8] != MAGIC:
        raise ValueError("not a WebAssembly module (version 1)")
    out, at = bytearray(MAGIC), 8
    while at < len(data):
        start = at
        kind = data[at]
        size, body = uleb(data, at + 1)
        end = body + size
        if end > len(data):
            raise ValueError(f"section {kind} at byte {start} runs past the end")
        keep = True
        if kind == 0:
            length, name_at = uleb(data, body)
            keep = data[name_at:name_at + length] != b"name"
        if keep:
            out += data[start:end]
        at = end
    return bytes(out)


def main(paths):
    if not paths:
        staging = os.environ.get("TRUNK_STAGING_DIR")
        if not staging:
            print("wasm_names.py: give a module, or run as trunk's hook (TRUNK_STAGING_DIR)", file=sys.stderr)
            return 2
        paths = [os.path.join(staging, "dpkps-worker_bg.wasm")]
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        try:
            stripped = without_names(data)
        except ValueError as e:
            print(f"wasm_names.py: {path}: {e}", file=sys.stderr)
            return 1
        with open(path, "wb") as f:
            f.write(stripped)
        print(f"wasm_names.py: {os.path.basename(path)}: {len(data):,} -> {len(stripped):,} bytes (name section removed)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
