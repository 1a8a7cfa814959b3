# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""`make wheel` and the wheel with CPythons that are not Debian's.

Pythons: $SECRETMEM_TEST_PYTHONS (space-separated paths), or else every
CPython 3.8+ found outside /usr/bin and /bin: python3.N in PATH, pyenv's
versions ($PYENV_ROOT or ~/.pyenv), /usr/local/bin, /opt/*/bin.  The test
is skipped, saying so, when there is none.

For each: `make wheel PYTHON=it` (the backend runs under it), then
`it -m pip install --no-index --target DIR` of the wheel, and a program
run by it from DIR: a Secret round trip, close() refused under a live
view, strict sizes, getpass() from a pipe, a fork child under drop ending
cleanly.  The oldest one also installs the wheel into a venv of its own
(with the pip that venv brings), the recipe of python/README.md."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import pyutil

PROGRAM = r"""
import os, sys, secretmem
assert secretmem.__file__.startswith(sys.argv[1]), secretmem.__file__
with secretmem.Secret(16) as s:
    v = s.view()
    v[:] = b"0123456789abcdef"
    try:
        s.close()
        raise SystemExit("close() under a live view")
    except BufferError:
        pass
    ok = s == b"0123456789abcdef"
    v.release()
for bad in ("32", 3.9, True):
    try:
        secretmem.Secret(bad)
        raise SystemExit(f"Secret({bad!r}) accepted")
    except TypeError:
        pass
p = secretmem.getpass("")
secretmem.lib.secretmem_set_option(secretmem.OPT_FORK, secretmem.FORK_DROP)
d = secretmem.Secret(8)
pid = os.fork()
if pid == 0:
    sys.exit(0)   # teardown frees d: under drop only forgotten
_, st = os.waitpid(pid, 0)
print(sys.version_info[:2], ok, p == b"hunter2", len(p), st)
"""


def candidates():
    env = os.environ.get("SECRETMEM_TEST_PYTHONS")
    if env:
        return env.split()
    found = []
    for d in os.environ.get("PATH", "").split(os.pathsep):
        found += glob.glob(os.path.join(d, "python3.[0-9]*"))
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found += glob.glob(os.path.join(root, "versions", "*", "bin", "python3"))
    found += glob.glob("/usr/local/bin/python3.[0-9]*") + glob.glob("/opt/*/bin/python3")
    return found


def cpythons():
    """{(major, minor): path} of the CPythons >= 3.8 found, Debian's left out."""
    out = {}
    seen = set()
    for path in candidates():
        if not re.search(r"python3(\.\d+)?$", path) or not os.access(path, os.X_OK):
            continue
        real = os.path.realpath(path)
        if real in seen or real.startswith(("/usr/bin/", "/bin/")):
            continue
        seen.add(real)
        r = subprocess.run([path, "-c", "import sys; print(sys.implementation.name, *sys.version_info[:2])"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            continue  # a pyenv shim of a version not selected, and the like
        name, major, minor = r.stdout.split()
        ver = (int(major), int(minor))
        if name == "cpython" and ver >= (3, 8) and ver not in out:
            out[ver] = path
    return dict(sorted(out.items()))


class TestWheel(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="secretmem-wheel-")
        self.pythons = cpythons()
        if not self.pythons:
            self.skipTest("no CPython 3.8+ other than Debian's found (set SECRETMEM_TEST_PYTHONS "
                          "to test the wheel with one)")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def make_wheel(self, python, out):
        r = subprocess.run(["make", "-s", "wheel", f"PYTHON={python}", f"WHEEL_OUT={out}"],
                           cwd=pyutil.TOP, capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        wheel = os.path.join(out, f"secretmem-{pyutil.version()}-py3-none-any.whl")
        self.assertEqual(r.stdout.strip().splitlines()[-1], wheel)
        return wheel

    def run_program(self, python, where):
        env = pyutil.child_env()
        if where.endswith("venv"):
            del env["PYTHONPATH"]
        else:
            env["PYTHONPATH"] = where
        r = subprocess.run([python, "-c", PROGRAM, where], input="hunter2\n", capture_output=True,
                           text=True, env=env, timeout=60, start_new_session=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stderr, "", "stderr")  # the prompt was ""
        return r.stdout.strip()

    def test_wheel_with_other_cpythons(self):
        print(f"\nCPythons: {', '.join(f'{a}.{b} {p}' for (a, b), p in self.pythons.items())}",
              file=sys.stderr)
        wheels = set()
        for (major, minor), python in self.pythons.items():
            with self.subTest(python=python):
                out = os.path.join(self.tmp, f"wheel-{major}.{minor}")
                wheel = self.make_wheel(python, out)
                with open(wheel, "rb") as f:
                    wheels.add(f.read())
                target = os.path.join(self.tmp, f"target-{major}.{minor}")
                r = subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-cache-dir",
                                    "--disable-pip-version-check", "--target", target, wheel],
                                   capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                got = self.run_program(python, target)
                print(f"{python}: {got}", file=sys.stderr)
                self.assertEqual(got, f"({major}, {minor}) True True 7 0")
        self.assertEqual(len(wheels), 1, "the wheel differs with the Python that made it")

    def test_venv_of_the_oldest(self):
        (major, minor), python = next(iter(self.pythons.items()))
        wheel = self.make_wheel(python, os.path.join(self.tmp, "wheel"))
        venv = os.path.join(self.tmp, "venv")
        r = subprocess.run([python, "-m", "venv", venv], capture_output=True, text=True)
        if r.returncode != 0 and "ensurepip" in r.stdout + r.stderr:
            self.skipTest(f"{python} has no ensurepip")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-index", wheel],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        got = self.run_program(os.path.join(venv, "bin", "python"), venv)
        self.assertEqual(got, f"({major}, {minor}) True True 7 0")


if __name__ == "__main__":
    unittest.main()
