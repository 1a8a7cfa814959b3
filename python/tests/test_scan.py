# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""A root scan of a Python process: a second process reads every readable
mapping of it through /proc/PID/mem (as test/scan.c does for C programs).

The child interpreter holds four 64-byte random values, each read from a
file:
  secret   readinto() a Secret through a file opened with buffering=0: the
           bytes go from the kernel straight into secret memory - must NOT
           be found;
  control  f.read() into a bytes object - must be found (the scan works);
  buffered readinto() a Secret through a buffered file (the default): the
           file object's own buffer keeps a copy in the ordinary heap - must
           be found (why the docs say buffering=0);
  freed    f.read() into a temporary bytes object, copied into a Secret,
           the bytes dropped at once: the freed heap block is not cleared -
           must be found (why the docs say never to go through bytes).
The secret's own pages must be refused to the scanner (EIO), so the scan did
reach them."""
import errno
import os
import subprocess
import sys
import tempfile
import unittest

import pyutil
import secretmem

CHILD = r"""
import hmac, sys, secretmem
secret_path, control_path, buffered_path, freed_path = sys.argv[1:5]
with open(control_path, "rb") as f:
    control = f.read()
b = secretmem.Secret(64)
fb = open(buffered_path, "rb")          # kept open: its buffer is the copy
w = b.view()
assert fb.readinto(w) == 64
w.release()
s = secretmem.Secret(64)
v = s.view()
with open(secret_path, "rb", buffering=0) as f:
    assert f.readinto(v) == 64
v.release()
c = secretmem.Secret(64)
x = c.view()
with open(freed_path, "rb", buffering=0) as f:
    x[:] = f.read()                     # a bytes object, freed at once
x.release()
print(s._buf._secretmem_memory.address, s.backend, flush=True)
sys.stdin.readline()                    # the scan runs now
with open(secret_path, "rb") as f:      # still held? (a copy now: test over)
    print("intact", hmac.compare_digest(s.view(), f.read()), len(control), flush=True)
"""

FRAG = pyutil.FRAG
scan = pyutil.scan


class TestScan(unittest.TestCase):
    def test_readinto_secret_not_found_control_found(self):
        if os.geteuid() != 0:
            self.skipTest("the scan reads another process's memory: needs root")
        pyutil.need_secret_backend(self)
        with tempfile.TemporaryDirectory() as tmp:
            needles = {}
            paths = []
            for name in ("secret", "control", "buffered", "freed"):
                needles[name] = os.urandom(64)
                path = os.path.join(tmp, name)
                with open(path, "wb") as f:
                    f.write(needles[name])
                paths.append(path)
            child = subprocess.Popen([sys.executable, "-c", CHILD, *paths], env=pyutil.child_env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     preexec_fn=pyutil.no_core)
            try:
                line = child.stdout.readline().split()
                self.assertEqual(len(line), 2, "the child did not start")
                addr, backend = int(line[0]), line[1]
                self.assertEqual(backend, "secret")
                found, refused = scan(child.pid, needles)
                child.stdin.write("go\n")
                child.stdin.flush()
                after = child.stdout.readline().split()
            finally:
                child.stdin.close()
                rc = child.wait(timeout=60)
                child.stdout.close()
            self.assertEqual(rc, 0)
            self.assertEqual(after, ["intact", "True", "64"], "the child no longer held the secret")
            print(f"\nscan of pid {child.pid}: fragments found {found}; "
                  f"{len(refused)} mappings refused", file=sys.stderr)
            self.assertEqual(found["control"] >= len(needles["control"]) // FRAG, True,
                             "control in bytes not found: the scan does not work")
            self.assertGreaterEqual(found["buffered"], len(needles["buffered"]) // FRAG,
                                    "a buffered file's copy was not found")
            self.assertGreaterEqual(found["freed"], 2, "the freed bytes copy was not found")
            self.assertEqual(found["secret"], 0, "the secret read with readinto was found in memory")
            self.assertTrue(any(s <= addr < e and err == errno.EIO for s, e, err in refused),
                            f"the secret's page at {addr:#x} was not refused to the scanner")


if __name__ == "__main__":
    unittest.main()
