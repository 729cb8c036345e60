#!/usr/bin/env python3
"""Cargo.toml's list of crates built at opt-level 0 in dev builds is exactly the crates that only
run at build time (proc macros, build scripts and what they alone depend on).

`[profile.dev.package."*"]` sets opt-level 2 for every dependency, and a named package or "*"
takes precedence over `build-override`, so the build-time crates are named one by one at 0
(Cargo.toml says why). Both ways matter: a build-time crate missing from the list is compiled
optimised for nothing (slower builds), and a listed crate that the code also runs (a dependency
change can make it one) would run unoptimised in every test and dev tool. The sets come from
`cargo tree`: every package of the default members' normal, build and dev edges, less those
reached through normal and dev edges without going through a proc macro.

    python3 tests/opt_levels_test.py        (scripts/test.sh runs it after the native build,
                                             when every package is in cargo's cache)
"""
import os
import re
import subprocess
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def packages(edges):
    r = subprocess.run(
        ["cargo", "tree", "--locked", "-q", "-e", edges, "--prefix", "none", "--format", "{p}"],
        cwd=ROOT, capture_output=True, text=True,
    )
    if r.returncode != 0:
        raise AssertionError(f"cargo tree -e {edges} failed (exit {r.returncode}):\n{r.stderr}")
    return {line.split()[0] for line in r.stdout.splitlines() if line.strip()}


def listed_at_zero():
    """The NAMEs of Cargo.toml's [profile.dev.package.NAME] tables that set opt-level = 0. Read
    table by table (a header, then its lines up to the next header) rather than with tomllib,
    which would ask for Python 3.11: the README asks only for the machine's Python 3."""
    with open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8") as f:
        text = f.read()
    names, table = set(), None
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        header = re.fullmatch(r"\[(.+)\]", line)
        if header:
            m = re.fullmatch(r'profile\.dev\.package\."?([A-Za-z0-9_\-]+)"?', header.group(1).strip())
            table = m.group(1) if m and m.group(1) != "*" else None
        elif table and re.fullmatch(r"opt-level\s*=\s*0", line):
            names.add(table)
    return names


class OptLevelsTest(unittest.TestCase):
    def test_the_opt_level_0_list_is_the_build_time_crates(self):
        build_only = packages("normal,build,dev") - packages("normal,dev,no-proc-macro")
        listed = listed_at_zero()
        self.assertTrue(build_only, "cargo tree found no build-time crates: the check reads nothing")
        self.assertEqual(
            {"add at opt-level 0 (built optimised for nothing)": sorted(build_only - listed),
             "remove from the list (the code runs them, or they are gone)": sorted(listed - build_only)},
            {"add at opt-level 0 (built optimised for nothing)": [],
             "remove from the list (the code runs them, or they are gone)": []},
            "Cargo.toml's [profile.dev.package.NAME] opt-level = 0 list",
        )

if __name__ == "__main__":
    unittest.main()
