#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# test/adopt_systemd.sh (run by t_adopt_systemd): examples/nginx-secretmem.service
# passes `systemd-analyze verify` without a word (unknown keys, missing
# commands and man pages are reported), allows memfd_secret on top of
# @system-service and sets LimitMEMLOCK; and what the README says of
# systemd 252 holds: @system-service, expanded, does not contain memfd_secret.
set -u
unit=examples/nginx-secretmem.service
command -v systemd-analyze >/dev/null || { echo "skip: systemd-analyze is not installed"; exit 77; }
[ -x /usr/sbin/nginx ] || { echo "skip: nginx is not installed (sh scripts/deps.sh test)"; exit 77; }
B=${SECRETMEM_BUILD:-build}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

grep -qx 'SystemCallFilter=@system-service' $unit || fail "no SystemCallFilter=@system-service"
grep -qx 'SystemCallFilter=memfd_secret' $unit || fail "memfd_secret is not allowed"
grep -Eqx 'LimitMEMLOCK=[0-9]+[KMG]?' $unit || fail "no LimitMEMLOCK="
# the installed path of the CLI becomes the built one; man pages from the tree
sed "s|/usr/local/bin/secretmem|$(realpath "$B/secretmem")|" $unit > "$tmp/nginx-secretmem.service"
grep -q "$(realpath "$B/secretmem") exec" "$tmp/nginx-secretmem.service" || fail "ExecStart does not run secretmem exec"
MANPATH=$(pwd)/man systemd-analyze verify "$tmp/nginx-secretmem.service" > "$tmp/out" 2>&1
rc=$?
[ $rc = 0 ] && [ ! -s "$tmp/out" ] || { cat "$tmp/out"; fail "systemd-analyze verify: exit $rc or messages"; }
echo "systemd-analyze verify: clean"

# expand a syscall group recursively
expand() {
	systemd-analyze syscall-filter "$1" 2>/dev/null | awk 'NR > 1 && $1 !~ /^#/ {print $1}' | while read -r s; do
		case $s in @*) expand "$s" ;; *) echo "$s" ;; esac
	done
}
expand @system-service | sort -u > "$tmp/set"
[ "$(wc -l < "$tmp/set")" -gt 200 ] || fail "could not expand @system-service ($(wc -l < "$tmp/set") calls)"
ver=$(systemd-analyze --version | awk 'NR == 1 {print $2}')
if grep -qx memfd_secret "$tmp/set"; then
	[ "$ver" != 252 ] || fail "systemd 252's @system-service contains memfd_secret: the README is wrong"
	echo "systemd $ver: @system-service contains memfd_secret (the extra line is harmless)"
else
	echo "systemd $ver: @system-service ($(wc -l < "$tmp/set") calls) lacks memfd_secret: the extra line is needed"
fi
