#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# test/adopt_attrs.sh (run by t_adopt_attrs): the attributes of secretmem.h
# make gcc warn about free() on a secretmem block, a write past the size
# asked for (-O2 -Wall) and an ignored result; correct code stays clean; the
# header compiles without a warning as C11 and C++11 with gcc and clang.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v gcc >/dev/null || { echo "skip: gcc is not installed"; exit 77; }
gccmajor=$(gcc -dumpversion | cut -d. -f1)

# expect_warn NAME REGEX: compiles $tmp/NAME.c, wants a warning matching REGEX
expect_warn() {
	gcc -std=c11 -O2 -Wall -Wextra -Iinclude -c -o "$tmp/$1.o" "$tmp/$1.c" > "$tmp/$1.log" 2>&1 ||
		{ cat "$tmp/$1.log"; fail "$1: does not compile"; }
	grep -Eq "$2" "$tmp/$1.log" || { cat "$tmp/$1.log"; fail "$1: no warning matching '$2'"; }
	echo "$1: $(grep -Eo "$2" "$tmp/$1.log" | head -n 1)"
}

cat > "$tmp/free.c" <<'C'
#include <secretmem.h>
#include <stdlib.h>
void f(void);
void f(void) { char *p = secretmem_malloc(32); if (p) { p[0] = 1; free(p); } }
C
cat > "$tmp/overflow.c" <<'C'
#include <secretmem.h>
#include <string.h>
void f(void);
void f(void) { char *p = secretmem_malloc(8); if (p) { memset(p, 1, 16); secretmem_free(p); } }
C
cat > "$tmp/overflow_idx.c" <<'C'
#include <secretmem.h>
void f(void);
void f(void) { char *p = secretmem_calloc(4, 2); if (p) { p[8] = 1; secretmem_free(p); } }
C
cat > "$tmp/ignored.c" <<'C'
#include <secretmem.h>
void f(void);
void f(void) { secretmem_malloc(32); }
C
cat > "$tmp/ignored_protect.c" <<'C'
#include <secretmem.h>
void f(struct secretmem_region *r);
void f(struct secretmem_region *r) { secretmem_region_protect(r, SECRETMEM_READONLY); }
C
cat > "$tmp/ignored_memeq.c" <<'C'
#include <secretmem.h>
void f(const char *a, const char *b);
void f(const char *a, const char *b) { secretmem_memeq(a, b, 4); }
C
cat > "$tmp/null_strdup.c" <<'C'
#include <secretmem.h>
void f(void);
void f(void) { char *p = secretmem_strdup(NULL); secretmem_free(p); }
C
if [ "$gccmajor" -ge 11 ]; then
	expect_warn free "mismatched-dealloc|free-nonheap-object"
else
	echo "gcc $gccmajor < 11: malloc(secretmem_free) not available, free() check not run"
fi
expect_warn overflow "stringop-overflow|array-bounds"
expect_warn overflow_idx "stringop-overflow|array-bounds"
expect_warn ignored "unused-result"
expect_warn ignored_protect "unused-result"
expect_warn ignored_memeq "unused-result"
expect_warn null_strdup "nonnull"

# correct use, including what the contracts allow: no warning at all
cat > "$tmp/clean.c" <<'C'
#include <secretmem.h>
#include <stdlib.h>
#include <string.h>
int f(const char *pw);
int f(const char *pw)
{
	char *p = secretmem_malloc(8), *q;
	if (!p)
		return -1;
	memset(p, 1, 8);
	q = secretmem_realloc(p, secretmem_usable_size(p)); /* the documented way to use it all */
	if (!q) {
		secretmem_free(p);
		return -1;
	}
	memset(q, 2, secretmem_usable_size(q));
	int eq = secretmem_memeq(q, pw, 8);
	secretmem_memzero(q, 8);
	secretmem_free(q);
	secretmem_free(NULL);
	secretmem_region_destroy(NULL); /* result may be ignored */
	void *l = malloc(4);
	free(l);
	return eq;
}
C
for cc in gcc clang; do
	command -v $cc >/dev/null || { echo "$cc not installed: not checked"; continue; }
	$cc -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -Iinclude -c -o "$tmp/clean.o" "$tmp/clean.c" ||
		fail "$cc: correct code warns"
	printf '#include <secretmem.h>\nint main(void) { return secretmem_owns(0); }\n' > "$tmp/h.c"
	$cc -std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude -c -o "$tmp/h.o" "$tmp/h.c" ||
		fail "$cc: the header does not compile clean as C11"
	cxx=g++; [ $cc = clang ] && cxx=clang++
	if command -v $cxx >/dev/null; then
		printf '#include <secretmem.h>\nint main() { char *p = static_cast<char *>(secretmem_malloc(4));\n secretmem_free(p); return secretmem_owns(nullptr); }\n' > "$tmp/h.cc"
		$cxx -std=c++11 -Wall -Wextra -Wpedantic -Werror -Iinclude -c -o "$tmp/hcc.o" "$tmp/h.cc" ||
			fail "$cxx: the header does not compile clean as C++11"
		echo "$cc: clean as C11, $cxx: clean as C++11"
	else
		echo "$cc: clean as C11 ($cxx not installed)"
	fi
done
# run time, with -D_FORTIFY_SOURCE=2: alloc_size makes the size asked for the
# object size, so writing the whole usable size aborts - unless the block is
# first resized to it with secretmem_realloc, which keeps it in place
B=${SECRETMEM_BUILD:-build}
SAN=""
case $B in *san-*) SAN="-fsanitize=$(echo "${B##*san-}" | tr - ,)" ;; esac
cat > "$tmp/usable.c" <<'C'
#include <secretmem.h>
#include <stdio.h>
#include <string.h>
static int plain(void)
{
	char *p = secretmem_malloc(8);
	if (!p)
		return 2;
	memset(p, 1, secretmem_usable_size(p));
	secretmem_free(p);
	return 0;
}
static int resized(void) /* the documented way */
{
	char *p = secretmem_malloc(8);
	if (!p)
		return 2;
	char *q = secretmem_realloc(p, secretmem_usable_size(p));
	if (q != p)
		return 3;
	memset(q, 1, secretmem_usable_size(q));
	secretmem_free(q);
	return 0;
}
int main(int argc, char **argv)
{
	(void)argv;
	return argc > 1 ? resized() : plain();
}
C
if [ -z "$SAN" ]; then
	gcc -std=c11 -O2 -D_FORTIFY_SOURCE=2 -Iinclude -o "$tmp/usable" "$tmp/usable.c" "$B/libsecretmem.a" -pthread ||
		fail "usable.c does not build"
	"$tmp/usable" realloc || fail "realloc(p, usable size) then using it all failed (exit $?)"
	"$tmp/usable" > "$tmp/u.log" 2>&1 && fail "fortify did not stop a write of the usable size past the request"
	grep -q "buffer overflow detected" "$tmp/u.log" || { cat "$tmp/u.log"; fail "unexpected failure"; }
	echo "fortify: writing the usable size aborts, after secretmem_realloc(p, usable) it works"
fi
# SECRETMEM_NO_ATTRIBUTES turns them off
gcc -std=c11 -O2 -Wall -DSECRETMEM_NO_ATTRIBUTES -Iinclude -c -o "$tmp/x.o" "$tmp/ignored.c" > "$tmp/x.log" 2>&1
[ -s "$tmp/x.log" ] && { cat "$tmp/x.log"; fail "SECRETMEM_NO_ATTRIBUTES: still warns"; }
echo "SECRETMEM_NO_ATTRIBUTES: no warning"
exit 0
