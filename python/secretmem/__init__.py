# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""secretmem: keep secrets in Linux secret memory (memfd_secret) from Python.

    import hmac, secretmem
    with secretmem.Secret(32) as key:                     # zero-filled, in secret memory
        with open("key.bin", "rb", buffering=0) as f:     # buffering=0: no copy in Python
            f.readinto(key.view())
        ok = hmac.compare_digest(key.view(), other_view)  # no bytes copy
    # closed: zeroized and freed

    password = secretmem.getpass()                        # terminal -> secret memory

A Secret's bytes live in memory that no other process - root included - can
read (see secretmem(7)).  Python copies whatever becomes a bytes or str
object: bytes(view), view.tobytes(), view.hex(), slicing a bytes object,
f.read(), os.urandom(), getpass.getpass(), ... - such copies stay in the
ordinary heap until the garbage collector frees them, and the freed memory
is not cleared.  Work through view() (readinto, hmac.digest,
hmac.compare_digest, ctypes pointers) to keep the secret out of the ordinary
heap.  See python/README.md.

Constants: BACKEND_NONE, BACKEND_SECRET, BACKEND_FALLBACK (enum
secretmem_backend); OPT_RESERVE, OPT_FORK, OPT_RELEASE_IDLE, OPT_REQUIRE
(enum secretmem_option, for lib.secretmem_set_option); FORK_COPY,
FORK_SHARE, FORK_DROP (enum secretmem_fork_policy); REGION_REQUIRE_SECRET.

Needs CPython 3.8 or later: Secret.close() counts the live views of a
secret with sys.getrefcount, which only CPython has.
"""
from __future__ import annotations

import ctypes
import hmac
import operator
import os
import sys
import types
from typing import Any, Dict, Optional, Union, cast

if sys.implementation.name != "cpython":
    raise ImportError("secretmem needs CPython: Secret.close() counts the live views of a secret "
                      f"with sys.getrefcount, which {sys.implementation.name} does not have")

from . import _lib  # noqa: E402  (after the implementation check)

lib = _lib.load()
"""The C library (ctypes.CDLL) with every signature declared: lib.secretmem_*.
Functions raise OSError instead of returning -errno or NULL."""

__version__ = "1.1.0"
__all__ = ["Secret", "getpass", "supported", "check_supported", "stats", "trim", "set_require",
           "backend", "lib", "BACKEND_NONE", "BACKEND_SECRET", "BACKEND_FALLBACK"]

BACKEND_NONE = 0
BACKEND_SECRET = 1
BACKEND_FALLBACK = 2
REGION_REQUIRE_SECRET = 0x1
OPT_RESERVE = 1
OPT_FORK = 2
OPT_RELEASE_IDLE = 3
OPT_REQUIRE = 4
FORK_COPY = 0
FORK_SHARE = 1
FORK_DROP = 2
_ACCESS = {"noaccess": 0, "readonly": 1, "readwrite": 2}
# The spellings of the library's switches (SECRETMEM_REQUIRE=...), any case.
_ON = ("1", "yes", "true", "on")
_OFF = ("0", "no", "false", "off")

backend: str
"""The backend that new secrets get: "secret", "fallback" or "none" (asked
of the library at each access)."""


def _backend_name(value: int) -> str:
    name: bytes = lib.secretmem_backend_name(value)
    return name.decode()


def _size(value: Any, what: str) -> int:
    """value as a size: an int (or an object with __index__) from 0 to
    sys.maxsize; TypeError for bool, float, str and the like, ValueError
    outside the range."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    n = operator.index(value)
    if n < 0:
        raise ValueError(f"{what} must be >= 0, not {n}")
    if n > sys.maxsize:
        raise ValueError(f"{what} must be <= sys.maxsize ({sys.maxsize}), not {n}")
    return n


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be True or False, not {type(value).__name__}")
    return value


def supported() -> bool:
    """True when secret memory (memfd_secret) is usable in this process."""
    return bool(lib.secretmem_supported() == 0)


