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

MALLOC, MALLOC2, CALLOC, FREE, FREE2, REALLOC, REALLOC2, STRDUP, TRIM, \
    USABLE, HUGE, REFILL, REUSE, REALLOC0, OWNS, STATS = range(16)
TINY, SMALL, CLASS, ANY = range(4)
NCLASSES = 41


def op(code, slot=0, value=0, mode=SMALL, mod=0):
    return struct.pack("<BBH", code | mode << 4 | mod << 6, slot & 255, value & 0xffff)


ANY_SPLIT, ANY_SMALL, MAX_SIZE = 0xc000, 16400, 65536


def shape_any(v):
    """Mode ANY's size for value v, as shape_size() in fuzz_alloc.c."""
    if v < ANY_SPLIT:
        return v * (ANY_SMALL + 1) // ANY_SPLIT
    return ANY_SMALL + 1 + (v - ANY_SPLIT) * (MAX_SIZE - ANY_SMALL - 1) // (65535 - ANY_SPLIT)


def any_size(n):
    """The smallest value that mode ANY maps to at least n bytes (0..64 KiB)."""
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
s += b"".join(op(FREE, k) for k in range(0, 12, 2)) + op(TRIM)
s += b"".join(op(MALLOC, k, any_size(17000 + 2500 * k), ANY) for k in range(0, 12, 2))
s += b"".join(op(REUSE, k) for k in range(12)) + op(TRIM) + op(STATS)
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
s += op(TRIM)
seeds["fragment-256"] = s

# free and allocate the same size again and again (LIFO reuse, zero check)
s = b"".join(op(MALLOC, k, class_edge(k % NCLASSES, 0), CLASS) for k in range(20))
s += b"".join(op(REUSE, k % 20) + op(REFILL, (k * 7) % 20) for k in range(60))
seeds["reuse"] = s


# test/t_rel_fuzz_run runs with -max_len=256 (64 operations), and libFuzzer cuts
# longer seeds there: each longer seed is also written in parts of 64 operations
# (a free of an empty slot does nothing, and every input ends freeing all).
MAX_LEN = 256


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    n = 0
    for name, data in seeds.items():
        with open(os.path.join(out, "seed-" + name), "wb") as f:
            f.write(data)
        n += 1
        if len(data) > MAX_LEN:
            for k in range(1, (len(data) + MAX_LEN - 1) // MAX_LEN):
                with open(os.path.join(out, "seed-%s-part%d" % (name, k)), "wb") as f:
                    f.write(data[k * MAX_LEN:(k + 1) * MAX_LEN])
                n += 1
    print("wrote %d seeds to %s" % (n, out))


if __name__ == "__main__":
    main()
