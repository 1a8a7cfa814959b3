#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# test/inst_prefix.sh (run by t_inst_prefix): after a plain `make`, install
# into two prefixes; in each, a program built with that prefix's pkg-config
# (shared and static) runs, and that prefix's `secretmem exec` finds its own
# preload module.  Also: the recorded configuration is rewritten only when it
# changes, DESTDIR and LIBDIR are honoured, uninstall removes every file,
# CPPFLAGS with its own _FORTIFY_SOURCE builds with -Werror, WERROR=0 and
# LDFLAGS reach the command lines.  Works on a copy of the sources.
set -u
CC=${CC:-cc}
# a plain build of its own, whatever `make check ...` was given: make exports
# its command-line variables (SANITIZE=..., BUILD=...) into the environment too
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES SANITIZE BUILD
command -v pkg-config >/dev/null || { echo "skip: pkg-config is not installed (sh scripts/deps.sh test)"; exit 77; }
command -v make >/dev/null || { echo "skip: make is not installed"; exit 77; }
top=$(pwd)
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir "$tmp/src"
cp -a Makefile include src tools preload heap man examples "$tmp/src/" || fail "copy the sources"
cd "$tmp/src" || exit 1
M="make -s -j2 FUZZ=0"
$M > "$tmp/build.log" 2>&1 || { tail -n 30 "$tmp/build.log"; fail "plain make"; }
grep -q 'prefix=/usr/local$' build/secretmem.pc || fail "plain make: .pc is not for /usr/local"

cat > "$tmp/prog.c" <<'C'
#include <secretmem.h>
#include <stdio.h>
int main(void)
{
	char *s = secretmem_strdup("hello");
	if (!s)
		return 2;
	int eq = secretmem_memeq(s, "hello", 6);
	printf("%s %d\n", secretmem_version(), eq);
	secretmem_free(s);
	return eq ? 0 : 1;
}
C
version=$(sed -n 's/^#define SECRETMEM_VERSION_STRING "\(.*\)"$/\1/p' include/secretmem.h)
for p in one two; do
	P="$tmp/$p"
	$M install PREFIX="$P" > "$tmp/install-$p.log" 2>&1 || { tail -n 30 "$tmp/install-$p.log"; fail "install PREFIX=$P"; }
	pc="$P/lib/pkgconfig"
	[ "$(PKG_CONFIG_PATH=$pc pkg-config --variable=prefix secretmem)" = "$P" ] || fail "$p: .pc prefix is not $P"
	[ "$(PKG_CONFIG_PATH=$pc pkg-config --modversion secretmem)" = "$version" ] || fail "$p: .pc version"
	flags=$(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs secretmem)
	libdir=$(PKG_CONFIG_PATH=$pc pkg-config --variable=libdir secretmem)
	$CC -std=c11 -Wall -Werror -o "$tmp/prog-$p" "$tmp/prog.c" $flags -Wl,-rpath,"$libdir" || fail "$p: shared build"
	out=$("$tmp/prog-$p") || fail "$p: shared program failed"
	[ "$out" = "$version 1" ] || fail "$p: shared program printed '$out'"
	ldd "$tmp/prog-$p" | grep -q "$P/lib/libsecretmem.so.1" || fail "$p: program does not use $P's library"
	sflags=$(PKG_CONFIG_PATH=$pc pkg-config --static --cflags --libs secretmem)
	$CC -static -std=c11 -Wall -Werror -o "$tmp/prog-$p-static" "$tmp/prog.c" $sflags || fail "$p: static build"
	out=$("$tmp/prog-$p-static") || fail "$p: static program failed"
	[ "$out" = "$version 1" ] || fail "$p: static program printed '$out'"
	echo "$p: pkg-config builds (shared, static) run: $out"
done
# each installed CLI finds the module of its own prefix (checked after both
# installs: the second did not change the first)
for p in one two; do
	P="$tmp/$p"
	out=$("$P/bin/secretmem" exec -- sh -c 'echo "$LD_PRELOAD"') || fail "$p: secretmem exec failed (exit $?)"
	[ "$out" = "$P/lib/secretmem/libsecretmem-preload.so" ] || fail "$p: secretmem exec preloads '$out'"
	echo "$p: secretmem exec preloads $out"
done

