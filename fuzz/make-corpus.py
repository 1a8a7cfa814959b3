#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""make-corpus.py - write the seed corpus of fuzz_alloc into fuzz/corpus/.

Each seed is a program for fuzz/fuzz_alloc.c: 4 bytes per operation,
(op | mode << 4 | mod << 6, slot, size value little-endian 16 bits).
Run from anywhere: python3 fuzz/make-corpus.py [outdir]
"""
import os
import struct
import sys

MALLOC, ALIGNED, CALLOC, FREE, FREE2, REALLOC, REALLOC2, STRDUP, TRIM, \
    USABLE, HUGE, REFILL, REUSE, REALLOC0, OWNS, STATS = range(16)
TINY, SMALL, CLASS, ANY = range(4)
NCLASSES = 41


def op(code, slot=0, value=0, mode=SMALL, mod=0):
    return struct.pack("<BBH", code | mode << 4 | mod << 6, slot & 255, value & 0xffff)


def trim():
    """OP_TRIM trims only with modifier 3."""
    return op(TRIM, 0, 0, SMALL, 3)


ANY_SPLIT, ANY_SMALL, BIG_SPLIT, MID_SIZE, MAX_SIZE = 0xc000, 16400, 0xff00, 65536, 2 << 20


def shape_any(v):
    """Mode ANY's size for value v, as shape_size() in fuzz_alloc.c."""
    if v < ANY_SPLIT:
        return v * (ANY_SMALL + 1) // ANY_SPLIT
    if v < BIG_SPLIT:
        return ANY_SMALL + 1 + (v - ANY_SPLIT) * (MID_SIZE - ANY_SMALL - 1) // (BIG_SPLIT - 1 - ANY_SPLIT)
    return MID_SIZE + (v - BIG_SPLIT) * (MAX_SIZE - MID_SIZE) // (65535 - BIG_SPLIT)


def any_size(n):
    """The smallest value that mode ANY maps to at least n bytes (0..2 MiB)."""
    for v in range(0x10000):
        if shape_any(v) >= n:
            return v
    raise ValueError(n)


def class_edge(index, delta):
    """Mode CLASS value for class index +delta (-1, 0, +1)."""
    for v in range(0x10000):
        if v % NCLASSES == index and (v >> 8) % 3 == delta + 1:
            return v
    raise ValueError(index)


seeds = {}

# a few sizes, then free them
seeds["basic"] = b"".join([op(MALLOC, 0, 0, TINY), op(MALLOC, 1, 24, TINY), op(MALLOC, 2, 1000),
                           op(MALLOC, 3, any_size(20000), ANY), op(USABLE, 2), op(OWNS, 1, 5),
                           op(FREE, 1), op(FREE, 0), op(FREE, 3), op(FREE, 2)])

# every size class boundary: class-1, class, class+1 (16384 + 1 is the first large size)
s = b""
slot = 0
for i in range(NCLASSES):
    for d in (-1, 0, 1):
        s += op(MALLOC, slot, class_edge(i, d), CLASS)
        slot += 1
s += b"".join(op(FREE, k) for k in reversed(range(slot)))
seeds["class-edges"] = s

# a block grown from tiny to large and shrunk back, with contents kept
s = op(MALLOC, 7, 3, TINY)
for n in (17, 100, 1000, 5000, 16384, 16385, 30000, 65536, 40000, 16000, 300, 1, 0):
    s += op(REALLOC, 7, any_size(n), ANY) + op(USABLE, 7)
s += op(REALLOC, 8, any_size(100), ANY)  # realloc(NULL)
seeds["realloc-chain"] = s

# large blocks, trim, reuse of cached runs
s = b"".join(op(MALLOC, k, any_size(16400 + 3000 * k), ANY) for k in range(12))
s += b"".join(op(FREE, k) for k in range(0, 12, 2)) + trim()
s += b"".join(op(MALLOC, k, any_size(17000 + 2500 * k), ANY) for k in range(0, 12, 2))
s += b"".join(op(REUSE, k) for k in range(12)) + trim() + op(STATS)
seeds["large-trim"] = s

