#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# test/adopt_memzero.sh (run by t_adopt_memzero): secretmem_memzero is not
# removed as a dead store even when the optimizer sees through the call
# (src/util.c and the caller in one -O2 -flto link): a function copies a
# secret into a stack buffer, zeroes it and returns; a later, deeper frame
# must not find the secret.  The same program without the zeroing must find
# it (control: the scan can see the old frame; otherwise the test skips).
# With `memset` instead of explicit_bzero in util.c, gcc removes the zeroing.
# Bind-now linking (-z now, as the project links): the lazy-binding resolver
# would spill the caller's vector registers, which may hold the secret, to
# the stack - no zeroing function can reach that copy.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cat > "$tmp/dse.c" <<'C'
#include <secretmem.h>
#include <stdio.h>
#include <string.h>
#define SECRET "s3cr3t-dead-store-pattern-0123456789"
__attribute__((noinline)) static void use_secret(int zero)
{
	char buf[256];
	memcpy(buf, SECRET, sizeof(SECRET));
	__asm__ __volatile__("" : : "r"(buf) : "memory"); /* the secret is really stored */
	if (zero)
		secretmem_memzero(buf, sizeof(buf));
}
__attribute__((noinline)) static int scan_stack(void)
{
	volatile char probe[4096];
	char copy[4096];
	for (size_t i = 0; i < sizeof(copy); i++)
		copy[i] = probe[i]; /* what earlier frames left: indeterminate, on purpose */
	return memmem(copy, sizeof(copy), SECRET, 12) != NULL;
}
int main(int argc, char **argv)
{
	(void)argv;
	use_secret(argc == 1);
	return scan_stack();
}
C
ran=0
for cc in gcc clang; do
	command -v $cc >/dev/null || continue
	ld=""
	[ $cc = clang ] && ld="-fuse-ld=lld"
	if ! $cc -D_GNU_SOURCE -O2 -flto $ld -Wl,-z,now -Iinclude -Isrc -o "$tmp/dse-$cc" "$tmp/dse.c" src/util.c > "$tmp/log" 2>&1; then
		echo "$cc: no -flto link here, not checked"
		continue
	fi
	"$tmp/dse-$cc" control
	if [ $? != 1 ]; then
		echo "$cc: control did not find the unzeroed secret on the stack: cannot observe, not checked"
		continue
	fi
	"$tmp/dse-$cc" || fail "$cc -O2 -flto: the secret survived secretmem_memzero (dead store removed)"
	echo "$cc -O2 -flto: zeroed (control: the secret is found without the call)"
	ran=$((ran + 1))
done
[ $ran -gt 0 ] || { echo "skip: no compiler could observe the stack here"; exit 77; }
exit 0
