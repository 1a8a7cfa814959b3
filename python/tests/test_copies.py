# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""The table "Which calls copy a secret" of python/README.md, row by row.

The table is this test's input: every call in its first column has a
snippet here (and every snippet a call there), and the verdict in its second
column must be what a root scan sees.  One child interpreter runs the rows
one after the other; for each, a fresh random key (letters and digits, so
that it decodes as text; 48 bytes, or 32 where the call takes no other
length, and so unlike a 32-byte digest, which could take the memory of a
freed copy of a 32-byte key before the scan) is read from a file into a new Secret
with readinto (unbuffered), the call runs, and a second process reads every
readable mapping of the child (/proc/PID/mem) for the key, its hex text and
its base64 text before the next row starts:

  none       no fragment of any of the three is found;
  yes        every 16-byte piece of the key (or, for a row that makes
             text, of that text) is found;
  TypeError  the call refuses the memoryview.

A verdict that says the object keeps `v` is checked too: close() raises
BufferError while the object lives.  The rows marked yes are the control:
they show the scan finds copies."""
import base64
import json
import os
import re
import secrets
import string
import subprocess
import sys
import tempfile
import unittest

import pyutil

README = os.path.join(pyutil.PYDIR, "README.md")
HEADING = "## Which calls copy a secret"

# call (as written in the README) -> (code, needle[, key size, default 48]):
# the code runs with v, s, size,
# path, load(view), keep (a list the child keeps), msg, salt, n, flags (a set
# reported to the test) and the modules imported in CHILD; an object left in
# `held` is checked for keeping v (close() refused while it lives, allowed
# after).  needle: which form of the key a "yes" row must leave (raw, hex,
# b64).
SNIPPETS = {
    'open(path, "rb", buffering=0).readinto(v)': ("load(v)", "raw"),
    "os.readv(fd, [v])": ("fd = os.open(path, os.O_RDONLY)\nassert os.readv(fd, [v]) == size\nos.close(fd)", "raw"),
    "sock.recv_into(v)": ("a, b = socket.socketpair()\nfd = os.open(path, os.O_RDONLY)\n"
                          "os.sendfile(a.fileno(), fd, 0, size)  # file to socket inside the kernel\n"
                          "os.close(fd)\nassert b.recv_into(v) == size\na.close()\nb.close()", "raw"),
    "os.write(fd, v)": ("load(v)\nfd = os.open('/dev/null', os.O_WRONLY)\nassert os.write(fd, v) == size\n"
                        "os.close(fd)", "raw"),
    "sock.sendall(v)": ("load(v)\na, b = socket.socketpair()\na.sendall(v)\nt = secretmem.Secret(size)\n"
                        "w = t.view()\nassert b.recv_into(w) == size and w == v\nw.release()\na.close()\nb.close()",
                        "raw"),
    "hmac.compare_digest(v, other)": ("load(v)\nt = secretmem.Secret(size)\nother = t.view()\nload(other)\n"
                                      "assert hmac.compare_digest(v, other)", "raw"),
    "s == other": ("load(v)\nt = secretmem.Secret(size)\nother = t.view()\nload(other)\nassert s == other\n"
                   "assert s == t", "raw"),
    'hmac.digest(v, msg, "sha256")': ('load(v)\nkeep.append(hmac.digest(v, msg, "sha256"))', "raw"),
    'hashlib.pbkdf2_hmac("sha256", v, salt, n)': ('load(v)\nkeep.append(hashlib.pbkdf2_hmac("sha256", v, salt, n))',
                                                  "raw"),
    "hashlib.scrypt(v, salt=salt, n=n, r=8, p=1)": ("load(v)\nkeep.append(hashlib.scrypt(v, salt=salt, n=n, r=8, p=1))",
                                                    "raw"),
    "hashlib.sha256(v).digest()": ("load(v)\nkeep.append(hashlib.sha256(v).digest())", "raw"),
    "(ctypes.c_char * len(v)).from_buffer(v)": ("load(v)\nc = (ctypes.c_char * len(v)).from_buffer(v)\n"
                                                "keep.append(ctypes.addressof(c))\ndel c", "raw"),
    "AESGCM(v)": ("load(v)\nfrom cryptography.hazmat.primitives.ciphers.aead import AESGCM\n"
                  "held = AESGCM(v)\nkeep.append(held.encrypt(b'n' * 12, msg, None))", "raw", 32),
    "ChaCha20Poly1305(v)": ("load(v)\nfrom cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305\n"
                            "held = ChaCha20Poly1305(v)\nkeep.append(held.encrypt(b'n' * 12, msg, None))",
                            "raw", 32),
    "HMAC(v, SHA256())": ("load(v)\nfrom cryptography.hazmat.primitives.hmac import HMAC\n"
                          "from cryptography.hazmat.primitives.hashes import SHA256\n"
                          "held = HMAC(v, SHA256())\nheld.update(msg)\nkeep.append(held.copy().finalize())", "raw"),
    "h = hashlib.sha256(v)": ("load(v)\nh = hashlib.sha256(v)\nkeep.append(h)", "raw"),
    "h = hashlib.blake2b(msg, key=v)": ("load(v)\nh = hashlib.blake2b(msg, key=v)\nkeep.append(h)", "raw"),
    "h = hashlib.blake2s(msg, key=v)": ("load(v)\nh = hashlib.blake2s(msg, key=v)\nkeep.append(h)", "raw", 32),
    "Ed25519PrivateKey.from_private_bytes(v)": (
        "load(v)\nfrom cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey\n"
        "k = Ed25519PrivateKey.from_private_bytes(v)\nkeep.append(k)", "raw", 32),
    "bytes(v)": ("load(v)\nkeep.append(bytes(v))", "raw"),
    "v.tobytes()": ("load(v)\nkeep.append(v.tobytes())", "raw"),
    "bytearray(v)": ("load(v)\nkeep.append(bytearray(v))", "raw"),
    "v.hex()": ("load(v)\nkeep.append(v.hex())", "hex"),
    "base64.b64encode(v)": ("load(v)\nkeep.append(base64.b64encode(v))", "b64"),
    'str(v, "ascii")': ('load(v)\nkeep.append(str(v, "ascii"))', "raw"),
    "codecs.decode(v)": ("load(v)\nkeep.append(codecs.decode(v))", "raw"),
    'struct.unpack_from(f"{len(v)}s", v)': ('load(v)\nkeep.append(struct.unpack_from(f"{len(v)}s", v))', "raw"),
    "os.read(fd, len(v))": ("fd = os.open(path, os.O_RDONLY)\nkeep.append(os.read(fd, len(v)))\nos.close(fd)", "raw"),
    "f.read()": ("with open(path, 'rb') as f:\n    keep.append(f.read())", "raw"),
    'hmac.new(v, msg, "sha256")': ('load(v)\ntry:\n    hmac.new(v, msg, "sha256")\nexcept TypeError:\n'
                                   '    flags.add("TypeError")', "raw"),
    "SecretBox(v)": ("load(v)\nimport nacl.secret\ntry:\n    nacl.secret.SecretBox(v)\nexcept TypeError:\n"
                     '    flags.add("TypeError")', "raw", 32),
}

CHILD = r"""
import base64, codecs, ctypes, hashlib, hmac, json, os, socket, struct, sys, secretmem
keep = []
def load(view):
    with open(path, "rb", buffering=0) as f:
        assert f.readinto(view) == size
