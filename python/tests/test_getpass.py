# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""secretmem.getpass(): a password into a Secret, never a str or bytes.

Through a pseudo-terminal (pty.fork: the child's controlling terminal):
the prompt is shown, what is typed is not echoed, the terminal's echo is on
again afterwards - also after Ctrl-C (KeyboardInterrupt), which leaves no
allocation behind.  A non-terminal stdin (a pipe, in a new session without
a controlling terminal): the prompt goes to stderr, the line is read up to
the newline and no further, EOF before any byte is EOFError, a line over
max_len is consumed and refused with ValueError.

The scan (root): a second process reads every readable mapping of the child
after it read a password typed through the pty.  With secretmem.getpass()
no fragment of the password is found, and the Secret's page is refused to
the scanner (EIO); with getpass.getpass() (the control) the password is
found.  The same for a password given on a pipe."""
import errno
import hmac
import os
import pty
import secrets
import select
import signal
import string
import subprocess
import sys
import time
import unittest

import pyutil
import secretmem

CHILD = r"""
import getpass, hmac, os, sys, termios, secretmem
mode = sys.argv[1]
base = secretmem.stats()["live_allocations"]
try:
    if mode == "control":
        pw = getpass.getpass("pw: ")
        where = 0
    else:
        pw = secretmem.getpass("pw: ")
        where = pw._buf._secretmem_memory.address
    # as little as possible before the scan: a freed copy of the password
    # must not be overwritten by a new object (hence also its odd length)
    result = "got %d %d" % (len(pw), where)
except KeyboardInterrupt:
    pw = None
    result = "interrupted %d" % (secretmem.stats()["live_allocations"] - base)
echo = bool(termios.tcgetattr(0)[3] & termios.ECHO) if os.isatty(0) else None
print(result, "echo", echo, flush=True)
sys.stdin.readline()                    # the scan runs now
if pw is not None:                      # what was read (its HMAC, not the password)
    key = pw.encode() if mode == "control" else pw.view()
    print("digest", hmac.digest(key, b"m", "sha256").hex(), flush=True)
print("bye", flush=True)
"""


def password(n=200):
    # letters and digits: no character the terminal would act on
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(n))


class Pty:
    """A child interpreter running CHILD on a new pseudo-terminal."""

    def __init__(self, mode):
        env = pyutil.child_env()
        pid, fd = pty.fork()
        if pid == 0:  # the child: exec at once (no copy of this process's memory)
            try:
                os.execve(sys.executable, [sys.executable, "-c", CHILD, mode], env)
            finally:
                os._exit(127)
        self.pid, self.fd, self.out = pid, fd, b""

    def expect(self, text, timeout=30):
        end = time.monotonic() + timeout
        while text.encode() not in self.out:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise AssertionError(f"no {text!r} from the child; output so far {self.out!r}")
            try:
                data = os.read(self.fd, 4096)
            except OSError as e:
                if e.errno != errno.EIO:
                    raise
                data = b""
            if not data:
                raise AssertionError(f"the child closed the terminal before {text!r}: {self.out!r}")
            self.out += data
        return self.out.decode(errors="replace")

    def type(self, text):
        os.write(self.fd, text.encode())

    def finish(self):
        """Let the child end; (its wait status, its output after the wait)."""
        start = len(self.out)
        self.type("quit\n")
        try:
            self.expect("bye")
        finally:
            _, status = os.waitpid(self.pid, 0)
            os.close(self.fd)
        return status, self.out[start:].decode(errors="replace")


class TestTerminal(unittest.TestCase):
    def test_typed_password(self):
        pw = password()
        child = Pty("secret")
        child.expect("pw: ")
        child.type(pw + "\n")
        out = child.expect("echo True")
        self.assertIn(f"got {len(pw)} ", out)
        self.assertNotIn(pw, out, "the password was echoed")
        status, after = child.finish()
        self.assertEqual(status, 0)
        self.assertIn(f"digest {hmac.digest(pw.encode(), b'm', 'sha256').hex()}", after)

    def test_ctrl_c_restores_echo(self):
        child = Pty("secret")
        child.expect("pw: ")
        child.type("abc")
        time.sleep(0.2)
        child.type("\x03")                  # VINTR: SIGINT to the child
        out = child.expect("echo True")
        self.assertIn("interrupted 0 echo True", out, "echo not restored, or the buffer not freed")
        self.assertEqual(child.finish()[0], 0)


def run_pipe(code, data, **kw):
    env = pyutil.child_env()
    return subprocess.run([sys.executable, "-c", "import secretmem, sys\n" + code], input=data,
                          capture_output=True, env=env, timeout=60, start_new_session=True, **kw)


class TestPipe(unittest.TestCase):
    def test_line_and_the_rest(self):
        r = run_pipe("s = secretmem.getpass()\n"
                     "print(len(s), s == b'hunter2', repr(sys.stdin.read()))", b"hunter2\nrest\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.decode(), "7 True 'rest\\n'\n")
        self.assertEqual(r.stderr.decode(), "Password: ")

    def test_eof(self):
        r = run_pipe("s = secretmem.getpass('')\nprint(len(s), s == b'abc')", b"abc")
        self.assertEqual(r.stdout.decode(), "3 True\n", r.stderr)
        r = run_pipe("secretmem.getpass('')", b"")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(b"EOFError", r.stderr)
        r = run_pipe("s = secretmem.getpass('')\nprint(len(s), s.size)", b"\n")
        self.assertEqual(r.stdout.decode(), "0 0\n", r.stderr)

    def test_max_len(self):
        code = ("base = secretmem.stats()['live_allocations']\n"
                "try:\n"
                "    secretmem.getpass('', max_len=10)\n"
                "except ValueError as e:\n"
                "    print('ValueError', secretmem.stats()['live_allocations'] - base)\n"
                "s = secretmem.getpass('', max_len=10)\n"
                "print(len(s), s == b'0123456789', repr(sys.stdin.read()))\n")
        r = run_pipe(code, b"01234567890\n0123456789\nnext\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.decode(), "ValueError 0\n10 True 'next\\n'\n")


class TestScan(unittest.TestCase):
    def scan_child(self, mode, pty_mode=True):
        pw = password()
        if pty_mode:
            child = Pty(mode)
            child.expect("pw: ")
            child.type(pw + "\n")
            line = child.expect("echo")
            pid = child.pid
        else:
            env = pyutil.child_env()
            child = subprocess.Popen([sys.executable, "-c", CHILD, mode], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True, preexec_fn=pyutil.no_core)
            child.stdin.write(pw.encode() + b"\n")
            child.stdin.flush()
            line = child.stdout.readline().decode()
            pid = child.pid
        try:
            got = line[line.index("got"):].split()
            self.assertEqual(got[1], str(len(pw)), line)
            found, refused = pyutil.scan(pid, {"password": pw.encode()})
        finally:
            if pty_mode:
                status, after = child.finish()
            else:
                child.stdin.write(b"quit\n")
                child.stdin.close()
                after = child.stdout.read().decode()
                child.stderr.close()
                child.stdout.close()
                status = child.wait(60)
        self.assertEqual(status, 0)
        self.assertIn(f"digest {hmac.digest(pw.encode(), b'm', 'sha256').hex()}", after,
                      "the child did not read the password typed")
        print(f"\n{mode} ({'pty' if pty_mode else 'pipe'}): fragments of the password found "
              f"{found['password']}; {len(refused)} mappings refused", file=sys.stderr)
        return found["password"], refused, int(got[2])

    def setUp(self):
        pyutil.need_root(self, "the scan reads another process's memory")
        pyutil.need_secret_backend(self)

    def test_getpass_only_in_secret_memory(self):
        for pty_mode in (True, False):
            with self.subTest(pty=pty_mode):
                n, refused, addr = self.scan_child("secret", pty_mode)
                self.assertEqual(n, 0, "the password typed into secretmem.getpass was found")
                self.assertTrue(any(s <= addr < e and err == errno.EIO for s, e, err in refused),
                                f"the Secret's page at {addr:#x} was not refused to the scanner")

    def test_control_getpass_getpass_found(self):
        for pty_mode in (True, False):
            with self.subTest(pty=pty_mode):
                n, _, _ = self.scan_child("control", pty_mode)
                self.assertGreaterEqual(n, 13, "getpass.getpass()'s str was not found: the scan does not work")


if __name__ == "__main__":
    unittest.main()
