#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# scripts/deps.sh - install what secretmem needs from Debian's packages.
#   sh scripts/deps.sh build   compiler, make, pkg-config: enough for `make`, `make install` and `secretmem check`
#   sh scripts/deps.sh test    plus everything `make check`, `make bench` and `make fuzz` use
set -eu
what=${1:-build}
build_pkgs="gcc make libc6-dev binutils pkg-config"
test_pkgs="$build_pkgs clang libclang-rt-14-dev python3 openssl libssl-dev libsodium-dev
	nginx-light curl gdb valgrind gnuplot-nox procps util-linux systemd
	libmimalloc2.0 libjemalloc2 libtcmalloc-minimal4 g++ wrk"
# Debian packages (make deb, test/t_pkg_deb: python3-secretmem is built with
# dh-python and pybuild) and the Python binding (test/t_py_*: mypy for its
# annotations, cryptography and PyNaCl for the copy table of python/README.md)
test_pkgs="$test_pkgs debhelper dpkg-dev fakeroot lintian python3-venv python3-pip
	dh-python pybuild-plugin-pyproject python3-all python3-mypy python3-cryptography python3-nacl"
# the Rust and Go bindings (test/t_rust_*: cargo test --offline in
# bindings/rust; test/t_go_*: go test in bindings/go)
test_pkgs="$test_pkgs cargo golang-go"
# the heap-mode proofs (test/t_heap_*: ssh-agent, gpg-agent, Python's test_ssl)
test_pkgs="$test_pkgs openssh-client gpg gpg-agent gpgconf libpython3.11-testsuite"
# the proofs that heap mode covers what libraries lock themselves
# (test/t_heap_lock_*, issue 29): helpers of ours linked with libgcrypt
# and Botan 2 (libsodium-dev and libssl-dev are above)
test_pkgs="$test_pkgs libgcrypt20-dev libbotan-2-dev"
case $what in
build) pkgs=$build_pkgs ;;
test) pkgs=$test_pkgs ;;
*) echo "usage: sh scripts/deps.sh build|test" >&2; exit 64 ;;
esac
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
