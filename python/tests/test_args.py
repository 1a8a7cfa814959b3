# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""Strict arguments, docstrings, type annotations, the CPython check.

Sizes (Secret, Secret.random, getpass's max_len) are ints: bool, float and
str are refused with TypeError, a negative size or one over sys.maxsize
with ValueError; region= and require= are bools; set_require takes a bool
or the spellings of SECRETMEM_REQUIRE; protect takes one of three strs.
Every public function, class, method and property has a docstring and
annotations that typing.get_type_hints resolves (mypy --strict on the
package: test_typing)."""
import inspect
import operator
import sys
import typing
import unittest

import pyutil
import secretmem
from secretmem import Secret


class Index:
    """An int-like object (numpy integers are such): operator.index works."""

    def __init__(self, n):
        self.n = n

    def __index__(self):
        return self.n


class TestSizes(unittest.TestCase):
    def test_type_errors(self):
        for bad in ("32", 3.9, 3.0, True, False, None, b"\x20", [32]):
            for make in (Secret, Secret.random,
                         lambda n: Secret(n, region=True),
                         lambda n: secretmem.getpass(max_len=n)):
                with self.subTest(size=bad, make=make), self.assertRaises(TypeError) as cm:
                    make(bad)
                self.assertIn(type(bad).__name__, str(cm.exception))

    def test_value_errors(self):
        for bad in (-1, -(2 ** 70), sys.maxsize + 1, 2 ** 64, 2 ** 100):
            for make in (Secret, Secret.random, lambda n: Secret(n, region=True)):
                with self.subTest(size=bad, make=make), self.assertRaises(ValueError):
                    make(bad)
        with self.assertRaises(ValueError):
            secretmem.getpass(max_len=0)
        with self.assertRaises(ValueError):
            secretmem.getpass(max_len=-5)
        with self.assertRaises(ValueError):
            secretmem.getpass(max_len=sys.maxsize + 1)

    def test_int_like_accepted(self):
        for n in (7, Index(7)):
            with Secret(n) as s:
                self.assertEqual((len(s), s.size), (7, 7))
        with Secret.random(Index(16)) as s:
            self.assertEqual(len(s.view()), 16)
        self.assertEqual(operator.index(Index(3)), 3)

    def test_flags_are_bools(self):
        for kw in ({"region": 1}, {"region": "yes"}, {"region": None},
                   {"require": 1, "region": True}, {"require": "no", "region": True}):
            with self.subTest(kw=kw), self.assertRaises(TypeError):
                Secret(8, **kw)
        with Secret(8, region=True, require=False) as s:
            self.assertTrue(s.region)

    def test_protect_mode(self):
        with Secret(8, region=True) as s:
            with self.assertRaises(TypeError):
                s.protect(1)
            with self.assertRaises(ValueError):
                s.protect("READONLY")
            s.protect("readonly")
            s.protect("readwrite")


class TestSetRequire(unittest.TestCase):
    def current(self):
        return secretmem.lib.secretmem_get_option(secretmem.OPT_REQUIRE)

    def tearDown(self):
        secretmem.set_require(False)

    def test_bools_and_spellings(self):
        for value, want in ((True, 1), (False, 0), ("1", 1), ("0", 0), ("yes", 1), ("no", 0),
                            ("TRUE", 1), ("False", 0), ("on", 1), ("Off", 0)):
            if want and not secretmem.supported():
                continue  # require on a machine without secret memory: nothing to allocate
            with self.subTest(value=value):
                secretmem.set_require(not want)
                secretmem.set_require(value)
                self.assertEqual(self.current(), want)

    def test_refused(self):
        secretmem.set_require(False)
        for bad, err in ((1, TypeError), (0, TypeError), (None, TypeError), (1.0, TypeError),
                         (b"yes", TypeError), ("", ValueError), ("2", ValueError),
                         ("enable", ValueError), ("no way", ValueError)):
            with self.subTest(value=bad), self.assertRaises(err):
                secretmem.set_require(bad)
            self.assertEqual(self.current(), 0, f"{bad!r} changed the option")


def public_callables():
    """(name, object) of every public function, class, method and property."""
    out = []
    for name in secretmem.__all__:
        obj = getattr(secretmem, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            out.append((name, obj))
    for name, obj in vars(Secret).items():
        if name.startswith("_") and name not in ("__init__", "__eq__", "__len__", "__enter__", "__exit__"):
            continue
        if isinstance(obj, (classmethod, staticmethod)):
            obj = obj.__func__
        if isinstance(obj, property):
            out.append((f"Secret.{name}", obj.fget))
        elif inspect.isfunction(obj):
            out.append((f"Secret.{name}", obj))
    out.append(("secretmem.backend (module property)", type(secretmem).backend.fget))
    return out


class TestDocsAndTypes(unittest.TestCase):
    def test_docstrings(self):
        names = [n for n, _ in public_callables()]
        for must in ("Secret.size", "Secret.closed", "Secret.view", "getpass", "set_require",
                     "Secret.random", "Secret.close", "Secret.backend", "Secret.region"):
            self.assertIn(must, names)
        for name, obj in public_callables():
            if name in ("Secret.__init__", "Secret.__len__", "Secret.__enter__", "Secret.__exit__"):
                continue  # documented by the class
            with self.subTest(name=name):
                doc = inspect.getdoc(obj)
                self.assertTrue(doc and len(doc) > 20, f"{name} has no docstring")

    def test_annotations_resolve(self):
        for name, obj in public_callables():
            if inspect.isclass(obj):
                continue
            with self.subTest(name=name):
                hints = typing.get_type_hints(obj, vars(secretmem))
                params = [p for p in inspect.signature(obj).parameters.values()
                          if p.name != "self" and p.name != "cls" and p.kind is not p.VAR_POSITIONAL]
                for p in params:
                    self.assertIn(p.name, hints, f"{name}: parameter {p.name} not annotated")
                self.assertIn("return", hints, f"{name}: return not annotated")
        self.assertIs(typing.get_type_hints(Secret.view)["return"], memoryview)
        self.assertIs(typing.get_type_hints(secretmem.getpass, vars(secretmem))["return"], Secret)
        self.assertIs(typing.get_type_hints(secretmem.supported)["return"], bool)

    def test_py_typed(self):
        import os
        marker = os.path.join(os.path.dirname(secretmem.__file__), "py.typed")
        self.assertTrue(os.path.isfile(marker))
        with open(marker) as f:
            self.assertNotIn("partial", f.read(), "the package is fully annotated, not partial")


class TestImplementation(unittest.TestCase):
    def test_other_implementation_refused(self):
        # What PyPy (no sys.getrefcount) would see: an ImportError that says why.
        r = pyutil.run_child("import sys, types\n"
                             "sys.implementation = types.SimpleNamespace(**dict(vars(sys.implementation), name='pypy'))\n"
                             "import secretmem\n")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ImportError: secretmem needs CPython", r.stderr)
        self.assertIn("sys.getrefcount", r.stderr)


if __name__ == "__main__":
    unittest.main()
