#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# test/adopt_static.sh (run by t_adopt_static): libsecretmem.a defines only
# the public secretmem_* symbols, so a program that defines every internal
# name of the library (os_lock, region_create, sm_fatal, ...) links with it
# statically and runs.  The internal archive, which does define them, must
# clash: that proves the program really reuses the names.
set -u
B=${SECRETMEM_BUILD:-build}
CC=${CC:-cc}
# a sanitizer build (build/san-address-undefined) links with the same flags
SAN=""
case $B in *san-*) SAN="-fsanitize=$(echo "${B##*san-}" | tr - ,)" ;; esac
command -v nm >/dev/null || { echo "skip: nm (binutils) is not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 1. global definitions of the public archive: secretmem_* only
nm -g --defined-only "$B/libsecretmem.a" | awk 'NF == 3 {print $3}' | sort -u > "$tmp/public"
[ -s "$tmp/public" ] || fail "no symbol defined by $B/libsecretmem.a"
bad=$(grep -v '^secretmem_' "$tmp/public")
[ -z "$bad" ] || fail "libsecretmem.a defines internal symbols:" $bad
echo "libsecretmem.a defines $(wc -l < "$tmp/public") symbols, all secretmem_*"

# 2. every internal name of the library (from the internal archive; not the
#    compiler's own, such as ASan's __odr_asan.x)
nm -g --defined-only "$B/libsecretmem-internal.a" | awk 'NF == 3 {print $3}' |
	grep -v '^secretmem_' | grep -E '^[A-Za-z][A-Za-z0-9_]*$' | sort -u > "$tmp/internal"
n=$(wc -l < "$tmp/internal")
[ "$n" -ge 40 ] || fail "only $n internal names found"
{
	echo '#include <secretmem.h>'
	echo '#include <stdio.h>'
	echo '#include <string.h>'
	while read -r s; do echo "int $s(void); int $s(void) { return 7; }"; done < "$tmp/internal"
	echo 'int main(void) {'
	echo '	int sum = 0;'
	while read -r s; do echo "	sum += $s();"; done < "$tmp/internal"
	echo "	if (sum != 7 * $n) return 3;"
	echo '	char *p = secretmem_strdup("key material");'
	echo '	struct secretmem_region *r = secretmem_region_create(4096, 0);'
	echo '	if (!p || !r || strcmp(p, "key material") != 0) return 2;'
	echo '	secretmem_free(p);'
	echo '	secretmem_region_destroy(r);'
	printf '%s\n' '	printf("own %d names, library works\n", sum / 7);'
	echo '	return 0;'
	echo '}'
} > "$tmp/clash.c"
$CC $SAN -std=c11 -Wall -Werror -Iinclude -o "$tmp/clash" "$tmp/clash.c" "$B/libsecretmem.a" -pthread \
	> "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "a program defining the $n internal names does not link with libsecretmem.a"; }
"$tmp/clash" || fail "the statically linked program failed (exit $?)"
# fully static as well, when libc.a is there
if [ -n "$SAN" ]; then
	echo "sanitizer build: -static link not tried"
elif $CC -static -std=c11 -Iinclude -o "$tmp/clash-static" "$tmp/clash.c" "$B/libsecretmem.a" -pthread >/dev/null 2>&1; then
	"$tmp/clash-static" || fail "the -static program failed (exit $?)"
else
	echo "no static libc: -static link not tried"
fi
# control: the same program against the internal archive must clash
if $CC $SAN -std=c11 -Iinclude -o "$tmp/ctl" "$tmp/clash.c" "$B/libsecretmem-internal.a" -pthread > "$tmp/log" 2>&1; then
	fail "control: linking with the internal archive did not clash (test proves nothing)"
fi
# a clash is a multiple definition, or (fatal at once, so it may be the only
# message, depending on the order of the member's symbols) a thread-local
# name of the library, such as sm_tls_tc, that the program defines as a
# function
grep -q "multiple definition\|TLS definition in .* mismatches non-TLS definition" "$tmp/log" ||
	{ cat "$tmp/log"; fail "control failed for another reason"; }
echo "control: the internal archive clashes ($(grep -c 'multiple definition\|mismatches non-TLS' "$tmp/log") clashes reported)"
echo "$n internal names: no clash with libsecretmem.a"
