# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""secretmem: keep secrets in Linux secret memory (memfd_secret) from Python.

    import hmac, secretmem
    with secretmem.Secret(32) as key:                     # zero-filled, in secret memory
        with open("key.bin", "rb", buffering=0) as f:     # buffering=0: no copy in Python
            f.readinto(key.view())
        ok = hmac.compare_digest(key.view(), other_view)  # no bytes copy
    # closed: zeroized and freed

A Secret's bytes live in memory that no other process - root included - can
read (see secretmem(7)).  Python copies whatever becomes a bytes or str
object: bytes(view), view.tobytes(), view.hex(), slicing a bytes object,
f.read(), os.urandom(), ... - such copies stay in the ordinary heap until
the garbage collector frees them, and the freed memory is not cleared.
Work through view() (readinto, hmac.compare_digest, ctypes pointers) to keep
the secret out of the ordinary heap.  See README.md.
"""
from __future__ import annotations

import ctypes
import hmac
import os
import sys
from typing import Optional

from . import _lib

lib = _lib.load()
"""The C library (ctypes.CDLL) with every signature declared: lib.secretmem_*.
Functions raise OSError instead of returning -errno or NULL."""

__version__ = "1.1.0"
__all__ = ["Secret", "supported", "check_supported", "stats", "trim", "set_require",
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


def _backend_name(value):
    return lib.secretmem_backend_name(value).decode()


def supported():
    """True when secret memory (memfd_secret) is usable in this process."""
    return lib.secretmem_supported() == 0


def check_supported():
    """None when secret memory is usable; else OSError telling why (ENOSYS:
    kernel or architecture without it, or disabled; EPERM: refused by a
    seccomp filter or an LSM)."""
    rc = lib.secretmem_supported()
    if rc < 0:
        raise OSError(-rc, "secret memory is not usable here: " + os.strerror(-rc))


def stats():
    """A snapshot of the allocator (struct secretmem_stats) as a dict; the
    backend of new allocations is given by name ("secret", "fallback",
    "none"), and so is last_failure ("none", "memlock", "nomem", "nosys",
    "sandbox", "fds")."""
    st = _lib.Stats()
    lib.secretmem_stats(ctypes.byref(st))
    out = {name: getattr(st, name) for name, _ in _lib.Stats._fields_ if name != "reserved"}
    out["backend"] = _backend_name(st.backend)
    out["last_failure"] = _FAILURES.get(st.last_failure, str(st.last_failure))
    return out


# enum secretmem_failure: why the last request could not get secret memory
_FAILURES = {0: "none", 1: "memlock", 2: "nomem", 3: "nosys", 4: "sandbox", 5: "fds"}


def trim():
    """Give unused secret pages back to the kernel; the number of bytes released."""
    return lib.secretmem_trim()


def set_require(require):
    """Forbid (True) or allow (False) the fallback backend in this process."""
    lib.secretmem_set_require(1 if require else 0)


def __getattr__(name):
    # secretmem.backend: the backend that new secrets get, asked each time.
    if name == "backend":
        return _backend_name(lib.secretmem_default_backend())
    raise AttributeError(f"module 'secretmem' has no attribute {name!r}")


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


class Secret:
    """size bytes of secret memory: fixed size, mutable, zero-filled at birth,
    zeroized when closed.

    Secret(size)               from the allocator (secretmem_malloc): many
                               small secrets share a page.
    Secret(size, region=True)  a region of its own (whole pages between guard
                               pages) that protect() can make read-only or
                               inaccessible; require=True refuses the
                               fallback backend (OSError ENOSYS/EPERM).

    Reach the bytes through view() (a writable memoryview of format 'B'):
    readinto, hmac.compare_digest, struct.pack_into, ctypes all take it
    without copying.  close() (or the end of a with block) zeroizes and
    frees; it raises BufferError while views are alive.  A Secret dropped
    without close() is freed when neither it nor any view remains.
    """

    def __init__(self, size, *, region=False, require=False):
        size = int(size)
        if size < 0:
            raise ValueError("size must be >= 0")
        if require and not region:
            raise ValueError("require=True needs region=True (for the allocator use set_require)")
        self._size = size
        self._buf = None
        if region:
            handle = lib.secretmem_region_create(size, REGION_REQUIRE_SECRET if require else 0)
            mem = _Memory(lib.secretmem_region_data(handle), handle)
            self._backend = lib.secretmem_region_backend(handle)
        else:
            mem = _Memory(lib.secretmem_malloc(size), None)
            self._backend = lib.secretmem_default_backend()
        buf = (ctypes.c_ubyte * size).from_address(mem.address)
        buf._secretmem_memory = mem  # the array keeps the memory alive
        self._buf = buf

    @classmethod
    def random(cls, size, **kwargs):
        """A Secret filled from /dev/urandom without a copy in Python
        (os.urandom would return a bytes object)."""
        s = cls(size, **kwargs)
        try:
            view = s.view()
            with open("/dev/urandom", "rb", buffering=0) as f:
                done = 0
                while done < size:
                    n = f.readinto(view[done:])
                    if not n:
                        raise OSError("short read from /dev/urandom")
                    done += n
            view.release()
        except BaseException:
            s._buf = None  # the memory goes with the last view
            raise
        return s

    def _live(self):
        buf = self._buf
        if buf is None:
            raise ValueError("operation on a closed Secret")
        if buf._secretmem_memory.inherited() == "drop":
            raise ValueError("this Secret was dropped in this forked child (fork policy drop, or a "
                             "copy that failed): its memory is gone; close() it")
        return buf

    def view(self):
        """A writable memoryview (format 'B', len(self) bytes) of the secret.
        ValueError on a closed Secret, and in a forked child that has no
        copy of it (fork policy drop)."""
        return memoryview(self._live()).cast("B")

    def protect(self, mode):
        """Set the access of a region-backed secret: "noaccess", "readonly" or
        "readwrite".  Touching it against the mode kills the process
        (SIGSEGV), as in C."""
        if mode not in _ACCESS:
            raise ValueError(f"mode must be one of {', '.join(_ACCESS)}, not {mode!r}")
        mem = self._live()._secretmem_memory
        if not mem.region:
            raise ValueError("protect() needs a region-backed Secret: Secret(size, region=True)")
        lib.secretmem_region_protect(mem.region, _ACCESS[mode])
        mem.mode = _ACCESS[mode]

    def close(self):
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
        buf._secretmem_memory.free()

    @property
    def closed(self):
        return self._buf is None

    @property
    def size(self):
        return self._size

    def __len__(self):
        return self._size

    @property
    def backend(self):
        """"secret" (memfd_secret) or "fallback" (locked, undumpable memory)."""
        return _backend_name(self._backend)

    @property
    def region(self):
        """True when the secret is a region of its own (protect() works)."""
        return self._buf is not None and self._buf._secretmem_memory.region is not None

    def __enter__(self):
        self._live()
        return self

    def __exit__(self, *exc):
        self.close()

    def __eq__(self, other):
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
            try:
                return hmac.compare_digest(a, other)
            except TypeError:
                return NotImplemented
        finally:
            a.release()

    __hash__ = None  # mutable

    def __repr__(self):
        state = "closed" if self._buf is None else self.backend
        kind = "region" if self.region else "allocator"
        return f"<secretmem.Secret size={self._size} {kind} {state}>"

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("a Secret cannot be pickled (that would copy it)")

    def __del__(self):
        # The memory is owned by the ctypes array: it goes with the last
        # view, or now if there is none.
        self._buf = None
