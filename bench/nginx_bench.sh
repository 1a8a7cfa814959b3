#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# bench/nginx_bench.sh - the preload module's cost on nginx over HTTPS.
#
#   sh bench/nginx_bench.sh [SECONDS] [ROUNDS]          (defaults: 5 s, 5 rounds)
#   SECRETMEM_BUILD=build/xyz sh bench/nginx_bench.sh   (tool and module of another build)
#
# Three nginx servers (Debian's, 1 worker, TLS with a self-signed RSA-2048
# key, on 127.0.0.1 only) run side by side: plain, under
# `secretmem exec --mode secure` and under `secretmem exec --mode all`.  In
# each round, for each of two workloads (a 6-byte body from `return 200`,
# and a 4 KiB static file), wrk (1 thread, 8 keep-alive connections, SECONDS
# long) loads each server in turn, the order rotating from round to round.
# Around every wrk run the script reads utime + stime of the server's master
# and worker from /proc/PID/stat, so a run yields the server's CPU time per
# request and requests per second.  Reported per mode and workload: the
# median of the per-round figures, and the median [min-max] over the rounds
# of the per-round ratio to plain nginx (the same round, the same workload).
# Bounded: at most 20 rounds of at most 60 s per run; every wrk run under
# timeout(1).
set -eu
secs=${1:-5}
rounds=${2:-5}
case $secs in '' | *[!0-9]*) echo "SECONDS must be a number" >&2; exit 64 ;; esac
case $rounds in '' | *[!0-9]*) echo "ROUNDS must be a number" >&2; exit 64 ;; esac
[ "$secs" -ge 1 ] && [ "$secs" -le 60 ] || { echo "SECONDS: 1..60" >&2; exit 64; }
[ "$rounds" -ge 1 ] && [ "$rounds" -le 20 ] || { echo "ROUNDS: 1..20" >&2; exit 64; }
build=${SECRETMEM_BUILD:-build}
nginx=/usr/sbin/nginx
for need in "$nginx" "$(command -v wrk || true)" "$(command -v openssl || true)" "$(command -v python3 || true)"; do
	[ -n "$need" ] && [ -x "$need" ] || { echo "nginx_bench: needs nginx, wrk, openssl and python3" >&2; exit 77; }
done
tool=$(realpath "$build/secretmem")
[ -x "$tool" ] && [ -f "$build/libsecretmem-preload.so" ] ||
	{ echo "nginx_bench: build the tool and the preload module first (make)" >&2; exit 77; }

tmp=$(mktemp -d /tmp/secretmem-nginx-bench.XXXXXX)
chmod 755 "$tmp" # the workers run as nobody and read the 4 KiB file
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	for p in $pids; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$tmp/key.pem" 2>/dev/null
openssl req -x509 -new -key "$tmp/key.pem" -out "$tmp/crt.pem" -days 2 -subj /CN=127.0.0.1 2>/dev/null
mkdir -p "$tmp/www"
head -c 4096 /dev/zero | tr '\0' 'x' >"$tmp/www/4k.txt"
chmod 644 "$tmp/www/4k.txt"

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

modes="plain secure all"
# start MODE: an nginx for MODE on a free port; sets port_MODE and master_MODE.
start() {
	m=$1
	port=$(free_port)
	d="$tmp/$m"
	mkdir -p "$d"
	cat >"$d/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $d/body;
  proxy_temp_path $d/proxy;
  fastcgi_temp_path $d/fastcgi;
  uwsgi_temp_path $d/uwsgi;
  scgi_temp_path $d/scgi;
  server {
    listen 127.0.0.1:$port ssl;
    ssl_certificate $tmp/crt.pem;
    ssl_certificate_key $tmp/key.pem;
    location = /small { return 200 "hello\n"; }
    location / { root $tmp/www; }
  }
}
EOF
	if [ "$m" = plain ]; then
		"$nginx" -p "$d" -c "$d/nginx.conf" >"$d/out.log" 2>&1 &
	else
		"$tool" exec --mode "$m" -- "$nginx" -p "$d" -c "$d/nginx.conf" >"$d/out.log" 2>&1 &
	fi
	pid=$!
	pids="$pids $pid"
	i=0
	until curl -sk --max-time 2 "https://127.0.0.1:$port/small" >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -ge 50 ] || ! kill -0 "$pid" 2>/dev/null; then
			echo "nginx_bench: nginx ($m) did not start:" >&2
			cat "$d/out.log" "$d/error.log" >&2 2>/dev/null || true
			exit 1
		fi
		sleep 0.2
	done
	eval "port_$m=$port master_$m=$pid"
}

