#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# test/t_pkg_deb.sh - run by test/t_pkg_deb.c from the top of the tree.
# `make deb` builds libsecretmem1, libsecretmem-dev and secretmem from a copy
# of the tree; each package must hold its files and dependencies, the symbols
# file must match the library, lintian must report no error; the packages are
# extracted (dpkg -x) into a temporary root, a program is compiled through
# pkg-config against the extracted -dev package and run against the extracted
# library, and the extracted `secretmem check` runs.
# Exit 0 pass, 1 fail, 77 skip (last line: the reason).
set -u
# make check runs us: do not pass its variables (SANITIZE=..., -j) on
unset MAKEFLAGS MFLAGS MAKELEVEL
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "$*"; exit 77; }

for tool in dpkg-buildpackage dh dpkg-deb lintian pkg-config cc; do
	command -v "$tool" >/dev/null 2>&1 ||
		skip "$tool not found (sh scripts/deps.sh test installs debhelper, dpkg-dev, lintian, pkg-config)"
done
[ -f debian/control ] || fail "run from the top of the tree (no debian/control here)"

tmp=$(mktemp -d /tmp/secretmem-pkg.XXXXXX) || fail "mktemp"
[ -n "${SECRETMEM_TEST_KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT HUP
out=$tmp/out root=$tmp/root

# ---- build -------------------------------------------------------------------
t0=$(date +%s)
if ! DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" make -s deb DEB_OUT="$out" >"$tmp/build.log" 2>&1; then
	tail -n 40 "$tmp/build.log"
	fail "make deb failed (log above)"
fi
echo "make deb: $(( $(date +%s) - t0 )) s"
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
version=$(sed -n 's/^#define SECRETMEM_VERSION_STRING "\(.*\)"$/\1/p' include/secretmem.h)
debver=$(dpkg-parsechangelog -l debian/changelog -S Version)
case $debver in
"$version"-*) ;;
*) fail "debian/changelog version $debver does not match the header's SECRETMEM_VERSION_STRING $version" ;;
esac
lib=$out/libsecretmem1_${debver}_$arch.deb
dev=$out/libsecretmem-dev_${debver}_$arch.deb
cli=$out/secretmem_${debver}_$arch.deb
for d in "$lib" "$dev" "$cli"; do
	[ -f "$d" ] || { ls -l "$out"; fail "missing package ${d##*/}"; }
done

# A symbol the library exports but debian/libsecretmem1.symbols lacks (or the
# reverse) makes dpkg-gensymbols print a diff: add one line per new function.
if grep -q "dpkg-gensymbols: warning" "$tmp/build.log"; then
	sed -n '/dpkg-gensymbols: warning/,/^ *dh_/p' "$tmp/build.log"
	fail "debian/libsecretmem1.symbols does not match the library (diff above)"
fi

# ---- contents and dependencies ----------------------------------------------
has() { # package path...: each path is in the package
	pkg=$1; shift
	dpkg-deb -c "$pkg" | awk '{print $6}' >"$tmp/list"
	for p in "$@"; do
		grep -qx "\\./$p" "$tmp/list" || { cat "$tmp/list"; fail "${pkg##*/} lacks $p"; }
	done
}
lacks() { # package pattern: no path matches
	if dpkg-deb -c "$1" | awk '{print $6}' | grep -q "$2"; then
		fail "${1##*/} holds $2"
	fi
}
has "$lib" "usr/lib/$ma/libsecretmem.so.$version" "usr/lib/$ma/libsecretmem.so.1" \
	usr/share/doc/libsecretmem1/copyright
lacks "$lib" 'usr/include\|\.a$\|/bin/\|share/man'
has "$dev" usr/include/secretmem.h "usr/lib/$ma/libsecretmem.a" "usr/lib/$ma/libsecretmem.so" \
	"usr/lib/$ma/pkgconfig/secretmem.pc"
for m in man/man3/*.3; do
	has "$dev" "usr/share/man/man3/${m##*/}.gz"
done
has "$cli" usr/bin/secretmem "usr/lib/$ma/secretmem/libsecretmem-preload.so" \
	"usr/lib/$ma/secretmem/libsecretmem-heap.so" usr/share/man/man7/secretmem-heap.7.gz \
	usr/share/man/man1/secretmem.1.gz usr/share/man/man7/secretmem.7.gz \
	usr/share/man/man7/secretmem-preload.7.gz
lacks "$cli" 'libsecretmem\.so\|usr/include'

