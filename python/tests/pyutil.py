# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""Helpers shared by the Python tests (python/tests/test_*.py)."""
import os
import resource
import subprocess
import sys

import secretmem

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PYDIR = os.path.join(TOP, "python")
HEADER = os.path.join(TOP, "include", "secretmem.h")


def need_secret_backend(tc):
    """Skip the test unless memfd_secret works here; a failure instead with
    SECRETMEM_TEST_REQUIRE_KERNEL=1 (as in the C tests)."""
    if secretmem.supported():
        return
    if os.environ.get("SECRETMEM_TEST_REQUIRE_KERNEL") == "1":
        tc.fail("memfd_secret is not usable and SECRETMEM_TEST_REQUIRE_KERNEL=1")
    tc.skipTest("memfd_secret is not usable on this kernel")


def child_env(**extra):
    """The environment of a Python child that imports this secretmem with the
    library this process loaded."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PYDIR
    env["SECRETMEM_LIBRARY"] = os.path.abspath(secretmem.lib.path) \
        if os.path.sep in secretmem.lib.path else secretmem.lib.path
    env.update(extra)
    return env


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_child(code, *args, timeout=60, **kw):
    """Run code in a new interpreter (no core dump); CompletedProcess."""
    return subprocess.run([sys.executable, "-c", code, *args], env=child_env(),
                          capture_output=True, text=True, timeout=timeout,
                          preexec_fn=no_core, **kw)