def check_supported() -> None:
    """None when secret memory is usable; else OSError telling why (ENOSYS:
    kernel or architecture without it, or disabled; EPERM: refused by a
    seccomp filter or an LSM)."""
    rc = lib.secretmem_supported()
    if rc < 0:
        raise OSError(-rc, "secret memory is not usable here: " + os.strerror(-rc))


# enum secretmem_failure: why the last request could not get secret memory
_FAILURES = {0: "none", 1: "memlock", 2: "nomem", 3: "nosys", 4: "sandbox", 5: "fds"}


def stats() -> Dict[str, Union[int, str]]:
    """A snapshot of the allocator (struct secretmem_stats) as a dict; the
    backend of new allocations is given by name ("secret", "fallback",
    "none"), and so is last_failure ("none", "memlock", "nomem", "nosys",
    "sandbox", "fds")."""
    st = _lib.Stats()
    lib.secretmem_stats(ctypes.byref(st))
    out: Dict[str, Union[int, str]] = {name: getattr(st, name) for name, _ in _lib.Stats._fields_
                                       if name != "reserved"}
    out["backend"] = _backend_name(st.backend)
    out["last_failure"] = _FAILURES.get(st.last_failure, str(st.last_failure))
    return out


def trim() -> int:
    """Give unused secret pages back to the kernel; the number of bytes released."""
    return int(lib.secretmem_trim())


def set_require(require: Union[bool, str]) -> None:
    """Forbid (True) or allow (False) the fallback backend in this process.
    Also takes the spellings of SECRETMEM_REQUIRE, in any case: "1", "yes",
    "true", "on" and "0", "no", "false", "off".  Anything else: TypeError
    (another type, int included) or ValueError (another string)."""
    if isinstance(require, str):
        word = require.lower()
        if word not in _ON + _OFF:
            raise ValueError(f"set_require takes True, False or one of {', '.join(_ON + _OFF)}, "
                             f"not {require!r}")
        value = word in _ON
    elif isinstance(require, bool):
        value = require
    else:
        raise TypeError(f"set_require takes True, False or a string, not {type(require).__name__}")
    lib.secretmem_set_require(1 if value else 0)


class _Module(types.ModuleType):
    """The module's class: secretmem.backend is a property."""

    @property
    def backend(self) -> str:
        """The backend that new secrets get, asked each time."""
        return _backend_name(lib.secretmem_default_backend())


sys.modules[__name__].__class__ = _Module


class _Fork:
    """What this process knows of the fork it came from: os.fork() runs
    after_child in the child, after the library's own fork handler applied
    the policy."""
    __slots__ = ("policy",)

    def __init__(self) -> None:
        self.policy: Optional[int] = None

    def after_child(self) -> None:
        self.policy = int(lib.secretmem_get_option(OPT_FORK))


_fork = _Fork()
os.register_at_fork(after_in_child=_fork.after_child)


