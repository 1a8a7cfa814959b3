# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""Secrets across os.fork() and multiprocessing, under each fork policy.

The child of os.fork() ends through the interpreter's normal exit (module
teardown runs every __del__), with allocator- and region-backed Secrets
alive, closed, and with views alive: it must exit 0 with nothing on
stderr, and the parent's secrets must be intact afterwards.  What the child
sees is the policy's: copy - the value, its own copy (writes stay in the
child); share - the parent's pages (writes reach the parent; closing only
forgets); drop - nothing: view() raises ValueError, close() only forgets,
and touching a view made before the fork kills the child (SIGSEGV).
multiprocessing: the fork start method passes a Secret to the child the
same way; spawn and forkserver refuse it (TypeError: a Secret cannot be
pickled); a pipe written with os.write and read with os.readv into a
Secret of the child hands it over under every start method."""
import hmac
import multiprocessing
import os
import signal
import subprocess
import sys
import unittest

import pyutil
import secretmem

SCENARIO = r"""
import os, sys, hmac, secretmem
how = sys.argv[1]
if how.startswith("set_option:"):
    # the policy set at run time, after secrets exist (FORK can change at any time)
    policy = how.split(":")[1]
else:
    policy = os.environ["SECRETMEM_FORK"]
A, R = b"A" * 32, b"R" * 40
a = secretmem.Secret(32)
a.view()[:] = A
r = secretmem.Secret(40, region=True)
r.view()[:] = R
b = secretmem.Secret(16)                # left open, with a view, in both processes
kept_view = b.view()
kept_view[:] = b"B" * 16
if how.startswith("set_option:"):
    secretmem.lib.secretmem_set_option(secretmem.OPT_FORK,
        {"copy": secretmem.FORK_COPY, "share": secretmem.FORK_SHARE, "drop": secretmem.FORK_DROP}[policy])
pid = os.fork()
if pid == 0:
    out = []
    if policy == "drop":
        for s in (a, r, b):
            try:
                s.view()
                out.append("view")
            except ValueError:
                out.append("ValueError")
    else:
        out.append("A" if a == A else "a?")
        out.append("R" if r == R else "r?")
        a.view()[:] = b"C" * 32      # copy: the child's own; share: the parent's too
    live = secretmem.stats()["live_allocations"]
    a.close()                         # copy: freed (and zeroized); share, drop: forgotten
    out.append("freed %d" % (live - secretmem.stats()["live_allocations"]))
    r.close()
    out.append("closed" if a.closed and r.closed else "open")
    n = secretmem.Secret(8)           # the child's allocator works
    n.view()[:] = b"12345678"
    out.append("new" if n == b"12345678" else "new?")
    print("child", " ".join(out), flush=True)
    sys.exit(0)                       # interpreter exit: b, kept_view, n freed by __del__
_, status = os.waitpid(pid, 0)
print("status", os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status))
print("parent", "A" if a == A else ("C" if a == b"C" * 32 else "a-zero" if a == bytes(32) else "a?"),
      "R" if r == R else "r?", "B" if b == b"B" * 16 else "b?", flush=True)
kept_view.release()
for s in (a, r, b):
    s.close()