print("ready", flush=True)
for line in sys.stdin:
    row = json.loads(line)
    path, size = row["path"], row["size"]
    s = secretmem.Secret(size)
    v = s.view()
    flags = set()
    ns = dict(globals(), s=s, v=v, path=path, size=size, flags=flags, msg=b"message", salt=b"salt" * 4, n=1024)
    try:
        exec(row["code"], ns)
    except ImportError as e:
        flags.add("missing " + e.name)
    held = ns.pop("held", None)
    if held is not None:
        # does the object keep the view?  close() with no other view left
        del ns["v"], v
        try:
            s.close()
            flags.add("closed-while-held")
        except BufferError:
            flags.add("BufferError")
        del held
        s.close()
    print("done", *sorted(flags), flush=True)
"""


def key(size):
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(size)).encode()


def readme_rows():
    """[(calls, verdict)] of the table under HEADING in python/README.md."""
    with open(README) as f:
        text = f.read()
    start = text.index(HEADING)
    end = text.find("\n## ", start + len(HEADING))
    rows = []
    for line in text[start:end if end >= 0 else None].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not line.startswith("| `"):
            continue
        rows.append((re.findall(r"`([^`]+)`", cells[0]), cells[1]))
    return rows


class TestCopies(unittest.TestCase):
    def test_table_matches_snippets(self):
        rows = readme_rows()
        calls = [c for cs, _ in rows for c in cs]
        self.assertEqual(len(calls), len(set(calls)), "a call is in two rows")
        self.assertEqual(sorted(calls), sorted(SNIPPETS),
                         "python/README.md's table and this test's snippets must list the same calls")
        for cs, verdict in rows:
            self.assertRegex(verdict, r"^(none|yes|TypeError)\b", f"row {cs}")

    def test_scan_each_row(self):
        pyutil.need_root(self, "the scan reads another process's memory")
        pyutil.need_secret_backend(self)
        rows = readme_rows()
        tmp = tempfile.mkdtemp(prefix="secretmem-copies-")
        child = subprocess.Popen([sys.executable, "-c", CHILD], env=pyutil.child_env(), stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, preexec_fn=pyutil.no_core)
        results = []
        try:
            self.assertEqual(child.stdout.readline().strip(), "ready")
            for i, (calls, verdict) in enumerate(rows):
                for call in calls:
                    code, needle, size = (SNIPPETS[call] + (48,))[:3]
                    k = key(size)
                    path = os.path.join(tmp, f"key{i}")
                    with open(path, "wb") as f:
                        f.write(k)
                    child.stdin.write(json.dumps({"code": code, "path": path, "size": size}) + "\n")
                    child.stdin.flush()
                    done = child.stdout.readline().split()
                    os.unlink(path)
                    self.assertEqual(done[:1], ["done"], f"{call}: the child failed")
                    flags = set(done[1:])
                    forms = {"raw": k, "hex": k.hex().encode(), "b64": base64.b64encode(k)}
                    # one needle per fragment: each is counted on its own
                    pieces = {(form, i): text[i:i + pyutil.FRAG] for form, text in forms.items()
                              for i in range(0, len(text), pyutil.FRAG)}
                    hits, _ = pyutil.scan(child.pid, pieces)
                    found = {form: [hits[(f, i)] for f, i in sorted(pieces) if f == form] for form in forms}
                    results.append((call, verdict, needle, found, flags))
        finally:
            child.stdin.close()
            rc = child.wait(60)
            child.stdout.close()
            os.rmdir(tmp)
        self.assertEqual(rc, 0)
        for call, verdict, needle, found, flags in results:
            print(f"\n{call:45} {found}  {' '.join(sorted(flags))}", end="", file=sys.stderr)
        print(file=sys.stderr)
        for call, verdict, needle, found, flags in results:
            with self.subTest(call=call):
                missing = [f for f in flags if f.startswith("missing ")]
                if missing:
                    self.skipTest(f"{call}: {missing[0]} (Debian: python3-cryptography, python3-nacl)")
                kind = verdict.split()[0].rstrip(";:,")
                if kind == "none":
                    self.assertEqual(sum(map(sum, found.values())), 0, f"{call}: copies found: {found}")
                elif kind == "yes":
                    self.assertTrue(all(found[needle]), f"{call}: the {needle} copy was not found whole: {found}")
                else:
                    self.assertIn("TypeError", flags, f"{call} took the view")
                self.assertEqual("BufferError" in flags, "BufferError" in verdict,
                                 f"{call}: whether close() is refused while the object lives")


if __name__ == "__main__":
    unittest.main()
