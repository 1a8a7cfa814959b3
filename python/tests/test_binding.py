# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""The binding: loading, declared signatures, the Secret object, errors."""
import ctypes
import errno
import gc
import hmac
import os
import pickle
import re
import subprocess
import sys
import tempfile
import unittest

import pyutil
import secretmem
from secretmem import Secret, _lib


def header_text():
    with open(pyutil.HEADER) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"#[^\n]*", " ", text)
    # attribute macros after a declaration (SECRETMEM_WARN_UNUSED, SECRETMEM_ALLOC_SIZE(1), ...)
    return re.sub(r"\bSECRETMEM_[A-Z_]+(\([^)]*\))?", " ", text)


def header_prototypes():
    """{name: (return type, [parameter types])} of every function declared."""
    protos = {}
    for m in re.finditer(r"([A-Za-z_][\w\s\*]*?)\b(secretmem_\w+)\s*\(([^)]*)\)\s*;", header_text()):
        ret, name, params = " ".join(m.group(1).split()), m.group(2), m.group(3).strip()
        plist = [] if params in ("", "void") else [" ".join(p.split()) for p in params.split(",")]
        protos[name] = (ret, plist)
    return protos


@unittest.skipUnless(os.path.exists(pyutil.HEADER), "include/secretmem.h not found (not run from the tree)")
class TestDeclarations(unittest.TestCase):
    def test_every_function_declared(self):
        protos = header_prototypes()
        self.assertGreater(len(protos), 20)
        self.assertEqual(sorted(protos), sorted(_lib.SIGNATURES),
                         "python/secretmem/_lib.py SIGNATURES must list every function of the header")
        for name, (ret, params) in protos.items():
            fn = getattr(secretmem.lib, name)
            with self.subTest(name=name):
                self.assertEqual(len(fn.argtypes), len(params), f"{name}: argument count")
                for ctype, ptype in zip(fn.argtypes, params):
                    if ptype.startswith("size_t"):
                        self.assertIs(ctype, ctypes.c_size_t, f"{name}: {ptype}")
                    elif "*" in ptype:
                        self.assertTrue(ctype in (ctypes.c_void_p, ctypes.c_char_p) or
                                        issubclass(ctype, ctypes._Pointer), f"{name}: {ptype}")
                    elif ptype.startswith("long"):
                        self.assertIs(ctype, ctypes.c_long, f"{name}: {ptype}")
                if "*" in ret:
                    want = ctypes.c_char_p if ret == "const char *" else ctypes.c_void_p
                    self.assertIs(fn.restype, want, f"{name}: returns {ret}")
                elif ret == "size_t":
                    self.assertIs(fn.restype, ctypes.c_size_t, name)
                elif ret == "long":
                    self.assertIs(fn.restype, ctypes.c_long, name)
                elif ret == "int":
                    self.assertIs(fn.restype, ctypes.c_int, name)
                elif ret == "void":
                    self.assertIsNone(fn.restype, name)

    def test_stats_layout(self):
        m = re.search(r"struct secretmem_stats\s*\{(.*?)\};", header_text(), re.S)
        fields = re.findall(r"(size_t|int)\s+(\w+)(\[\d+\])?\s*;", m.group(1))
        want = [(n, {"size_t": ctypes.c_size_t, "int": ctypes.c_int}[t], a) for t, n, a in fields]
        got = _lib.Stats._fields_
        self.assertEqual([n for n, _, _ in want], [n for n, _ in got],
                         "secretmem._lib.Stats must match struct secretmem_stats field for field")
        for (n, t, a), (_, ctype) in zip(want, got):
            if a:
                self.assertIs(ctype._type_, t, n)
                self.assertEqual(ctype._length_, int(a[1:-1]), n)
            else:
                self.assertIs(ctype, t, n)