class _Memory:
    """Owns one allocation; frees it (the library zeroizes) exactly once.
    It is referenced by the ctypes array that memoryviews export, so memory
    under a live view is never freed: it goes when the last view does.

    In a child made by fork() (another pid than the creator's) the memory is
    what the fork policy made of it: under copy the child's own copy, freed
    as usual; under share the parent's pages, which the child must neither
    zeroize nor free; under drop (or a copy that failed) nothing, which
    secretmem_free would call fatal.  Freeing it there only forgets it,
    except the child's own copy."""
    __slots__ = ("address", "region", "mode", "pid", "dropped_in")

    # kept on the class: at interpreter exit the module's globals may be gone
    _lib = lib
    _getpid = staticmethod(os.getpid)
    _fork = _fork

    def __init__(self, address: int, region: Optional[int]) -> None:
        self.address: Optional[int] = address
        self.region: Optional[int] = region
        self.mode = _ACCESS["readwrite"]
        self.pid = os.getpid()
        self.dropped_in = 0  # the pid of a child where the memory is known gone

    def inherited(self) -> Optional[str]:
        """None in the process that made the memory; in a forked child what
        it has: "copy" (its own), "share" (the parent's pages) or "drop"
        (nothing: touching the addresses raises SIGSEGV)."""
        pid = self._getpid()
        if pid == self.pid:
            return None
        if self.dropped_in == pid:
            return "drop"
        policy = self._fork.policy
        if policy is None:  # forked without os.fork() (no hook ran)
            policy = int(self._lib.secretmem_get_option(OPT_FORK))
        if self.region:
            # protect() to the mode it has: EFAULT when the region was dropped
            try:
                self._lib.secretmem_region_protect(self.region, self.mode)
                gone = False
            except OSError:
                gone = True
        else:
            gone = not self._lib.secretmem_owns(self.address)
        if gone:
            self.dropped_in = pid
            return "drop"
        return "share" if policy == FORK_SHARE else "copy"

    def free(self) -> None:
        if self.address is None:
            return
        kind = self.inherited()
        region, address = self.region, self.address
        self.region = self.address = None
        if kind in ("share", "drop"):
            return  # the parent's pages, or none: forget them
        if region:
            self._lib.secretmem_region_destroy(region)
        else:
            self._lib.secretmem_free(address)

    def __del__(self) -> None:
        self.free()


def _memory(buf: ctypes.Array[ctypes.c_ubyte]) -> _Memory:
    """The _Memory that the ctypes array of a Secret keeps alive."""
    mem: _Memory = getattr(buf, "_secretmem_memory")
    return mem


