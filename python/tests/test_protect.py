# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""Secret.protect(): each mode holds, seen from a child interpreter that a
forbidden access kills with SIGSEGV (core dumps off)."""
import signal
import unittest

import pyutil

PRELUDE = """
import sys, secretmem
s = secretmem.Secret(64, region=True)
v = s.view()
v[0] = 42
print("ready", flush=True)
"""


class TestProtect(unittest.TestCase):
    def run_case(self, body):
        return pyutil.run_child(PRELUDE + body)

    def assertKilled(self, r):
        self.assertEqual(r.returncode, -signal.SIGSEGV, f"stdout={r.stdout!r} stderr={r.stderr!r}")
        self.assertIn("ready", r.stdout)
        self.assertNotIn("survived", r.stdout)

    def test_noaccess_read_kills(self):
        self.assertKilled(self.run_case('s.protect("noaccess")\nx = v[0]\nprint("survived", x)\n'))

    def test_noaccess_write_kills(self):
        self.assertKilled(self.run_case('s.protect("noaccess")\nv[1] = 1\nprint("survived")\n'))

    def test_readonly_reads_but_write_kills(self):
        r = self.run_case('s.protect("readonly")\nprint("read", v[0], flush=True)\nv[0] = 1\n'
                          'print("survived")\n')
        self.assertIn("read 42", r.stdout)
        self.assertKilled(r)

    def test_readwrite_restores(self):
        r = self.run_case('s.protect("noaccess")\ns.protect("readonly")\ns.protect("readwrite")\n'
                          'v[1] = 7\nprint("value", v[0], v[1])\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("value 42 7", r.stdout)

    def test_close_while_noaccess(self):
        # the library zeroizes whatever the access mode: close() must not crash
        r = self.run_case('s.protect("noaccess")\nv.release()\ns.close()\nprint("closed", s.closed)\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("closed True", r.stdout)


if __name__ == "__main__":
    unittest.main()