class TestLoading(unittest.TestCase):
    def test_library_env_first(self):
        path = os.path.abspath(secretmem.lib.path) if os.sep in secretmem.lib.path else None
        if path:
            r = pyutil.run_child("import secretmem; print(secretmem.lib.path)")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip(), path)
        r = subprocess.run([sys.executable, "-c", "import secretmem"], capture_output=True, text=True,
                           env=pyutil.child_env(SECRETMEM_LIBRARY="/nonexistent/libsecretmem.so.1"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ImportError", r.stderr)
        self.assertIn("/nonexistent/libsecretmem.so.1", r.stderr)

    @unittest.skipUnless(os.path.exists(pyutil.HEADER), "not run from the tree")
    def test_build_tree_found(self):
        env = pyutil.child_env()
        del env["SECRETMEM_LIBRARY"]
        build = os.environ.get("SECRETMEM_BUILD") or "build"
        want = os.path.join(pyutil.TOP, build, "libsecretmem.so.1")
        if not os.path.exists(want):
            self.skipTest(f"{want} not built")
        r = subprocess.run([sys.executable, "-c", "import secretmem; print(secretmem.lib.path)"],
                           capture_output=True, text=True, env=env, cwd="/")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.path.realpath(r.stdout.strip()), os.path.realpath(want))


class TestSecret(unittest.TestCase):
    def test_round_trip(self):
        for region in (False, True):
            with self.subTest(region=region), Secret(48, region=region) as s:
                self.assertEqual(len(s), 48)
                v = s.view()
                self.assertEqual((v.format, v.nbytes, v.readonly), ("B", 48, False))
                self.assertTrue(hmac.compare_digest(v, bytes(48)), "zero-filled at birth")
                v[:] = bytes(range(48))
                self.assertEqual(v.tobytes(), bytes(range(48)))
                self.assertTrue(s == bytes(range(48)))
                self.assertTrue(s == bytearray(range(48)))
                self.assertFalse(s == bytes(range(1, 49)))
                self.assertFalse(s == bytes(47))
                self.assertEqual(s.region, region)
                self.assertIn(s.backend, ("secret", "fallback"))
                v.release()

    def test_readinto_file_and_random(self):
        data = os.urandom(100)
        with tempfile.NamedTemporaryFile() as f:
            f.write(data)
            f.flush()
            with Secret(100) as s, open(f.name, "rb", buffering=0) as raw:
                v = s.view()
                self.assertEqual(raw.readinto(v), 100)
                self.assertTrue(hmac.compare_digest(v, data))
                v.release()
        with Secret.random(64) as a, Secret.random(64) as b:
            self.assertFalse(a == b)
            self.assertFalse(a == bytes(64))

    def test_secret_equality(self):
        with Secret(16) as a, Secret(16, region=True) as b, Secret(17) as c:
            a.view()[:] = b"k" * 16
            b.view()[:] = b"k" * 16
            self.assertTrue(a == b)
            self.assertFalse(a == c)
            self.assertFalse(a != b)
            self.assertFalse(a == "kkkkkkkkkkkkkkkk")  # str: not comparable, not equal
            with self.assertRaises(TypeError):
                hash(a)

    def test_zero_on_close(self):
        keep = Secret(64)  # a neighbour keeps the slab page mapped
        s = Secret(64)
        addr = s._buf._secretmem_memory.address
        s.view()[:] = b"\xaa" * 64
        self.assertEqual(ctypes.string_at(addr, 64), b"\xaa" * 64)
        s.close()
        self.assertTrue(s.closed)
        self.assertEqual(secretmem.lib.secretmem_owns(addr), 0, "freed")
        self.assertEqual(ctypes.string_at(addr, 64), bytes(64), "zeroized when closed")
        with Secret(64) as again:
            self.assertTrue(again == bytes(64))
        keep.close()
        s.close()  # twice: a no-op

    def test_views_block_close(self):
        s = Secret(32)
        v = s.view()
        with self.assertRaises(BufferError):
            s.close()
        part = v[4:8]
        v.release()
        with self.assertRaises(BufferError):
            s.close()
        again = memoryview(part)
        del part
        with self.assertRaises(BufferError):
            s.close()
        del again
        s.close()
        with self.assertRaises(ValueError):
            s.view()

    def test_view_outlives_dropped_secret(self):
        base = secretmem.stats()["live_allocations"]
        s = Secret(24)
        v = s.view()
        v[:3] = b"abc"
        del s
        gc.collect()
        self.assertEqual(secretmem.stats()["live_allocations"], base + 1, "freed under a live view")
        self.assertEqual(v[:3].tobytes(), b"abc")
        del v
        self.assertEqual(secretmem.stats()["live_allocations"], base, "not freed after the last view")

    def test_context_manager(self):
        with self.assertRaises(KeyError):
            with Secret(8) as s:
                raise KeyError("x")
        self.assertTrue(s.closed)

    def test_no_copies_of_contents(self):
        with Secret(16) as s:
            s.view()[:] = b"TOPSECRETTOPSECR"
            for text in (repr(s), str(s)):
                self.assertNotIn("TOPSECRET", text)
                self.assertNotIn(b"TOPSECRET".hex(), text)
                self.assertIn("size=16", text)
            with self.assertRaises(TypeError):
                pickle.dumps(s)
            with self.assertRaises(TypeError):
                bytes(s)
        self.assertIn("closed", repr(s))

    def test_require(self):
        pyutil.need_secret_backend(self)
        with Secret(16, region=True, require=True) as s:
            self.assertEqual(s.backend, "secret")
        secretmem.set_require(True)
        try:
            self.assertEqual(secretmem.lib.secretmem_get_option(secretmem.OPT_REQUIRE), 1)
            self.assertEqual(secretmem.backend, "secret")
        finally:
            secretmem.set_require(False)
        self.assertEqual(secretmem.lib.secretmem_get_option(secretmem.OPT_REQUIRE), 0)

    def test_stats_and_module(self):
        self.assertIsInstance(secretmem.supported(), bool)
        self.assertIn(secretmem.backend, ("secret", "fallback", "none"))
        base = secretmem.stats()
        with Secret(100) as s:
            st = secretmem.stats()
            self.assertEqual(st["live_allocations"], base["live_allocations"] + 1)
            self.assertGreaterEqual(st["bytes_in_use"], base["bytes_in_use"] + 100)
            self.assertEqual(st["backend"], s.backend)
        self.assertGreaterEqual(secretmem.trim(), 0)
        if secretmem.supported():
            self.assertIsNone(secretmem.check_supported())
            self.assertEqual(secretmem.backend, "secret")


class TestErrors(unittest.TestCase):
    def assertErrno(self, err, fn, *args, **kwargs):
        with self.assertRaises(OSError) as cm:
            fn(*args, **kwargs)
        self.assertEqual(cm.exception.errno, err, f"{cm.exception!r}")
        self.assertEqual(cm.exception.strerror, os.strerror(err))
        return cm.exception

    def test_null_errno(self):
        # NULL + errno
        self.assertErrno(errno.EINVAL, Secret, 0, region=True)
        self.assertErrno(errno.ENOMEM, Secret, 1 << 62)
        self.assertErrno(errno.EINVAL, secretmem.lib.secretmem_region_create, 4096, 0x80)
        self.assertErrno(errno.ENOMEM, secretmem.lib.secretmem_calloc, 1 << 40, 1 << 40)

    def test_negative_errno(self):
        lib = secretmem.lib
        self.assertErrno(errno.EINVAL, lib.secretmem_set_option, 999, 0)
        self.assertErrno(errno.EINVAL, lib.secretmem_get_option, 999)
        self.assertErrno(errno.EINVAL, lib.secretmem_set_require, 5)
        self.assertErrno(errno.EINVAL, lib.secretmem_region_protect, None, 0)
        self.assertErrno(errno.EINVAL, lib.secretmem_memfd, 0x1)
        self.assertErrno(errno.EINVAL, lib.secretmem_stats, None)
        with Secret(16, region=True) as s:
            region = s._buf._secretmem_memory.region
            self.assertErrno(errno.EINVAL, lib.secretmem_region_protect, region, 7)

    def test_python_level(self):
        with self.assertRaises(ValueError):
            Secret(-1)
        with self.assertRaises(ValueError):
            Secret(8, require=True)  # require is per region; the allocator has set_require
        with Secret(8) as s:
            with self.assertRaises(ValueError):
                s.protect("readonly")  # not a region
        with Secret(8, region=True) as s:
            with self.assertRaises(ValueError):
                s.protect("rw")


@unittest.skipUnless(os.path.exists(os.path.join(pyutil.TOP, "README.md")), "README.md not found")
class TestReadme(unittest.TestCase):
    def test_readme_example_runs(self):
        with open(os.path.join(pyutil.TOP, "README.md")) as f:
            readme = f.read()
        m = re.search(r"^## Python\n.*?```python\n(.*?)```", readme, re.S | re.M)
        self.assertIsNotNone(m, "no python example in README.md's Python section")
        code = m.group(1)
        self.assertLessEqual(len(code.strip().splitlines()), 5, "the README example is five lines")
        with open(os.path.join(pyutil.PYDIR, "README.md")) as f:
            self.assertIn(code, f.read(), "python/README.md shows the same example")
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "key.bin"), "wb") as f:
                f.write(os.urandom(32))
            r = pyutil.run_child(code, cwd=tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        backend = secretmem.backend
        self.assertEqual(r.stdout.splitlines(),
                         [f"<secretmem.Secret size=32 allocator {backend}> {backend}", "False"])

    def test_from_buffer_to_c(self):
        with Secret(8) as s:
            v = s.view()
            arr = (ctypes.c_char * len(s)).from_buffer(v)
            ctypes.memmove(arr, b"12345678", 8)
            self.assertTrue(s == b"12345678")
            self.assertEqual(ctypes.addressof(arr), s._buf._secretmem_memory.address)
            with self.assertRaises(BufferError):
                s.close()
            del arr
            v.release()


if __name__ == "__main__":
    unittest.main()
