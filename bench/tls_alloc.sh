#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# bench/tls_alloc.sh - the preload module's cost on OpenSSL's allocations
# for one HTTPS request of nginx (bench/tls_alloc.c), without the rest of
# nginx, TLS or the network: CPU time per request with no module and under
# `secretmem exec --mode secure` and `--mode all`.
#
#   sh bench/tls_alloc.sh [REQUESTS] [ROUNDS]             (defaults: 200000, 9)
#   SECRETMEM_BUILD=build/xyz sh bench/tls_alloc.sh        (another build)
#
# The modes take turns (the order rotating) ROUNDS times; reported per mode:
# the median ns per request, and the median [min-max] over the rounds of the
# per-round ratio to no module.
set -eu
n=${1:-200000}
rounds=${2:-9}
case $n in '' | *[!0-9]*) echo "REQUESTS must be a number" >&2; exit 64 ;; esac
case $rounds in '' | *[!0-9]*) echo "ROUNDS must be a number" >&2; exit 64 ;; esac
[ "$rounds" -ge 1 ] && [ "$rounds" -le 50 ] || { echo "ROUNDS: 1..50" >&2; exit 64; }
build=${SECRETMEM_BUILD:-build}
tool=$(realpath "$build/secretmem")
[ -x "$tool" ] && [ -f "$build/libsecretmem-preload.so" ] ||
	{ echo "tls_alloc: build the tool and the preload module first (make)" >&2; exit 77; }
tmp=$(mktemp -d /tmp/secretmem-tls-alloc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
${CC:-cc} -O2 -o "$tmp/tls_alloc" "$(dirname "$0")/tls_alloc.c" -lcrypto ||
	{ echo "tls_alloc: needs a C compiler and OpenSSL's headers (libssl-dev)" >&2; exit 77; }
: >"$tmp/results.txt"
r=0
while [ $r -lt "$rounds" ]; do
	case $((r % 3)) in 0) order="none secure all" ;; 1) order="secure all none" ;; *) order="all none secure" ;; esac
	for m in $order; do
		if [ $m = none ]; then
			v=$("$tmp/tls_alloc" "$n")
		else
			v=$("$tool" exec --mode $m -- "$tmp/tls_alloc" "$n")
		fi
		echo "$r $m $v" >>"$tmp/results.txt"
	done
	r=$((r + 1))
done
echo "secretmem tls_alloc benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "command: sh bench/tls_alloc.sh $n $rounds"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), nproc $(nproc), $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp/results.txt" <<'PY'
import sys, statistics
v = {}
for line in open(sys.argv[1]):
    r, m, ns = line.split()
    v[(int(r), m)] = float(ns)
rounds = sorted({k[0] for k in v})
print("%-7s %12s  %s" % ("mode", "ns/request", "x no module, median [min-max]"))
for m in ("none", "secure", "all"):
    ns = [v[(r, m)] for r in rounds]
    q = sorted(v[(r, m)] / v[(r, "none")] for r in rounds)
    print("%-7s %12.1f  %.3f [%.3f-%.3f]" % (m, statistics.median(ns), statistics.median(q), q[0], q[-1]))
PY
