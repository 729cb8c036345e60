#!/usr/bin/env python3
"""scripts/wasm_names.py removes the name section from a WebAssembly module and nothing else.

    python3 tests/wasm_names_test.py        (scripts/test.sh runs it)
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from wasm_names import MAGIC, without_names  # noqa: E402


def uleb(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def section(kind, body):
    return bytes([kind]) + uleb(len(body)) + body


def custom(name, payload):
    return section(0, uleb(len(name)) + name + payload)


class WasmNamesTest(unittest.TestCase):
    def test_the_name_section_goes_and_every_other_section_stays_in_order(self):
        types = section(1, b"\x01\x60\x00\x00")
        names = custom(b"name", b"\x01" + b"x" * 300)  # a payload long enough for a 2-byte size
        code = section(10, b"\x01\x02\x00\x0b")
        target = custom(b"target_features", b"\x01+\x07simd128")
        bindgen = custom(b"__wasm_bindgen_unstable", b"keep me")
        module = MAGIC + types + names + code + target + bindgen
        self.assertEqual(without_names(module), MAGIC + types + code + target + bindgen)

    def test_a_module_without_names_is_unchanged(self):
        module = MAGIC + section(1, b"\x00") + custom(b"names", b"not the name section")
        self.assertEqual(without_names(module), module)

    def test_what_is_not_a_module_is_refused(self):
        with self.assertRaisesRegex(ValueError, "not a WebAssembly module"):
            without_names(b"<html>")
        with self.assertRaisesRegex(ValueError, "runs past the end"):
            without_names(MAGIC + bytes([1]) + uleb(50) + b"\x00")
        with self.assertRaisesRegex(ValueError, "cut short"):
            without_names(MAGIC + bytes([1, 0x80]))


if __name__ == "__main__":
    unittest.main()
