# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""Loading libsecretmem.so.1 and declaring every C signature.

Every function of include/secretmem.h has one line in SIGNATURES: its
result type, its argument types and its error convention.  ctypes' defaults
(int result, int arguments) truncate 64-bit pointers and sizes, so nothing
is called without a declaration: a missing function is an ImportError here,
not a crash later.

Error conventions (the header's): NEG functions return 0 (or a value >= 0)
or -errno and leave errno alone; NULL functions return NULL and set errno.
Both become OSError(errno, strerror(errno)) (so ENOMEM is an OSError with
errno ENOMEM, EPERM a PermissionError, ...).
"""
from __future__ import annotations

import ctypes
import os
from typing import Any, Callable, Dict, List, Optional, Tuple
from ctypes import (POINTER, Structure, c_char_p, c_int, c_long, c_size_t,
                    c_uint, c_void_p)

SONAME = "libsecretmem.so.1"

NEG = "neg"    # int or long: >= 0, or -errno
NULL = "null"  # pointer: NULL with errno set
NONE = None    # cannot fail


class Stats(Structure):
    """struct secretmem_stats, field for field."""
    _fields_ = [
        ("bytes_in_use", c_size_t),
        ("live_allocations", c_size_t),
        ("bytes_mapped", c_size_t),
        ("pages_mapped", c_size_t),
        ("pages_faulted", c_size_t),
        ("pages_released", c_size_t),
        ("regions", c_size_t),
        ("regions_created", c_size_t),
        ("backend", c_int),
        ("memlock_unlimited", c_int),
        ("memlock_limit", c_size_t),
        ("memlock_left", c_size_t),
        ("secret_bytes", c_size_t),
        ("fallback_bytes", c_size_t),
        ("api_regions", c_size_t),
        ("api_region_bytes", c_size_t),
        ("last_failure", c_size_t),
        ("last_failure_bytes", c_size_t),
        ("memlock_locked", c_size_t),
        ("reserved", c_size_t * 1),
    ]


class Library(ctypes.CDLL):
    """libsecretmem with every function of SIGNATURES declared; path: what
    was loaded (a path, or the soname found by the dynamic loader)."""
    path: str


# name: (result type, argument types, error convention).  Pointers are
# c_void_p (never c_char_p as a result: ctypes would copy the secret into an
# immutable bytes object); sizes are c_size_t.
SIGNATURES: Dict[str, Tuple[Any, List[Any], Optional[str]]] = {
    "secretmem_memfd": (c_int, [c_uint], NEG),
    "secretmem_supported": (c_int, [], NONE),  # 0 or -errno: an answer, not an error
    "secretmem_backend_name": (c_char_p, [c_int], NONE),
    "secretmem_default_backend": (c_int, [], NONE),
    "secretmem_set_require": (c_int, [c_int], NEG),
    "secretmem_region_create": (c_void_p, [c_size_t, c_uint], NULL),
    "secretmem_region_data": (c_void_p, [c_void_p], NONE),
    "secretmem_region_size": (c_size_t, [c_void_p], NONE),
    "secretmem_region_backend": (c_int, [c_void_p], NONE),
    "secretmem_region_protect": (c_int, [c_void_p, c_int], NEG),
    "secretmem_region_destroy": (c_int, [c_void_p], NEG),
    "secretmem_malloc": (c_void_p, [c_size_t], NULL),
    "secretmem_calloc": (c_void_p, [c_size_t, c_size_t], NULL),
    "secretmem_realloc": (c_void_p, [c_void_p, c_size_t], NONE),  # NULL is also size 0
    "secretmem_free": (None, [c_void_p], NONE),
    "secretmem_strdup": (c_void_p, [c_char_p], NULL),
    "secretmem_strndup": (c_void_p, [c_char_p, c_size_t], NULL),
    "secretmem_memzero": (None, [c_void_p, c_size_t], NONE),
    "secretmem_memeq": (c_int, [c_void_p, c_void_p, c_size_t], NONE),  # 1 equal, 0 not
    "secretmem_version": (c_char_p, [], NONE),
    "secretmem_usable_size": (c_size_t, [c_void_p], NONE),
    "secretmem_owns": (c_int, [c_void_p], NONE),
    "secretmem_trim": (c_long, [], NEG),
    "secretmem_stats": (c_int, [POINTER(Stats)], NEG),
    "secretmem_set_option": (c_int, [c_int, c_long], NEG),
    "secretmem_get_option": (c_long, [c_int], NEG),
}


def _check_neg(result: int, func: Any, args: Any) -> int:
    if result < 0:
        raise OSError(-result, os.strerror(-result))
    return result


def _check_null(result: int, func: Any, args: Any) -> int:
    if not result:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


_ERRCHECK: Dict[str, Callable[[int, Any, Any], int]] = {NEG: _check_neg, NULL: _check_null}


def _candidates() -> List[str]:
    """Where to look, in order: $SECRETMEM_LIBRARY; the build tree when this
    package is run from the repository (python/secretmem/ next to
    include/secretmem.h; $SECRETMEM_BUILD or build/); the system."""
    env = os.environ.get("SECRETMEM_LIBRARY")
    if env:
        return [env]
    paths = []
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if os.path.isfile(os.path.join(top, "include", "secretmem.h")):
        build = os.environ.get("SECRETMEM_BUILD") or "build"
        lib = os.path.join(top, build, SONAME)
        if os.path.exists(lib):
            paths.append(lib)
    paths.append(SONAME)
    return paths


def load() -> Library:
    """The library with every signature declared; ImportError otherwise."""
    errors = []
    for path in _candidates():
        try:
            lib = Library(path, use_errno=True)
        except OSError as e:
            errors.append(str(e))
            continue
        for name, (restype, argtypes, conv) in SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise ImportError(f"{path} lacks {name} (too old a libsecretmem?)") from None
            fn.restype = restype
            fn.argtypes = argtypes
            if conv:
                fn.errcheck = _ERRCHECK[conv]
        lib.path = path
        return lib
    raise ImportError("cannot load libsecretmem (install libsecretmem1, or set "
                      "SECRETMEM_LIBRARY to the path of libsecretmem.so.1): "
                      + "; ".join(errors))