field() { dpkg-deb -f "$1" "$2"; }
case $(field "$dev" Depends) in
*"libsecretmem1 (= $debver)"*) ;;
*) fail "libsecretmem-dev does not depend on libsecretmem1 (= $debver): $(field "$dev" Depends)" ;;
esac
field "$lib" Depends | grep -q 'libc6' || fail "libsecretmem1 lacks its shlibs dependency on libc6"
field "$cli" Depends | grep -q 'libc6' || fail "secretmem lacks its shlibs dependency on libc6"
# The preload module finds OpenSSL in the program it is loaded into: no hard
# dependency on libssl.
field "$cli" Depends | grep -q 'libssl' && fail "secretmem depends on libssl: $(field "$cli" Depends)"
[ "$(field "$lib" Multi-Arch)" = same ] || fail "libsecretmem1 is not Multi-Arch: same"
dpkg-deb --ctrl-tarfile "$lib" | tar -t | grep -q '^\./symbols$' || fail "libsecretmem1 has no symbols file"
dpkg-deb --ctrl-tarfile "$lib" | tar -xO ./symbols >"$tmp/symbols"
nsym=$(grep -c '^ secretmem_' "$tmp/symbols")
nmap=$(grep -c '^[[:space:]]*secretmem_[a-z_0-9]*;' src/libsecretmem.map)
[ "$nsym" = "$nmap" ] || fail "symbols file lists $nsym functions, src/libsecretmem.map exports $nmap"

# ---- lintian -----------------------------------------------------------------
t0=$(date +%s)
lintian --pedantic "$out"/secretmem_"${debver}"_"$arch".changes >"$tmp/lintian.out" 2>&1
echo "lintian ($(( $(date +%s) - t0 )) s):"
grep -v '^running with root privileges' "$tmp/lintian.out" | sed 's/^/  /'
grep -q '^E:' "$tmp/lintian.out" && fail "lintian reports errors"

# ---- extract, compile against -dev through pkg-config, run ------------------
for d in "$lib" "$dev" "$cli"; do
	dpkg -x "$d" "$root" || fail "dpkg -x ${d##*/}"
done
cat >"$tmp/prog.c" <<'CEOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <secretmem.h>

int main(int argc, char **argv)
{
	Dl_info info;
	char *s = secretmem_strdup("hunter2");
	struct secretmem_stats st;

	if (!s || strcmp(s, "hunter2") != 0 || secretmem_stats(&st) != 0 || st.live_allocations != 1)
		return 2;
	secretmem_free(s);
	if (!dladdr((void *)secretmem_malloc, &info) || !info.dli_fname)
		return 3;
	printf("%s %s\n", info.dli_fname, secretmem_backend_name(secretmem_default_backend()));
	return argc > 1 && strncmp(info.dli_fname, argv[1], strlen(argv[1])) != 0 ? 4 : 0;
}
CEOF
export PKG_CONFIG_SYSROOT_DIR="$root" PKG_CONFIG_LIBDIR="$root/usr/lib/$ma/pkgconfig"
pcflags=$(pkg-config --cflags --libs secretmem) || fail "pkg-config does not find secretmem.pc"
echo "pkg-config: $pcflags"
[ "$(pkg-config --modversion secretmem)" = "$version" ] || fail "secretmem.pc version is not $version"
case $pcflags in
*"-I$root/usr/include"*"-L$root/usr/lib/$ma"*) ;;
*) fail "secretmem.pc does not point into /usr/include and /usr/lib/$ma" ;;
esac
# shellcheck disable=SC2086
cc -o "$tmp/prog" "$tmp/prog.c" $pcflags || fail "cannot compile against the extracted -dev package"
LD_LIBRARY_PATH="$root/usr/lib/$ma" "$tmp/prog" "$root/" || fail "the program linked against the package failed (exit $?)"
# shellcheck disable=SC2046
cc -o "$tmp/prog-static" "$tmp/prog.c" $(pkg-config --cflags secretmem) \
	"$root/usr/lib/$ma/libsecretmem.a" $(pkg-config --static --libs-only-other --libs-only-l secretmem | sed 's/-lsecretmem//') -ldl ||
	fail "cannot link the static library of the -dev package"
"$tmp/prog-static" "$tmp/prog-static" || fail "the statically linked program failed (exit $?)"

# The CLI looks for the preload module in the pkglibdir the build embedded.
grep -q "/usr/lib/$ma/secretmem" "$root/usr/bin/secretmem" ||
	fail "the packaged secretmem does not embed /usr/lib/$ma/secretmem"
LD_PRELOAD="$root/usr/lib/$ma/secretmem/libsecretmem-preload.so" /bin/true ||
	fail "the packaged preload module does not load"
LD_PRELOAD="$root/usr/lib/$ma/secretmem/libsecretmem-heap.so" /bin/true ||
	fail "the packaged heap module does not load"
"$root/usr/bin/secretmem" check >"$tmp/check.out" 2>&1
rc=$?
sed 's/^/  /' "$tmp/check.out" | head -n 3
case $rc in
0) ;;
2) [ "${SECRETMEM_TEST_REQUIRE_KERNEL:-}" = 1 ] && fail "the packaged secretmem check: not usable"
   echo "the packaged secretmem check ran (verdict: not usable on this kernel)" ;;
*) cat "$tmp/check.out"; fail "the packaged secretmem check exited $rc" ;;
esac
echo "pass: 3 packages built, lintian without errors, -dev usable through pkg-config, secretmem check ran"
exit 0