# the configuration file is rewritten (and the CLI relinked) only on change
before=$(stat -c %Y.%s build/secretmem build/config.mk)
sleep 1
$M PREFIX="$tmp/two" > /dev/null 2>&1 || fail "make with the same PREFIX"
[ "$(stat -c %Y.%s build/secretmem build/config.mk)" = "$before" ] || fail "same PREFIX rebuilt the CLI"
$M > /dev/null 2>&1 || fail "make with the default PREFIX"
grep -q '^PREFIX=/usr/local$' build/config.mk || fail "config.mk not rewritten for /usr/local"
grep -q 'prefix=/usr/local$' build/secretmem.pc || fail ".pc not rebuilt for /usr/local"
strings build/secretmem | grep -q '^/usr/local/lib/secretmem$' || fail "CLI not rebuilt for /usr/local"
echo "configuration: same values rebuild nothing, a new PREFIX rebuilds the .pc and the CLI"

# DESTDIR and LIBDIR; uninstall leaves no file
$M install DESTDIR="$tmp/stage" PREFIX=/usr LIBDIR=/usr/lib/x86_64-linux-gnu > /dev/null 2>&1 || fail "install DESTDIR"
S="$tmp/stage/usr/lib/x86_64-linux-gnu"
[ -f "$S/libsecretmem.so.$version" ] && [ -f "$S/secretmem/libsecretmem-preload.so" ] &&
	[ -f "$S/secretmem/libsecretmem-heap.so" ] &&
	[ -f "$tmp/stage/usr/bin/secretmem" ] && [ -f "$tmp/stage/usr/share/man/man7/secretmem.7" ] ||
	fail "DESTDIR/LIBDIR layout"
grep -q '^libdir=/usr/lib/x86_64-linux-gnu$' "$S/pkgconfig/secretmem.pc" || fail "LIBDIR not in the .pc"
strings "$tmp/stage/usr/bin/secretmem" | grep -q '^/usr/lib/x86_64-linux-gnu/secretmem$' || fail "PKGLIBDIR not in the CLI"
$M uninstall DESTDIR="$tmp/stage" PREFIX=/usr LIBDIR=/usr/lib/x86_64-linux-gnu > /dev/null 2>&1 || fail "uninstall DESTDIR"
left=$(find "$tmp/stage" ! -type d)
[ -z "$left" ] || fail "uninstall left: $left"
$M uninstall PREFIX="$tmp/one" > /dev/null 2>&1 || fail "uninstall one"
left=$(find "$tmp/one" ! -type d)
[ -z "$left" ] || fail "uninstall left: $left"
[ -x "$tmp/two/bin/secretmem" ] || fail "uninstall of one touched two"
echo "DESTDIR, LIBDIR: honoured; uninstall removes every file"

# flags: a distribution's _FORTIFY_SOURCE wins and builds with -Werror;
# WERROR=0 drops -Werror; LDFLAGS reach the link
$M BUILD=b3 CPPFLAGS=-D_FORTIFY_SOURCE=3 b3/libsecretmem.a > "$tmp/b3.log" 2>&1 ||
	{ tail -n 20 "$tmp/b3.log"; fail "CPPFLAGS=-D_FORTIFY_SOURCE=3 does not build"; }
line=$(make -n -B BUILD=b3 CPPFLAGS=-D_FORTIFY_SOURCE=3 b3/obj/util.o)
case $line in *-D_FORTIFY_SOURCE=2*) fail "our _FORTIFY_SOURCE=2 is added to the user's: $line" ;; esac
case $line in *-D_FORTIFY_SOURCE=3*) ;; *) fail "CPPFLAGS missing: $line" ;; esac
case $line in *-Werror*) ;; *) fail "-Werror is not the default" ;; esac
line=$(make -n -B BUILD=b3 b3/obj/util.o)
case $line in *"-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2"*) ;; *) fail "default fortify missing: $line" ;; esac
line=$(make -n -B BUILD=b3 WERROR=0 b3/obj/util.o)
case $line in *-Werror*) fail "WERROR=0 still has -Werror" ;; esac
line=$(make -n -B BUILD=b3 LDFLAGS=-Wl,--build-id=sha1 b3/libsecretmem.so.$version)
case $line in *-Wl,--build-id=sha1*) ;; *) fail "LDFLAGS not in the link: $line" ;; esac
echo "flags: CPPFLAGS=-D_FORTIFY_SOURCE=3 builds with -Werror; WERROR=0; LDFLAGS honoured"
cd "$top"
