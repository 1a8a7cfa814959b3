#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# test/t_pkg_deb.sh - run by test/t_pkg_deb.c from the top of the tree.
# `make deb` builds libsecretmem1, libsecretmem-dev, secretmem and
# python3-secretmem from a copy of the tree; each package must hold its files
# and dependencies, the symbols file must match the library, lintian must
# report no error; the packages are extracted (dpkg -x) into a temporary root,
# a program is compiled through pkg-config against the extracted -dev package
# and run against the extracted library, the extracted `secretmem check` runs,
# and Debian's /usr/bin/python3 imports the extracted module, which finds the
# extracted library through the dynamic loader.
# Exit 0 pass, 1 fail, 77 skip (last line: the reason).
set -u
# make check runs us: do not pass its variables (SANITIZE=..., -j) on
unset MAKEFLAGS MFLAGS MAKELEVEL
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "$*"; exit 77; }

for tool in dpkg-buildpackage dh dpkg-deb lintian pkg-config cc dh_python3 pybuild /usr/bin/python3; do
	command -v "$tool" >/dev/null 2>&1 ||
		skip "$tool not found (sh scripts/deps.sh test installs debhelper, dpkg-dev, lintian, pkg-config, dh-python, pybuild-plugin-pyproject, python3-all)"
done
[ -f debian/control ] || fail "run from the top of the tree (no debian/control here)"
if ! dpkg-checkbuilddeps >/dev/null 2>&1; then
	dpkg-checkbuilddeps 2>&1 | tail -n 1
	skip "build dependencies of debian/control missing (sh scripts/deps.sh test installs them)"
fi

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
py=$out/python3-secretmem_${debver}_all.deb
for d in "$lib" "$dev" "$cli" "$py"; do
	[ -f "$d" ] || { ls -l "$out"; fail "missing package ${d##*/}"; }
done

# A symbol the library exports but debian/libsecretmem1.symbols lacks (or the
# reverse) makes dpkg-gensymbols print a diff: add one line per new function.
if grep -q "dpkg-gensymbols: warning" "$tmp/build.log"; then
	sed -n '/dpkg-gensymbols: warning/,/^ *dh_/p' "$tmp/build.log"
	fail "debian/libsecretmem1.symbols does not match the library (diff above)"
fi

# A substitution variable that no debhelper defines (${python3:Provides} in
# Debian 12's dh-python) leaves an empty field behind a warning.
if grep -q "substitution variable .* used, but is not defined" "$tmp/build.log"; then
	grep "substitution variable" "$tmp/build.log"
	fail "debian/control uses an undefined substitution variable"
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
pyd=usr/lib/python3/dist-packages
has "$py" "$pyd/secretmem/__init__.py" "$pyd/secretmem/_lib.py" "$pyd/secretmem/_getpass.py" \
	"$pyd/secretmem/py.typed" "$pyd/secretmem-$version.dist-info/METADATA" \
	usr/share/doc/python3-secretmem/copyright
lacks "$py" '\.so\|usr/include\|__pycache__\|\.pyc$\|/bin/'
[ "$(dpkg-deb -f "$py" Architecture)" = all ] || fail "python3-secretmem is not Architecture: all"
# dh_python3 byte-compiles at install time for the Pythons installed
dpkg-deb --ctrl-tarfile "$py" | tar -xO ./postinst 2>/dev/null | grep -q 'py3compile -p python3-secretmem' ||
	fail "python3-secretmem has no postinst calling py3compile (dh_python3)"

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
# The binding declares every function of the header, so it needs the
# library version that brought the newest of them (the symbols file's).
pydeps=$(field "$py" Depends)
case $pydeps in
python3:any,*|python3,*|*", python3:any"*|*", python3"[,\ ]*|*", python3") ;;
*) fail "python3-secretmem does not depend on python3: $pydeps" ;;
esac
need=$(PYTHONPATH=python /usr/bin/python3 -c '
import ast, sys
tree = ast.parse(open("python/secretmem/_lib.py").read())
names = [k.value for n in ast.walk(tree) if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") == "SIGNATURES"
         for k in n.value.keys]
vers = {}
for line in open("debian/libsecretmem1.symbols"):
    f = line.split()
    if len(f) == 2 and "@" in f[0]:
        vers[f[0].split("@")[0]] = f[1]
missing = [n for n in names if n not in vers]
if missing or len(names) < 20:
    sys.exit("not in the symbols file: %s (%d names)" % (missing, len(names)))
print(max((vers[n] for n in names), key=lambda v: tuple(map(int, v.split(".")))))
') || fail "cannot find the library version the binding needs"
case $pydeps in
*"libsecretmem1 (>= $need)"*) ;;
*) fail "python3-secretmem must depend on libsecretmem1 (>= $need) (the newest symbol it declares): $pydeps" ;;
esac
echo "python3-secretmem: Depends: $pydeps"
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
for d in "$lib" "$dev" "$cli" "$py"; do
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
# Debian's python3 imports the packaged module (from outside the source tree:
# no build-tree library), which loads libsecretmem.so.1 through the dynamic
# loader - here the extracted one.
(cd / && LD_LIBRARY_PATH="$root/usr/lib/$ma" PYTHONPATH="$root/$pyd" PYTHONDONTWRITEBYTECODE=1 \
	SECRETMEM_LIBRARY= /usr/bin/python3 -c '
import sys, secretmem
root, version = sys.argv[1], sys.argv[2]
assert secretmem.__file__.startswith(root + "/usr/lib/python3/dist-packages/secretmem/"), secretmem.__file__
assert secretmem.lib.path == "libsecretmem.so.1", secretmem.lib.path
maps = [l.split()[-1] for l in open("/proc/self/maps") if "libsecretmem" in l]
assert maps and all(m.startswith(root + "/") for m in maps), maps
assert secretmem.__version__ == version, secretmem.__version__
with secretmem.Secret(16) as s:
    s.view()[:] = b"0123456789abcdef"
    assert s == b"0123456789abcdef"
print("python3 imports the packaged secretmem", secretmem.__version__, "supported:", secretmem.supported(),
      "backend:", secretmem.backend)
' "$root" "$version") >"$tmp/py.out" 2>&1 || { cat "$tmp/py.out"; fail "/usr/bin/python3 cannot use the extracted python3-secretmem"; }
cat "$tmp/py.out"
echo "pass: 4 packages built, lintian without errors, -dev usable through pkg-config, secretmem check ran, python3 imports secretmem"
exit 0