class Secret:
    """size bytes of secret memory: fixed size, mutable, zero-filled at birth,
    zeroized when closed.

    Secret(size)               from the allocator (secretmem_malloc): many
                               small secrets share a page.
    Secret(size, region=True)  a region of its own (whole pages between guard
                               pages) that protect() can make read-only or
                               inaccessible; require=True refuses the
                               fallback backend (OSError ENOSYS/EPERM).

    size is an int from 0 to sys.maxsize (TypeError for bool, float or str;
    ValueError for a negative or larger value); region and require are bools.

    Reach the bytes through view() (a writable memoryview of format 'B'):
    readinto, hmac.digest, hmac.compare_digest, struct.pack_into and ctypes
    all take it without copying.  close() (or the end of a with block)
    zeroizes and frees; it raises BufferError while views are alive.  A
    Secret dropped without close() is freed when neither it nor any view
    remains.
    """

    def __init__(self, size: int, *, region: bool = False, require: bool = False) -> None:
        self._buf: Optional[ctypes.Array[ctypes.c_ubyte]] = None
        size = _size(size, "size")
        region = _flag(region, "region")
        require = _flag(require, "require")
        if require and not region:
            raise ValueError("require=True needs region=True (for the allocator use set_require)")
        self._size = size
        if region:
            handle = lib.secretmem_region_create(size, REGION_REQUIRE_SECRET if require else 0)
            mem = _Memory(lib.secretmem_region_data(handle), handle)
            self._backend = lib.secretmem_region_backend(handle)
        else:
            mem = _Memory(lib.secretmem_malloc(size), None)
            self._backend = lib.secretmem_default_backend()
        assert mem.address is not None
        buf = (ctypes.c_ubyte * size).from_address(mem.address)
        setattr(buf, "_secretmem_memory", mem)  # the array keeps the memory alive
        self._buf = buf

    @classmethod
    def random(cls, size: int, *, region: bool = False, require: bool = False) -> Secret:
        """A Secret filled from /dev/urandom without a copy in Python
        (os.urandom would return a bytes object)."""
        s = cls(size, region=region, require=require)
        try:
            view = s.view()
            try:
                with open("/dev/urandom", "rb", buffering=0) as f:
                    done = 0
                    while done < s.size:
                        part = view[done:]
                        try:
                            n = f.readinto(part)
                        finally:
                            part.release()
                        if not n:
                            raise OSError("short read from /dev/urandom")
                        done += n
            finally:
                view.release()
        except BaseException:
            s.close()
            raise
        return s

    def _live(self) -> ctypes.Array[ctypes.c_ubyte]:
        buf = self._buf
        if buf is None:
            raise ValueError("operation on a closed Secret")
        if _memory(buf).inherited() == "drop":
            raise ValueError("this Secret was dropped in this forked child (fork policy drop, or a "
                             "copy that failed): its memory is gone; close() it")
        return buf

    def view(self) -> memoryview:
        """A writable memoryview (format 'B', len(self) bytes) of the secret.
        ValueError on a closed Secret, and in a forked child that has no
        copy of it (fork policy drop)."""
        return memoryview(self._live()).cast("B")

    def protect(self, mode: str) -> None:
        """Set the access of a region-backed secret: "noaccess", "readonly" or
        "readwrite".  Touching it against the mode kills the process
        (SIGSEGV), as in C."""
        if not isinstance(mode, str):
            raise TypeError(f"mode must be a str, not {type(mode).__name__}")
        if mode not in _ACCESS:
            raise ValueError(f"mode must be one of {', '.join(_ACCESS)}, not {mode!r}")
        mem = _memory(self._live())
        if not mem.region:
            raise ValueError("protect() needs a region-backed Secret: Secret(size, region=True)")
        lib.secretmem_region_protect(mem.region, _ACCESS[mode])
        mem.mode = _ACCESS[mode]

    def close(self) -> None:
        """Zeroize and free now.  BufferError while a view (or a slice of one)
        is alive; closing twice is a no-op.  In a forked child, a secret the
        child has no copy of (fork policy drop) or shares with its parent
        (policy share) is only forgotten: its memory is not the child's to
        zeroize."""
        buf = self._buf
        if buf is None:
            return
        # References: self._buf, the local, getrefcount's argument; every
        # live memoryview holds one more (through its managed buffer).
        views = sys.getrefcount(buf) - 3
        if views > 0:
            raise BufferError(f"cannot close a Secret while {views} view(s) of it exist; "
                              "release them (view.release() or del) first")
        self._buf = None
        _memory(buf).free()

    @property
    def closed(self) -> bool:
        """True once close() ran (or the with block ended)."""
        return self._buf is None

    @property
    def size(self) -> int:
        """The size in bytes, as asked (also len(self)); it stays after close()."""
        return self._size

    def __len__(self) -> int:
        return self._size

    @property
    def backend(self) -> str:
        """"secret" (memfd_secret) or "fallback" (locked, undumpable memory)."""
        return _backend_name(self._backend)

    @property
    def region(self) -> bool:
        """True when the secret is a region of its own (protect() works)."""
        return self._buf is not None and _memory(self._buf).region is not None

    def __enter__(self) -> Secret:
        self._live()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __eq__(self, other: object) -> bool:
        """Constant-time comparison (hmac.compare_digest) with another Secret
        or a bytes-like object; the time depends on the length only."""
        a = self.view()
        try:
            if isinstance(other, Secret):
                b = other.view()
                try:
                    return hmac.compare_digest(a, b)
                finally:
                    b.release()
            if isinstance(other, str):
                return NotImplemented  # compare_digest takes str, but not against bytes
            try:
                return hmac.compare_digest(a, cast(bytes, other))
            except TypeError:
                return NotImplemented
        finally:
            a.release()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        state = "closed" if self._buf is None else self.backend
        kind = "region" if self.region else "allocator"
        return f"<secretmem.Secret size={self._size} {kind} {state}>"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("a Secret cannot be pickled (that would copy it)")

    def __del__(self) -> None:
        # The memory is owned by the ctypes array: it goes with the last
        # view, or now if there is none.
        self._buf = None


from ._getpass import getpass  # noqa: E402  (uses Secret)
