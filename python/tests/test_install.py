# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""The documented install path on Debian 12 (system Python "externally
managed", no PyPI): a venv that sees the system's setuptools, and pip without
build isolation or an index:
    python3 -m venv --system-site-packages VENV
    VENV/bin/python -m pip install --no-build-isolation --no-index ./python
(--without-pip here: the system's pip, seen through the system site-packages,
installs into the venv; faster than ensurepip)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import pyutil


def have(module):
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


class TestInstall(unittest.TestCase):
    def test_pip_install_in_venv(self):
        for module, pkg in (("venv", "python3-venv"), ("pip", "python3-pip"),
                            ("setuptools", "python3-setuptools")):
            if not have(module):
                self.skipTest(f"no {module} module (Debian: apt install {pkg})")
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "python")
            shutil.copytree(pyutil.PYDIR, src, ignore=shutil.ignore_patterns("__pycache__", "tests"))
            venv = os.path.join(tmp, "venv")
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv],
                           check=True)
            py = os.path.join(venv, "bin", "python")
            env = pyutil.child_env()
            del env["PYTHONPATH"]
            r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", src],
                               capture_output=True, text=True, env=env, cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = subprocess.run([py, "-c", "import secretmem, hmac\n"
                                "with secretmem.Secret(16) as s:\n"
                                "    s.view()[:] = b'0123456789abcdef'\n"
                                "    print(s == b'0123456789abcdef', secretmem.__file__)\n"],
                               capture_output=True, text=True, env=env, cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            ok, where = r.stdout.split()
            self.assertEqual(ok, "True")
            self.assertTrue(where.startswith(os.path.join(venv, "lib")), where)
            self.assertIn("site-packages", where)


if __name__ == "__main__":
    unittest.main()
