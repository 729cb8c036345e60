#!/usr/bin/env python3
"""The build tools are installed pinned: every `cargo install` in scripts/ is --locked, so each
tool (wasm-bindgen-cli writes the JS glue that runs in the page) is built from the crate
versions and checksums of a lockfile, never from whatever a registry serves that day.

    python3 tests/setup_test.py        (scripts/test.sh runs it)
"""
import glob
import os
import re
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def cargo_installs():
    """(file, line number, command) of every `cargo install` run by a script (comments and
    messages left out)."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "scripts", "*.sh"))):
        with open(path) as f:
            for n, line in enumerate(f, 1):
                code = line.split("#", 1)[0]
                # `cargo install`, or with options before the verb (`cargo --config K=V install`)
                if re.search(r"\bcargo(\s+--config\s+\S+)*\s+install\b", code) and not re.match(r'\s*(step|echo|need)\b', code):
                    out.append((os.path.basename(path), n, code.strip()))
    return out


class SetupTest(unittest.TestCase):
    def test_every_cargo_install_is_locked(self):
        installs = cargo_installs()
        self.assertTrue(any("wasm-bindgen-cli" in c or "--path" in c for _, _, c in installs), installs)
        for name, n, command in installs:
            self.assertIn("--locked", command, f"scripts/{name}:{n}: {command}")


if __name__ == "__main__":
    unittest.main()
