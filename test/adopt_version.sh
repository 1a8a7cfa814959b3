#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# test/adopt_version.sh (run by t_adopt_version): one version everywhere -
# the header's SECRETMEM_VERSION_STRING (and MAJOR/MINOR), the newest NEWS
# section, secretmem_version() of the shared library, `secretmem --version`,
# secretmem.pc and the shared library's file name; NEWS has a 1.0.0 section.
set -u
B=${SECRETMEM_BUILD:-build}
CC=${CC:-cc}
# a sanitizer build (build/san-address-undefined) links with the same flags
SAN=""
case $B in *san-*) SAN="-fsanitize=$(echo "${B##*san-}" | tr - ,)" ;; esac
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
v=$(sed -n 's/^#define SECRETMEM_VERSION_STRING "\(.*\)"$/\1/p' include/secretmem.h)
major=$(sed -n 's/^#define SECRETMEM_VERSION_MAJOR \([0-9]*\)$/\1/p' include/secretmem.h)
minor=$(sed -n 's/^#define SECRETMEM_VERSION_MINOR \([0-9]*\)$/\1/p' include/secretmem.h)
case $v in "$major.$minor."*) ;; *) fail "SECRETMEM_VERSION_STRING $v does not match MAJOR $major MINOR $minor" ;; esac
news=$(sed -n 's/^\* \([0-9][0-9.]*\).*/\1/p' NEWS | head -n 1)
[ "$news" = "$v" ] || fail "newest NEWS section is '$news', header says $v"
grep -q '^\* 1\.0\.0$' NEWS || fail "NEWS has no 1.0.0 section"
out=$("$B/secretmem" --version) || fail "secretmem --version failed"
[ "$out" = "secretmem $v" ] || fail "secretmem --version: '$out'"
pc=$(sed -n 's/^Version: //p' "$B/secretmem.pc")
[ "$pc" = "$v" ] || fail "secretmem.pc says '$pc'"
[ -f "$B/libsecretmem.so.$v" ] || fail "no $B/libsecretmem.so.$v"
printf '#include <secretmem.h>\n#include <stdio.h>\nint main(void) { puts(secretmem_version()); return 0; }\n' > "$tmp/v.c"
$CC $SAN -Iinclude -o "$tmp/v" "$tmp/v.c" -L"$B" -lsecretmem -Wl,-rpath,"$(realpath "$B")" || fail "cannot build against $B/libsecretmem.so"
out=$("$tmp/v") || fail "program failed"
[ "$out" = "$v" ] || fail "secretmem_version() of the shared library: '$out'"
for f in man/man*/*.[0-9]; do
	th=$(sed -n 's/^\.TH .*"secretmem \([0-9.]*\)".*/\1/p' "$f")
	[ -z "$th" ] || [ "$th" = "$v" ] || fail "$f says secretmem $th"
done
py=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' python/secretmem/__init__.py)
[ "$py" = "$v" ] || fail "python/secretmem says $py"
grep -q "^version = \"$v\"$" python/pyproject.toml || fail "python/pyproject.toml does not say $v"
deb=$(sed -n '1s/^secretmem (\([0-9.]*\)-.*/\1/p' debian/changelog)
[ "$deb" = "$v" ] || fail "debian/changelog says $deb"
echo "version $v: header, NEWS, library, CLI, .pc, file name, man pages, Python and Debian agree"