print("parent closed", flush=True)
"""

TOUCH = r"""
import os, sys, secretmem
a = secretmem.Secret(32)
v = a.view()
v[:] = b"A" * 32
pid = os.fork()
if pid == 0:
    print("touching", flush=True)
    x = v[0]                          # dropped: SIGSEGV
    print("survived", x, flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("child signal", os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0)
"""


def scenario(policy, how="env"):
    env = pyutil.child_env(SECRETMEM_FORK="copy" if how != "env" else policy)
    arg = how if how != "env" else "env"
    return subprocess.run([sys.executable, "-c", SCENARIO, arg], env=env, capture_output=True,
                          text=True, timeout=60, preexec_fn=pyutil.no_core)


class TestOsFork(unittest.TestCase):
    def check(self, r, child, parent):
        self.assertEqual(r.stderr, "", "the child or the parent wrote to stderr")
        self.assertEqual(r.returncode, 0, r.stdout)
        lines = r.stdout.splitlines()
        self.assertEqual(lines, [f"child {child}", "status 0", f"parent {parent}", "parent closed"])

    def test_copy(self):
        # the child's own copy: it reads the value, its write stays in the child
        self.check(scenario("copy"), "A R freed 1 closed new", "A R B")

    def test_share(self):
        # the parent's pages: the child's write reaches the parent, but the
        # child's close() and exit do not zeroize them
        self.check(scenario("share"), "A R freed 0 closed new", "C R B")

    def test_drop(self):
        # nothing in the child: view() refuses, close() forgets, exit is clean
        self.check(scenario("drop"), "ValueError ValueError ValueError freed 0 closed new", "A R B")

    def test_set_option_at_run_time(self):
        for policy, child, parent in (("drop", "ValueError ValueError ValueError freed 0 closed new", "A R B"),
                                      ("share", "A R freed 0 closed new", "C R B")):
            with self.subTest(policy=policy):
                self.check(scenario(policy, f"set_option:{policy}"), child, parent)

    def test_drop_touching_an_old_view_kills(self):
        r = subprocess.run([sys.executable, "-c", TOUCH], env=pyutil.child_env(SECRETMEM_FORK="drop"),
                           capture_output=True, text=True, timeout=60, preexec_fn=pyutil.no_core)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("touching", r.stdout)
        self.assertNotIn("survived", r.stdout)
        self.assertIn(f"child signal {int(signal.SIGSEGV)}", r.stdout)

    def test_touching_an_old_view_under_copy(self):
        # the control: the same program under copy reads the old view and lives
        r = pyutil.run_child(TOUCH)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("survived 65", r.stdout)
        self.assertIn("child signal 0", r.stdout)


# ---- multiprocessing ----------------------------------------------------------

def mp_read(s, q):
    """In the child: the HMAC of the secret under a known message (not the
    secret), and whether a write reaches the parent."""
    try:
        q.put(("digest", hmac.digest(s.view(), b"message", "sha256")))
    except ValueError as e:
        q.put(("ValueError", str(e)))
        return
    s.view()[:4] = b"kid!"


def mp_pipe(r, q):
    """In a spawn/forkserver child: the secret from a pipe, into a Secret."""
    s = secretmem.Secret(32)
    v = s.view()
    done = 0
    while done < 32:
        part = v[done:]
        n = os.readv(r.fileno(), [part])
        part.release()
        if n == 0:
            break
        done += n
    q.put(("digest", hmac.digest(v, b"message", "sha256"), done))
    v.release()
    s.close()


def mp_nothing():
    pass


class TestMultiprocessing(unittest.TestCase):
    KEY = bytes(range(32))

    def setUp(self):
        self.s = secretmem.Secret(32)
        self.s.view()[:] = self.KEY
        self.want = hmac.digest(self.KEY, b"message", "sha256")

    def tearDown(self):
        self.s.close()
        secretmem.lib.secretmem_set_option(secretmem.OPT_FORK, secretmem.FORK_COPY)

    def run_fork(self, policy):
        secretmem.lib.secretmem_set_option(secretmem.OPT_FORK, policy)
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=mp_read, args=(self.s, q))
        p.start()
        got = q.get(timeout=60)
        p.join(60)
        self.assertEqual(p.exitcode, 0)
        return got

    def test_fork_copy(self):
        self.assertEqual(self.run_fork(secretmem.FORK_COPY), ("digest", self.want))
        self.assertTrue(self.s == self.KEY, "the child's write reached the parent under copy")

    def test_fork_share(self):
        self.assertEqual(self.run_fork(secretmem.FORK_SHARE), ("digest", self.want))
        self.assertTrue(self.s == b"kid!" + self.KEY[4:], "share: the child's write is the parent's")

    def test_fork_drop(self):
        kind, text = self.run_fork(secretmem.FORK_DROP)
        self.assertEqual(kind, "ValueError")
        self.assertIn("dropped in this forked child", text)
        self.assertTrue(self.s == self.KEY)

    def test_spawn_forkserver_refuse_a_secret(self):
        for method in ("spawn", "forkserver"):
            with self.subTest(method=method):
                ctx = multiprocessing.get_context(method)
                p = ctx.Process(target=mp_read, args=(self.s, ctx.Queue()))
                with self.assertRaises(TypeError) as cm:
                    p.start()
                self.assertIn("cannot be pickled", str(cm.exception))
                if p.pid:  # forkserver: the child may exist, without the Secret
                    p.join(60)

    def test_pipe_hand_over(self):
        for method in ("fork", "spawn", "forkserver"):
            with self.subTest(method=method):
                ctx = multiprocessing.get_context(method)
                q = ctx.Queue()
                r, w = ctx.Pipe(duplex=False)
                p = ctx.Process(target=mp_pipe, args=(r, q))
                p.start()
                self.assertEqual(os.write(w.fileno(), self.s.view()), 32)
                w.close()
                got = q.get(timeout=60)
                p.join(60)
                r.close()
                self.assertEqual(p.exitcode, 0)
                self.assertEqual(got, ("digest", self.want, 32))


if __name__ == "__main__":
    unittest.main()
