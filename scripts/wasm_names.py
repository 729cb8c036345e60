#!/usr/bin/env python3
"""Removes the name section from the worker's WebAssembly module (trunk's post_build hook, in
Trunk.toml, before scripts/single_file.py reads the module).

The worker is not run through wasm-opt (index.html: `data-wasm-opt="0"`): on the 2-core machine
its -O1 took about 105 s of one core in every release build, for a module 4% smaller in its
code and no speed difference measurable here (docs/benchmarks.md, "The worker without wasm-opt").
What wasm-opt also removed was the name section, the functions' names (1.7 MB of the 15.9 MB
module): only a debugger or a stack trace reads it, and the release profile keeps it (without
debug information Cargo strips only that: `strip = "debuginfo"`). `strip = "symbols"` was not
tried: it is reported to drop the target_features section as well, which wasm-bindgen reads
(cloudflare/workers-rs#1015). So this hook removes that one custom section and leaves every
other byte as wasm-bindgen wrote it.

    python3 scripts/wasm_names.py [FILE.wasm ...]
        (default: dpkps-worker_bg.wasm in $TRUNK_STAGING_DIR)
    python3 scripts/wasm_names.py --check FILE.wasm ...
        fails if one still has a name section (scripts/test.sh, on the built dist/)
"""
import os
import sys

MAGIC = b"\0asm\x01\0\0\0"


def uleb(data, at, end):
    """The unsigned LEB128 u32 at `at` (at most 5 bytes, all before `end`), and where it ends."""
    value = 0
    for k in range(5):
        if at + k >= end:
            raise ValueError(f"cut short inside a number at byte {at}")
        byte = data[at + k]
        value |= (byte & 0x7F) << (7 * k)
        if byte < 0x80:
            if value >= 1 << 32:
                break
            return value, at + k + 1
    raise ValueError(f"not a 32-bit number at byte {at}")


def sections(data):
    """(id, custom section's name or None, start, end) of each section of `data`, a WebAssembly
    module, in order. Refuses what is not a module or is cut short."""
    if data[:8] != MAGIC:
        raise ValueError("not a WebAssembly module (version 1)")
    at = 8
    while at < len(data):
        start, kind = at, data[at]
        size, body = uleb(data, at + 1, len(data))
        end = body + size
        if end > len(data):
            raise ValueError(f"section {kind} at byte {start} runs past the end")
        name = None
        if kind == 0:
            length, name_at = uleb(data, body, end)
            if name_at + length > end:
                raise ValueError(f"the custom section at byte {start} has a name longer than itself")
            name = bytes(data[name_at:name_at + length])
        yield kind, name, start, end
        at = end


def without_names(data):
    """`data` without its custom section "name": every other section as it was, in its order."""
    out = bytearray(MAGIC)
    for kind, name, start, end in sections(data):
        if not (kind == 0 and name == b"name"):
            out += data[start:end]
    return bytes(out)


def has_names(data):
    return any(kind == 0 and name == b"name" for kind, name, _, _ in sections(data))


def main(args):
    check = args[:1] == ["--check"]
    paths = args[1:] if check else args
    if not paths:
        staging = os.environ.get("TRUNK_STAGING_DIR")
        if check or not staging:
            print("wasm_names.py: give a module, or run as trunk's hook (TRUNK_STAGING_DIR)", file=sys.stderr)
            return 2
        paths = [os.path.join(staging, "dpkps-worker_bg.wasm")]
    for path in paths:
        try:
            with open(path, "rb") as f:
                data = f.read()
            if check:
                if has_names(data):
                    print(f"wasm_names.py: {path} still has a name section", file=sys.stderr)
                    return 1
                print(f"wasm_names.py: {os.path.basename(path)}: no name section")
                continue
            stripped = without_names(data)
            if stripped == data:
                print(f"wasm_names.py: {os.path.basename(path)}: no name section; left as it is")
                continue
            # A whole new file, then renamed over the old one: a failure leaves the old one whole.
            with open(path + ".tmp", "wb") as f:
                f.write(stripped)
            os.replace(path + ".tmp", path)
        except (OSError, ValueError) as e:
            print(f"wasm_names.py: {path}: {e}", file=sys.stderr)
            return 1
        print(f"wasm_names.py: {os.path.basename(path)}: {len(data):,} -> {len(stripped):,} bytes (name section removed)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