# cpu_ticks MASTER: utime + stime of the master and its children, in ticks.
cpu_ticks() {
	t=0
	for p in $1 $(ps -o pid= --ppid "$1"); do
		# fields after the ")" of comm: 12 = utime, 13 = stime
		v=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{ print $12 + $13 }') || v=0
		t=$((t + ${v:-0}))
	done
	echo $t
}

for m in $modes; do start "$m"; done
hz=$(getconf CLK_TCK)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
results="$tmp/results.txt" # round workload mode requests seconds ticks
: >"$results"
echo "nginx_bench: $rounds rounds x 2 workloads x 3 modes x $secs s" >&2
r=0
while [ $r -lt "$rounds" ]; do
	for w in small 4k.txt; do
		# rotate the order of the modes from round to round
		case $((r % 3)) in 0) order="plain secure all" ;; 1) order="secure all plain" ;; *) order="all plain secure" ;; esac
		for m in $order; do
			eval "port=\$port_$m master=\$master_$m"
			t0=$(cpu_ticks "$master")
			out=$(timeout $((secs + 30)) wrk -t1 -c8 -d"${secs}s" "https://127.0.0.1:$port/$w" 2>&1) ||
				{ echo "nginx_bench: wrk failed ($m, $w): $out" >&2; exit 1; }
			t1=$(cpu_ticks "$master")
			reqs=$(echo "$out" | awk '/requests in/ { print $1 }')
			dur=$(echo "$out" | awk '/requests in/ { sub(/,$/, "", $4); print $4 }')
			if echo "$out" | grep -q "Non-2xx\|Socket errors"; then
				echo "nginx_bench: errors in the $m run: $out" >&2
				exit 1
			fi
			echo "$r $w $m $reqs $dur $((t1 - t0))" >>"$results"
		done
	done
	r=$((r + 1))
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

echo "secretmem nginx benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "command: sh bench/nginx_bench.sh $secs $rounds"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), nproc $(nproc), $(uname -sr), glibc $(ldd --version | head -1 | sed 's/.* //'), $($nginx -v 2>&1 | sed 's/.*: //'), $(openssl version | cut -d' ' -f1-2)"
echo "load average at start: $load0; at end: $load1"
python3 - "$results" "$hz" <<'EOF'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
hz = float(sys.argv[2])
def dur_s(d):
    for suf, f in (("ms", 1e-3), ("us", 1e-6), ("m", 60.0), ("s", 1.0)):
        if d.endswith(suf):
            return float(d[:-len(suf)]) * f
    return float(d)
fig = {}
for r, w, m, reqs, dur, ticks in rows:
    reqs = int(reqs)
    fig[(int(r), w, m)] = (reqs / dur_s(dur), int(ticks) / hz / reqs * 1e6)
def spread(v):
    v = sorted(v)
    return "%.3f [%.3f-%.3f]" % (statistics.median(v), v[0], v[-1])
rounds = sorted({k[0] for k in fig})
print("%-18s %-7s %10s %12s  %-24s %-24s" % ("workload", "mode", "req/s", "CPU us/req",
      "req/s x plain", "CPU/req x plain"))
print("%-18s %-7s %10s %12s  %-24s %-24s" % ("", "", "(median)", "(median)", "median [min-max]",
      "median [min-max]"))
for w, label in (("small", "6-byte body"), ("4k.txt", "4 KiB file")):
    for m in ("plain", "secure", "all"):
        rps = [fig[(r, w, m)][0] for r in rounds]
        cpu = [fig[(r, w, m)][1] for r in rounds]
        rr = [fig[(r, w, m)][0] / fig[(r, w, "plain")][0] for r in rounds]
        rc = [fig[(r, w, m)][1] / fig[(r, w, "plain")][1] for r in rounds]
        print("%-18s %-7s %10.0f %12.1f  %-24s %-24s" % (label, m, statistics.median(rps),
              statistics.median(cpu), spread(rr), spread(rc)))
print("\nCPU: utime + stime of the server's master and worker (/proc/PID/stat, "
      "%d ticks/s) over each wrk run, per request; wrk: 1 thread, 8 keep-alive "
      "connections; %d rounds, the modes taking turns." % (hz, len(rounds)))
EOF
