#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# bench/preload_bench.sh - cost of the preload module, side by side in one run.
#
#   sh bench/preload_bench.sh [SECONDS] [ROUNDS]       (defaults: 5 s, 3 rounds)
#   SECRETMEM_BUILD=build/xyz sh bench/preload_bench.sh  (module of another build)
#
# For each mode (no module, off, secure, all) an `openssl s_server` with an
# RSA-2048 key serves full TLS handshakes (`openssl s_time -new`, a new
# session each time) for SECONDS; the modes take turns, ROUNDS times, so that
# a noisy machine hurts them alike.  Prints handshakes per second (median of
# the rounds) and the change against no module, the server's secret memory
# (Rss of its /secretmem mappings) and its total Rss; then signatures per
# second of `openssl speed` (RSA-2048, Ed25519) under each mode.
set -eu
secs=${1:-5}
rounds=${2:-3}
build=${SECRETMEM_BUILD:-build}
preload=$(realpath "$build/libsecretmem-preload.so")
command -v openssl >/dev/null || { echo "openssl not installed" >&2; exit 77; }
tmp=$(mktemp -d /tmp/secretmem-bench.XXXXXX)
server=""
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$tmp/key.pem" 2>/dev/null
openssl req -x509 -new -key "$tmp/key.pem" -out "$tmp/crt.pem" -days 2 -subj /CN=bench 2>/dev/null

modes="none off secure all"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 24433)

# start_server MODE: starts s_server in the background, sets $server.
start_server() {
	if [ "$1" = none ]; then
		openssl s_server -www -quiet -accept "127.0.0.1:$port" -key "$tmp/key.pem" -cert "$tmp/crt.pem" \
			</dev/null >"$tmp/server.log" 2>&1 &
	else
		LD_PRELOAD="$preload" SECRETMEM_OPENSSL="$1" openssl s_server -www -quiet \
			-accept "127.0.0.1:$port" -key "$tmp/key.pem" -cert "$tmp/crt.pem" \
			</dev/null >"$tmp/server.log" 2>&1 &
	fi
	server=$!
	i=0
	until openssl s_client -connect "127.0.0.1:$port" </dev/null >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -gt 100 ] && { echo "s_server ($1) did not start" >&2; cat "$tmp/server.log" >&2; exit 1; }
		sleep 0.05
	done
}

stop_server() {
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
	server=""
}

# kB of Rss: all, and of the /secretmem mappings, of process $1
rss() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { s = ($0 ~ / \/secretmem /) }
	     /^Rss:/ { t += $2; if (s) m += $2 }
	     END { printf "%d %d\n", t, m }' "/proc/$1/smaps"
}

for r in $(seq 1 "$rounds"); do
	for m in $modes; do
		start_server "$m"
		t0=$(date +%s.%N)
		n=$(openssl s_time -connect "127.0.0.1:$port" -new -time "$secs" 2>/dev/null |
			awk '/connections in .* real seconds/ { print $1; exit }')
		t1=$(date +%s.%N)
		set -- $(rss "$server")
		echo "$m $r $(echo "$n $t0 $t1" | awk '{ printf "%.1f", $1 / ($3 - $2) }') $1 $2" >>"$tmp/results"
		stop_server
	done
done

echo "openssl s_server, RSA-2048, full TLS handshakes (s_time -new, ${secs}s x $rounds rounds, median)"
echo
printf '| mode | handshakes/s | vs. no module | server Rss | secret memory |\n'
printf '|---|---|---|---|---|\n'
base=""
for m in $modes; do
	med=$(awk -v m="$m" '$1 == m { print $3 }' "$tmp/results" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	rssk=$(awk -v m="$m" '$1 == m { print $4 }' "$tmp/results" | sort -n | tail -1)
	sec=$(awk -v m="$m" '$1 == m { print $5 }' "$tmp/results" | sort -n | tail -1)
	[ -z "$base" ] && base=$med
	delta=$(echo "$med $base" | awk '{ printf "%+.1f %%", ($1 / $2 - 1) * 100 }')
	label=$m
	[ "$m" = none ] && label="no module"
	printf '| %s | %s | %s | %s KiB | %s KiB |\n' "$label" "$med" "$delta" "$rssk" "$sec"
done
echo
echo "all rounds (mode round handshakes/s rss_kB secret_kB):"
sed 's/^/    /' "$tmp/results"

echo
echo "openssl speed, signatures per second (${secs}s each)"
echo
printf '| mode | RSA-2048 sign/s | Ed25519 sign/s |\n|---|---|---|\n'
for m in $modes; do
	if [ "$m" = none ]; then
		out=$(openssl speed -seconds "$secs" rsa2048 ed25519 2>/dev/null)
	else
		out=$(LD_PRELOAD="$preload" SECRETMEM_OPENSSL="$m" openssl speed -seconds "$secs" rsa2048 ed25519 2>/dev/null)
	fi
	rsa=$(echo "$out" | awk '/^rsa 2048 bits/ { print $6 }')
	ed=$(echo "$out" | awk '/Ed25519/ && $NF ~ /^[0-9.]+$/ { v = $(NF - 1) } END { print v }')
	label=$m
	[ "$m" = none ] && label="no module"
	printf '| %s | %s | %s |\n' "$label" "$rsa" "$ed"
done
