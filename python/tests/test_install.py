# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""The documented install paths with Debian's python3 and no network:

    make wheel                                   (the in-tree build backend)
    python3 -m venv VENV
    VENV/bin/pip install --no-index build/wheel/secretmem-*.whl
    VENV/bin/pip install ./python                (build isolation on, no setuptools)

and what an installed package gives a type checker: mypy --strict sees the
annotations through py.typed (without the marker it refuses the import).
Other CPythons (3.8 and later) take the same wheel: test_wheel."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

import pyutil

BACKEND = os.path.join(pyutil.PYDIR, "build_backend", "secretmem_backend.py")

SMOKE = """import secretmem, sys
with secretmem.Secret(16) as s:
    s.view()[:] = b'0123456789abcdef'
    print(s == b'0123456789abcdef', secretmem.__file__)
"""

GOOD = """import hmac
import secretmem

def mac(key: secretmem.Secret, msg: bytes) -> bytes:
    return hmac.digest(key.view(), msg, "sha256")

with secretmem.Secret(32) as k:
    size: int = k.size
    print(mac(k, b"m"), size, secretmem.backend.upper(), secretmem.stats()["backend"])
    secretmem.set_require(False)
"""

BAD = """import secretmem
s = secretmem.Secret("32")
secretmem.set_require(1)
n: str = s.size
"""


def have(module):
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def build_wheel(outdir, python=None):
    r = subprocess.run([python or sys.executable, BACKEND, "wheel", outdir], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"the backend failed: {r.stdout}{r.stderr}")
    return r.stdout.strip()


class TestInstall(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="secretmem-install-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def venv(self):
        for module, pkg in (("venv", "python3-venv"), ("ensurepip", "python3-venv")):
            if not have(module):
                self.skipTest(f"no {module} module (Debian: apt install {pkg})")
        venv = os.path.join(self.tmp, "venv")
        if not os.path.exists(venv):
            subprocess.run([sys.executable, "-m", "venv", venv], check=True, capture_output=True)
        return venv

    def env(self):
        env = pyutil.child_env()
        del env["PYTHONPATH"]
        return env

    def run_smoke(self, venv):
        r = subprocess.run([os.path.join(venv, "bin", "python"), "-c", SMOKE], capture_output=True,
                           text=True, env=self.env(), cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        ok, where = r.stdout.split()
        self.assertEqual(ok, "True")
        self.assertTrue(where.startswith(os.path.join(venv, "lib")), where)
        self.assertIn("site-packages", where)

    def test_1_wheel_offline(self):
        wheel = build_wheel(os.path.join(self.tmp, "wheel"))
        self.assertEqual(os.path.basename(wheel), f"secretmem-{pyutil.version()}-py3-none-any.whl")
        with zipfile.ZipFile(wheel) as zf:
            names = sorted(zf.namelist())
        info = f"secretmem-{pyutil.version()}.dist-info/"
        self.assertEqual(names, sorted([info + n for n in ("LICENSE", "METADATA", "RECORD", "WHEEL")] +
                                       ["secretmem/__init__.py", "secretmem/_getpass.py", "secretmem/_lib.py",
                                        "secretmem/py.typed"]),
                         "the wheel holds the package and its metadata only (no C library)")
        venv = self.venv()
        r = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-index", wheel],
                           capture_output=True, text=True, env=self.env(), cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.run_smoke(venv)

    def test_2_pip_install_source_dir(self):
        # build isolation on and no --no-index: the in-tree backend needs
        # nothing, so pip fetches nothing
        src = os.path.join(self.tmp, "python")
        shutil.copytree(pyutil.PYDIR, src, ignore=shutil.ignore_patterns("__pycache__", "tests"))
        shutil.copy(os.path.join(pyutil.TOP, "LICENSE"), os.path.join(self.tmp, "LICENSE"))
        before = sorted(os.walk(src))
        venv = self.venv()
        r = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--force-reinstall", src],
                           capture_output=True, text=True, env=self.env(), cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(os.walk(src)), before, "pip left files in the source directory")
        self.run_smoke(venv)

    def test_3_mypy_through_py_typed(self):
        if not have("mypy"):
            self.skipTest("no mypy (Debian: apt install python3-mypy; sh scripts/deps.sh test)")
        venv = self.venv()
        if not os.path.exists(os.path.join(venv, "bin", "pip")):
            self.skipTest("no venv")
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-index", "--force-reinstall",
                        build_wheel(os.path.join(self.tmp, "wheel"))], check=True, capture_output=True)
        progs = {}
        for name, text in (("good.py", GOOD), ("bad.py", BAD)):
            progs[name] = os.path.join(self.tmp, name)
            with open(progs[name], "w") as f:
                f.write(text)

        def mypy(prog):
            env = self.env()
            env["MYPY_CACHE_DIR"] = os.path.join(self.tmp, "mypy-cache")
            return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                                   "--python-executable", os.path.join(venv, "bin", "python"), prog],
                                  capture_output=True, text=True, env=env, cwd=self.tmp)
        r = mypy(progs["good.py"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = mypy(progs["bad.py"])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn('Argument 1 to "Secret" has incompatible type "str"; expected "int"', r.stdout)
        self.assertIn('Argument 1 to "set_require" has incompatible type "int"', r.stdout)
        self.assertIn('Incompatible types in assignment (expression has type "int", variable has type "str")',
                      r.stdout)
        # the control: without py.typed mypy does not use the installed package
        r = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                            "import os, secretmem; os.remove(os.path.join(os.path.dirname(secretmem.__file__), "
                            "'py.typed'))"], env=self.env(), capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = mypy(progs["good.py"])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("missing library stubs or py.typed marker", r.stdout)

    def test_backend_metadata(self):
        # the backend's reading of pyproject.toml's [project] is TOML's
        sys.path.insert(0, os.path.dirname(BACKEND))
        try:
            import secretmem_backend
        finally:
            sys.path.pop(0)
        try:
            import tomllib
        except ImportError:
            self.skipTest("no tomllib (Python < 3.11) to compare with")
        with open(os.path.join(pyutil.PYDIR, "pyproject.toml"), "rb") as f:
            self.assertEqual(secretmem_backend.project(), tomllib.load(f)["project"])
        self.assertEqual(secretmem_backend.version(), pyutil.version())
        # a version in pyproject.toml other than __version__ stops the build
        src = os.path.join(self.tmp, "python-bad")
        shutil.copytree(pyutil.PYDIR, src, ignore=shutil.ignore_patterns("__pycache__", "tests"))
        with open(os.path.join(src, "pyproject.toml")) as f:
            text = f.read()
        with open(os.path.join(src, "pyproject.toml"), "w") as f:
            f.write(text.replace(f'version = "{pyutil.version()}"', 'version = "9.9.9"'))
        r = subprocess.run([sys.executable, os.path.join(src, "build_backend", "secretmem_backend.py"), "wheel",
                            os.path.join(self.tmp, "bad")], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"pyproject.toml says version 9.9.9, secretmem/__init__.py {pyutil.version()}", r.stderr)

    def test_mypy_strict_on_the_package(self):
        if not have("mypy"):
            self.skipTest("no mypy (Debian: apt install python3-mypy; sh scripts/deps.sh test)")
        env = self.env()
        env["MYPY_CACHE_DIR"] = os.path.join(self.tmp, "mypy-cache-pkg")
        r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "-p", "secretmem"],
                           capture_output=True, text=True, env=env, cwd=pyutil.PYDIR)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("Success: no issues found", r.stdout)


if __name__ == "__main__":
    unittest.main()