# strings, calloc (with overflow), huge requests, realloc to 0, owns
s = b"".join([op(STRDUP, 1, 10, TINY), op(STRDUP, 2, 900, SMALL, 1), op(STRDUP, 3, 700, SMALL, 3),
              op(CALLOC, 4, 500, SMALL, 2), op(CALLOC, 5, 0x1235, ANY, 3), op(CALLOC, 6, any_size(40000), ANY, 1),
              op(HUGE, 1, 0, TINY, 0), op(HUGE, 2, 7, TINY, 1), op(HUGE, 3, 9, TINY, 2), op(HUGE, 4, 1, TINY, 3),
              op(REALLOC0, 2), op(OWNS, 1, 3), op(OWNS, 6, 999), op(REFILL, 3), op(STATS)])
seeds["strings-calloc-huge"] = s

# 256 small blocks, free every other one, refill the holes (fragmentation)
s = b"".join(op(MALLOC, k, 16 + (k * 37) % 1000) for k in range(256))
s += b"".join(op(FREE, k) for k in range(0, 256, 2))
s += b"".join(op(MALLOC, k, 8 + (k * 53) % 1000) for k in range(0, 256, 2))
s += trim()
seeds["fragment-256"] = s

# free and allocate the same size again and again (LIFO reuse, zero check)
s = b"".join(op(MALLOC, k, class_edge(k % NCLASSES, 0), CLASS) for k in range(20))
s += b"".join(op(REUSE, k % 20) + op(REFILL, (k * 7) % 20) for k in range(60))
seeds["reuse"] = s


def aligned_value(mod, exp, base):
    """A value v near base whose alignment hash (see do_aligned) picks 2^exp."""
    lo, span = [(0, 5), (5, 8), (13, 9)][mod]
    for v in range(base, base + 0x10000):
        v &= 0xffff
        if lo + (((v * 0x9e3779b1) & 0xffffffff) >> 16) % span == exp:
            return v
    raise ValueError(exp)


# sm_alloc_aligned: every alignment 1 B .. 2 MiB with a small and a large size,
# one realloc, invalid alignments
s = b""
slot = 0
for exp in range(22):
    mod = 0 if exp < 5 else 1 if exp < 13 else 2
    s += op(ALIGNED, slot, aligned_value(mod, exp, 100), SMALL, mod)
    s += op(ALIGNED, slot + 1, aligned_value(mod, exp, any_size(20000)), ANY, mod)
    slot += 2
s += op(REALLOC, 3, 700) + op(REALLOC, 4, any_size(30000), ANY)
s += b"".join(op(ALIGNED, 60 + k, 17 * k + 1, SMALL, 3) for k in range(4))
s += b"".join(op(FREE, k) for k in range(slot))
seeds["aligned"] = s

# large blocks up to 2 MiB: grown, shrunk, freed, trimmed
s = b"".join([op(MALLOC, 0, any_size(100000), ANY), op(MALLOC, 1, any_size(1 << 20), ANY),
              op(REALLOC, 0, any_size(2 << 20), ANY), op(REALLOC, 1, any_size(70000), ANY),
              op(ALIGNED, 2, aligned_value(2, 21, any_size(300000)), ANY, 2),
              op(CALLOC, 3, any_size(500000), ANY, 0), op(REUSE, 1), op(FREE, 0), trim(),
              op(MALLOC, 0, any_size(1 << 20), ANY), op(STATS)])
seeds["big"] = s


# test/t_rel_fuzz_run runs with -max_len=256 (64 operations), and libFuzzer cuts
# longer seeds there: each longer seed is also written in parts of 63 operations
# (part0 is its start, which the test would otherwise see cut, without the hash)
# (a free of an empty slot does nothing, and every input ends freeing all).
MAX_LEN = 256
BIG_ONE_IN = 256


def fnv1a(data):
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xffffffff
    return h


def big_ok(data):
    """End data with one USABLE operation that gives the input the hash that
    allows big operations (blocks over 64 KiB, alignments over a page, trims;
    see BIG_ONE_IN in fuzz_alloc.c)."""
    for v in range(0x10000):
        d = data + op(USABLE, 255, v)
        if fnv1a(d) % BIG_ONE_IN == 0:
            return d
    raise ValueError("no padding found")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    n = 0
    part = MAX_LEN - 4
    for name, data in seeds.items():
        with open(os.path.join(out, "seed-" + name), "wb") as f:
            f.write(big_ok(data))
        n += 1
        if len(data) > part:
            for k in range((len(data) + part - 1) // part):
                with open(os.path.join(out, "seed-%s-part%d" % (name, k)), "wb") as f:
                    f.write(big_ok(data[k * part:(k + 1) * part]))
                n += 1
    print("wrote %d seeds to %s" % (n, out))


if __name__ == "__main__":
    main()
