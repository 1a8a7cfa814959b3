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


FRAG = 16


def scan(pid, needles):
    """A root scan of another process, as test/scan.c does for C programs:
    {name: number of FRAG-byte fragments of needles[name] found} over every
    readable mapping of pid (read through /proc/PID/mem), and the list of
    (start, end, errno) of the mappings whose read failed (secret memory:
    EIO)."""
    frags = {name: [n[i:i + FRAG] for i in range(0, len(n), FRAG)] for name, n in needles.items()}
    found = {name: 0 for name in needles}
    refused = []
    with open(f"/proc/{pid}/maps") as m:
        maps = [line.split() for line in m]
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for fields in maps:
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if fields[1][0] != "r" or end - start > (1 << 32):
                continue
            chunk = 1 << 20
            tail = b""
            for off in range(start, end, chunk):
                try:
                    mem.seek(off)
                    data = mem.read(min(chunk, end - off))
                except OSError as e:
                    refused.append((start, end, e.errno))
                    break
                data = tail + data
                for name, fl in frags.items():
                    found[name] += sum(data.count(f) for f in fl)
                tail = data[-(FRAG - 1):]
    return found, refused


def need_root(tc, why):
    """Skip the test unless running as root."""
    if os.geteuid() != 0:
        tc.skipTest(f"needs root: {why}")


def version():
    """The binding's version (__version__, which the wheel's name carries)."""
    return secretmem.__version__
