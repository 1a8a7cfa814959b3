#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""bench/stack_bench.py - what heap mode's stack clearing (heap/stackclear.c)
costs: a module before it against a module with it, plain alongside.

    python3 bench/stack_bench.py ROUNDS SECONDS OLD_MODULE [NEW_MODULE]

NEW_MODULE defaults to build/libsecretmem-heap.so.  Per round the three
contenders (plain, old, new) take turns, in an order that rotates from
round to round, on:
  nginx c8  nginx (1 worker) over HTTPS, wrk -t1 -c8 keep-alive for SECONDS:
            the server's CPU time per request (/proc/PID/stat);
  nginx c1  the same with one connection: the worker waits in epoll_wait
            before every request, so it clears its stack every time;
  speed     openssl speed -seconds SECONDS rsa2048 ecdsap256: signs/s
            (per CPU second of the process, OpenSSL's default);
  threads   bench/thread_churn 2000: a thread's start, two polls (one
            ready, one 1 ms timeout) and end, wall and CPU per thread.
Reported: the median of each figure over the rounds, and the median
[min-max] over the rounds of the per-round ratio new/old (and old/plain).
STACK_BENCH_ONLY=nginx,speed,threads (any of them) runs those alone.
"""
import os, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import children, free_port, nginx_conf, ticks

if len(sys.argv) < 4:
    sys.exit(__doc__)
rounds, secs = int(sys.argv[1]), int(sys.argv[2])
old = os.path.realpath(sys.argv[3])
new = os.path.realpath(sys.argv[4] if len(sys.argv) > 4 else "build/libsecretmem-heap.so")
churn = os.path.realpath(os.environ.get("SECRETMEM_BUILD", "build") + "/bench/thread_churn")
for f in (old, new, churn):
    if not os.path.exists(f):
        sys.exit("stack_bench: %s is missing (make build/bench/thread_churn)" % f)
for need in ("wrk", "openssl"):
    if not shutil.which(need):
        sys.exit("stack_bench: needs %s" % need)
HZ = os.sysconf("SC_CLK_TCK")
ONLY = os.environ.get("STACK_BENCH_ONLY", "nginx,speed,threads").split(",")
tmp = tempfile.mkdtemp(prefix="secretmem-stack-bench.")
os.chmod(tmp, 0o755)
MODES = ("plain", "old", "new")
procs = []

def env(mode):
    e = dict(os.environ)
    for k in ("LD_PRELOAD", "PYTHONMALLOC", "SECRETMEM_OPENSSL", "SECRETMEM_HEAP_STACKS"):
        e.pop(k, None)
    if mode != "plain":
        e["LD_PRELOAD"] = old if mode == "old" else new
        e["G_SLICE"] = "always-malloc"
    return e

def run(argv, mode):
    t0 = time.monotonic()
    p = subprocess.run(argv, env=env(mode), capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit("stack_bench: %s (%s) failed" % (argv[0], mode))
    return p.stdout, time.monotonic() - t0

res = {}
def put(fig, mode, v):
    res.setdefault(fig, {}).setdefault(mode, []).append(v)

try:
    key, crt = tmp + "/key.pem", tmp + "/crt.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt,
                    "-days", "2", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
    ngx = {}
    for mode in MODES:
        d = "%s/nginx-%s" % (tmp, mode)
        os.makedirs(d)
        port = free_port()
        open(d + "/nginx.conf", "w").write(nginx_conf(d, port, crt, key))
        p = subprocess.Popen(["/usr/sbin/nginx", "-p", d, "-c", d + "/nginx.conf"], env=env(mode),
                             stdout=open(d + "/out.log", "w"), stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(p)
        for _ in range(500):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.02)
        ngx[mode] = (port, p)

    load0 = open("/proc/loadavg").read().split()[:3]
    for r in range(rounds):
        sys.stderr.write("stack_bench: round %d of %d\n" % (r + 1, rounds))
        order = MODES[r % 3:] + MODES[:r % 3]
        for conns in ((8, 1) if "nginx" in ONLY else ()):
            for mode in order:
                port, p = ngx[mode]
                pids = [p.pid] + children(p.pid)
                t0 = ticks(pids)
                out, _ = run(["wrk", "-t1", "-c%d" % conns, "-d%ds" % secs, "https://127.0.0.1:%d/small" % port],
                             "plain")
                t1 = ticks(pids)
                if "Non-2xx" in out or "Socket errors" in out:
                    raise SystemExit("stack_bench: wrk errors (%s): %s" % (mode, out))
                n = int(re.search(r"(\d+) requests in", out).group(1))
                put("nginx c%d server CPU us/request" % conns, mode, (t1 - t0) / HZ / n * 1e6)
        for mode in (order if "speed" in ONLY else ()):
            out, _ = run(["openssl", "speed", "-seconds", str(secs), "rsa2048", "ecdsap256"], mode)
            m = re.search(r"^rsa 2048 bits\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)", out, re.M)
            put("speed rsa2048 sign/s", mode, float(m.group(1)))
            m = re.search(r"^\s*256 bits ecdsa \(nistp256\)\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)", out, re.M)
            put("speed ecdsap256 sign/s", mode, float(m.group(1)))
        for mode in (order if "threads" in ONLY else ()):
            out, _ = run([churn, "2000"], mode)
            m = re.search(r"([\d.]+) us wall, ([\d.]+) us CPU", out)
            put("thread start+end us wall", mode, float(m.group(1)))
            put("thread start+end us CPU", mode, float(m.group(2)))
    load1 = open("/proc/loadavg").read().split()[:3]
finally:
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=5)
        except Exception:
            pass
    shutil.rmtree(tmp, ignore_errors=True)

def spread(v):
    return "%.3f [%.3f-%.3f]" % (statistics.median(v), min(v), max(v))

print("stack_bench %s, %d rounds of %d s; load %s -> %s" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
      rounds, secs, " ".join(load0), " ".join(load1)))
print("%-32s %10s %10s %10s  %-22s %s" % ("figure (median of rounds)", "plain", "old", "new", "new/old", "old/plain"))
for fig, v in res.items():
    ratio = [n / o for n, o in zip(v["new"], v["old"])]
    base = [o / p for o, p in zip(v["old"], v["plain"])]
    print("%-32s %10.1f %10.1f %10.1f  %-22s %s" % (fig, statistics.median(v["plain"]), statistics.median(v["old"]),
          statistics.median(v["new"]), spread(ratio), spread(base)))
