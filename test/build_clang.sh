#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# test/build_clang.sh (run by t_build_clang): the README's `make CC=clang`
# builds everything `make` builds (library, CLI, preload and heap modules,
# examples) with -Werror, and each shared object exports the same symbols as
# the gcc build under test.  clang 14 once dropped visibility("default")
# from the definitions of read, recv, recvfrom, poll and ppoll that glibc's
# _FORTIFY_SOURCE headers had defined inline first: a clang-built heap
# module did not interpose them.
set -u
fail() { echo "FAIL: $*"; exit 1; }
command -v clang >/dev/null || { echo "skip: clang is not installed"; exit 77; }
ref=${SECRETMEM_BUILD:-build}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SANITIZE -u BUILD \
	make -s -j2 CC=clang BUILD="$tmp/b" all > "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "make CC=clang"; }
exports() { nm -D --defined-only "$1" | awk '{print $3}' | sort -u; }
for so in libsecretmem.so libsecretmem-preload.so libsecretmem-heap.so; do
	[ -f "$ref/$so" ] || fail "$ref/$so: not built"
	exports "$ref/$so" > "$tmp/gcc"
	exports "$tmp/b/$so" > "$tmp/clang"
	missing=$(comm -23 "$tmp/gcc" "$tmp/clang" | tr '\n' ' ')
	extra=$(comm -13 "$tmp/gcc" "$tmp/clang" | tr '\n' ' ')
	[ -z "$missing$extra" ] || fail "$so built by clang: missing exports: ${missing:-none}; extra: ${extra:-none}"
	echo "$so: $(wc -l < "$tmp/gcc") exports, the same with clang"
done
