#!/usr/bin/env python3
"""scripts/wasm_names.py removes the name section from a WebAssembly module and nothing else.

    python3 tests/wasm_names_test.py        (scripts/test.sh runs it)
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from wasm_names import MAGIC, has_names, without_names  # noqa: E402


def uleb(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def uleb5(n):
    """n as wasm-ld writes section sizes: padded to 5 bytes."""
    return bytes([(n >> 7 * i) & 0x7F | (0x80 if i < 4 else 0) for i in range(5)])


def section(kind, body, size=uleb):
    return bytes([kind]) + size(len(body)) + body


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

    def test_sizes_padded_to_five_bytes_are_read(self):
        names = section(0, uleb5(4) + b"name" + b"\x00\x01", size=uleb5)
        code = section(10, b"\x00", size=uleb5)
        module = MAGIC + names + code
        self.assertTrue(has_names(module))
        self.assertEqual(without_names(module), MAGIC + code)
        self.assertFalse(has_names(without_names(module)))

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
        with self.assertRaisesRegex(ValueError, "not a 32-bit number"):
            without_names(MAGIC + bytes([1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]))
        # A custom section whose name runs past its end, or an empty one: its name is not read
        # from the next section.
        with self.assertRaisesRegex(ValueError, "name longer than itself"):
            without_names(MAGIC + section(0, uleb(9) + b"name") + section(1, b"\x00"))
        with self.assertRaisesRegex(ValueError, "cut short"):
            without_names(MAGIC + section(0, b"") + section(4, b"name"))


if __name__ == "__main__":
    unittest.main()
