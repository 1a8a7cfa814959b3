#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# bench/heap_bench.sh - what heap mode (libsecretmem-heap.so) costs real
# programs: plain against heap, interleaved in one run.
#
#   sh bench/heap_bench.sh [ROUNDS] [SECONDS]   (defaults: 5 rounds, 3 s)
#   SECRETMEM_BUILD=build/xyz sh bench/heap_bench.sh
#
# Per round, plain and heap take turns (the order alternates from round to
# round) on each workload:
#   speed   `openssl speed -seconds SECONDS rsa2048 ecdsap256 ed25519`:
#           sign/s and verify/s (OpenSSL counts them per CPU second of the
#           process, its default), and the run's wall time;
#   tls     full TLS 1.3 handshakes (RSA-2048) of `openssl s_server` measured
#           by `openssl s_time -new -time SECONDS` on 127.0.0.1: handshakes
#           per wall second, and the server's CPU time per handshake
#           (/proc/PID/stat);
#   nginx   nginx (1 worker) over HTTPS, wrk -t1 -c8 keep-alive for SECONDS:
#           requests per wall second and the server's CPU time per request;
#   start   start-up: 10 runs of `python3 -c pass`, 5 of `gpg --sign` (a
#           small file, Ed25519 key; its gpg-agent runs plain resp. under
#           heap mode): median wall and CPU time per run;
# and reports per figure the median of the rounds and the median [min-max]
# over the rounds of the per-round ratio heap/plain - never the best of N.
# Then the memory of each program under heap mode (Rss of its /secretmem
# mappings) against its ordinary heap when plain ([heap] + private
# anonymous Rss, from /proc/PID/smaps), and, when bench/heap_fork.sh is
# there, the fork() time per MiB of live heap.  Heap mode is entered with
# `secretmem exec --mode heap` for nginx and with LD_PRELOAD (+
# G_SLICE=always-malloc, as exec sets) for the rest.  The load average is
# printed at start and end: the machine may be shared.
set -eu
rounds=${1:-5}
secs=${2:-3}
case $rounds in '' | *[!0-9]*) echo "ROUNDS must be a number" >&2; exit 64 ;; esac
case $secs in '' | *[!0-9]*) echo "SECONDS must be a number" >&2; exit 64 ;; esac
[ "$rounds" -ge 1 ] && [ "$rounds" -le 30 ] || { echo "ROUNDS: 1..30" >&2; exit 64; }
[ "$secs" -ge 1 ] && [ "$secs" -le 30 ] || { echo "SECONDS: 1..30" >&2; exit 64; }
build=${SECRETMEM_BUILD:-build}
for need in openssl python3 wrk gpg gpg-agent ssh-agent ssh-add curl; do
	command -v "$need" >/dev/null 2>&1 || { echo "heap_bench: needs $need (sh scripts/deps.sh test)" >&2; exit 77; }
done
[ -x /usr/sbin/nginx ] || { echo "heap_bench: needs nginx (sh scripts/deps.sh test)" >&2; exit 77; }
[ -f "$build/libsecretmem-heap.so" ] && [ -x "$build/secretmem" ] ||
	{ echo "heap_bench: build the heap module and the tool first (make)" >&2; exit 77; }
module=$(realpath "$build/libsecretmem-heap.so")
tool=$(realpath "$build/secretmem")
here=$(cd "$(dirname "$0")" && pwd)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u '+%Y-%m-%d %H:%M UTC')

echo "secretmem heap-mode benchmark, $start"
echo "command: sh bench/heap_bench.sh $rounds $secs"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), nproc $(nproc), $(uname -sr), glibc $(ldd --version | head -1 | sed 's/.* //'), $(openssl version | cut -d' ' -f1-2), $(/usr/sbin/nginx -v 2>&1 | sed 's/.*: //')"
echo "load average at start: $load0"
echo

python3 - "$rounds" "$secs" "$module" "$tool" "$here" <<'EOF'
import os, re, resource, shutil, signal, socket, statistics, subprocess, sys, tempfile, time
sys.path.insert(0, sys.argv[5])
from benchutil import children, free_port, nginx_conf, ticks

rounds, secs, module, tool = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
HZ = os.sysconf("SC_CLK_TCK")
tmp = tempfile.mkdtemp(prefix="secretmem-heap-bench.")
os.chmod(tmp, 0o755)
procs = []
HEAPENV = dict(os.environ, LD_PRELOAD=module, G_SLICE="always-malloc")
HEAPENV.pop("PYTHONMALLOC", None)  # as secretmem exec: Python keeps pymalloc
PLAINENV = dict(os.environ)
for k in ("LD_PRELOAD", "PYTHONMALLOC", "SECRETMEM_OPENSSL"):
    PLAINENV.pop(k, None)

def env(mode):
    return HEAPENV if mode == "heap" else PLAINENV

def cleanup():
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except Exception:
            pass
    for p in procs:
        try:
            p.wait(timeout=5)
        except Exception:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except Exception:
                pass
    shutil.rmtree(tmp, ignore_errors=True)

def spawn(argv, mode, log, **kw):
    p = subprocess.Popen(argv, env=kw.pop("env", env(mode)), stdin=subprocess.DEVNULL,
                         stdout=open(log, "ab"), stderr=subprocess.STDOUT, start_new_session=True, **kw)
    procs.append(p)
    return p

def run(argv, mode, timeout=600, **kw):
    """Run to completion; returns (stdout text, wall s, CPU s of the child)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=kw.pop("env", env(mode)), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)
    out = b""
    while True:
        chunk = p.stdout.read()
        if not chunk:
            break
        out += chunk
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.stderr.write(out.decode(errors="replace"))
        raise SystemExit("heap_bench: %s (%s) failed: %d" % (" ".join(argv[:3]), mode, p.returncode))
    return out.decode(errors="replace"), wall, ru.ru_utime + ru.ru_stime

def wait_port(port, p, what):
    for _ in range(500):
        if p.poll() is not None:
            raise SystemExit("heap_bench: %s exited" % what)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    raise SystemExit("heap_bench: %s did not listen" % what)

def smaps(pid):
    """KiB of Rss: secret memory mappings, [heap], other private anonymous."""
    sec = heap = anon = 0
    kind = None
    for line in open("/proc/%d/smaps" % pid):
        m = re.match(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$", line)
        if m:
            name = m.group(1)
            kind = "s" if name.startswith("/secretmem") else "h" if name == "[heap]" else \
                   "a" if name == "" else None
            continue
        if kind and line.startswith("Rss:"):
            kb = int(line.split()[1])
            if kind == "s":
                sec += kb
            elif kind == "h":
                heap += kb
            else:
                anon += kb
    return sec, heap, anon

def order(r):
    return ("plain", "heap") if r % 2 == 0 else ("heap", "plain")

res = {}   # (figure) -> {mode: [per round]}
def put(fig, mode, v):
    res.setdefault(fig, {}).setdefault(mode, []).append(v)

mem = []   # (program, plain heap+anon KiB, heap-mode secret KiB, heap-mode [heap]+anon KiB)

# ---- keys ------------------------------------------------------------------
key, crt = tmp + "/key.pem", tmp + "/crt.pem"
subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key],
               check=True, capture_output=True)
subprocess.run(["openssl", "req", "-x509", "-new", "-key", key, "-out", crt, "-days", "2", "-subj", "/CN=127.0.0.1"],
               check=True, capture_output=True)

# ---- servers: s_server and nginx, plain and heap, side by side ---------------
srv = {}
for mode in ("plain", "heap"):
    port = free_port()
    p = spawn(["openssl", "s_server", "-quiet", "-www", "-accept", "127.0.0.1:%d" % port, "-key", key, "-cert", crt],
              mode, tmp + "/s_server-%s.log" % mode)
    wait_port(port, p, "s_server " + mode)
    srv[mode] = (port, p)

ngx = {}
for mode in ("plain", "heap"):
    d = "%s/nginx-%s" % (tmp, mode)
    os.makedirs(d + "/www")
    port = free_port()
    open(d + "/nginx.conf", "w").write(nginx_conf(d, port, crt, key))
    argv = ["/usr/sbin/nginx", "-p", d, "-c", d + "/nginx.conf"]
    if mode == "heap":
        argv = [tool, "exec", "--mode", "heap", "--"] + argv
    p = spawn(argv, "plain", d + "/out.log")
    wait_port(port, p, "nginx " + mode)
    ngx[mode] = (port, p)

# gpg: one GNUPGHOME per mode, each with its own agent (plain / heap)
gh = {}
for mode in ("plain", "heap"):
    h = "%s/gnupg-%s" % (tmp, mode)
    os.makedirs(h, mode=0o700)
    gh[mode] = h
subprocess.run(["gpg", "--homedir", gh["plain"], "--batch", "--pinentry-mode", "loopback", "--passphrase", "",
                "--quick-gen-key", "bench <bench@test>", "ed25519", "sign", "never"], check=True, capture_output=True)
subprocess.run(["gpgconf", "--homedir", gh["plain"], "--kill", "gpg-agent"], check=True)
for item in os.listdir(gh["plain"]):
    if not item.startswith("S."):
        src = os.path.join(gh["plain"], item)
        (shutil.copytree if os.path.isdir(src) else shutil.copy2)(src, os.path.join(gh["heap"], item))
agents = {}
for mode in ("plain", "heap"):
    spawn(["gpg-agent", "--homedir", gh[mode], "--daemon", "--no-detach", "--batch"], mode,
          "%s/agent-%s.log" % (tmp, mode))
    for _ in range(500):
        out = subprocess.run(["gpg-connect-agent", "--homedir", gh[mode], "--no-autostart", "getinfo pid", "/bye"],
                             capture_output=True, text=True).stdout
        m = re.search(r"^D (\d+)", out, re.M)
        if m:
            agents[mode] = int(m.group(1))
            break
        time.sleep(0.02)
    else:
        raise SystemExit("heap_bench: gpg-agent (%s) did not start" % mode)
datafile = tmp + "/data.txt"
open(datafile, "w").write("a small file to sign\n")

# ---- rounds -------------------------------------------------------------------
for r in range(rounds):
    sys.stderr.write("heap_bench: round %d of %d\n" % (r + 1, rounds))
    for mode in order(r):
        out, wall, cpu = run(["openssl", "speed", "-seconds", str(secs), "rsa2048", "ecdsap256", "ed25519"], mode)
        m = re.search(r"^rsa 2048 bits\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)", out, re.M)
        put("speed rsa2048 sign/s", mode, float(m.group(1)))
        put("speed rsa2048 verify/s", mode, float(m.group(2)))
        m = re.search(r"^\s*256 bits ecdsa \(nistp256\)\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)", out, re.M)
        put("speed ecdsap256 sign/s", mode, float(m.group(1)))
        put("speed ecdsap256 verify/s", mode, float(m.group(2)))
        m = re.search(r"^\s*253 bits EdDSA \(Ed25519\)\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)", out, re.M)
        put("speed ed25519 sign/s", mode, float(m.group(1)))
        put("speed ed25519 verify/s", mode, float(m.group(2)))
        put("speed run, CPU s / wall s", mode, cpu / wall)
    for mode in order(r):
        port, p = srv[mode]
        t0 = ticks([p.pid])
        out, wall, cpu = run(["openssl", "s_time", "-connect", "127.0.0.1:%d" % port, "-new", "-time", str(secs)],
                             "plain")
        t1 = ticks([p.pid])
        m = re.search(r"(\d+) connections in ([\d.]+)s;", out)
        n = int(m.group(1))
        m2 = re.search(r"(\d+) connections in (\d+) real seconds", out)
        put("tls handshakes/s (wall)", mode, n / float(m2.group(2)))
        put("tls server CPU ms/handshake", mode, (t1 - t0) / HZ / n * 1e3)
    for mode in order(r):
        port, p = ngx[mode]
        pids = [p.pid] + children(p.pid)
        t0 = ticks(pids)
        out, wall, cpu = run(["wrk", "-t1", "-c8", "-d%ds" % secs, "https://127.0.0.1:%d/small" % port], "plain")
        t1 = ticks(pids)
        if "Non-2xx" in out or "Socket errors" in out:
            raise SystemExit("heap_bench: wrk errors (%s): %s" % (mode, out))
        n = int(re.search(r"(\d+) requests in", out).group(1))
        put("nginx requests/s (wall)", mode, float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)))
        put("nginx server CPU us/request", mode, (t1 - t0) / HZ / n * 1e6)
    for mode in order(r):
        walls, cpus = [], []
        for _ in range(10):
            _, w, c = run(["/usr/bin/python3", "-c", "pass"], mode)
            walls.append(w)
            cpus.append(c)
        put("start python3 -c pass, ms wall", mode, statistics.median(walls) * 1e3)
        put("start python3 -c pass, ms CPU", mode, statistics.median(cpus) * 1e3)
        walls, cpus = [], []
        for i in range(5):
            _, w, c = run(["gpg", "--homedir", gh[mode], "--batch", "--no-autostart", "--yes", "-u", "bench@test",
                           "-o", "%s/sig-%s.gpg" % (tmp, mode), "--sign", datafile], mode)
            walls.append(w)
            cpus.append(c)
        put("start gpg --sign, ms wall", mode, statistics.median(walls) * 1e3)
        put("start gpg --sign, ms CPU (gpg only)", mode, statistics.median(cpus) * 1e3)

# ---- memory per program --------------------------------------------------------
def memrow(name, plain_pid, heap_pid):
    s0, h0, a0 = smaps(plain_pid)
    s1, h1, a1 = smaps(heap_pid)
    mem.append((name, h0 + a0, h0, s1, h1 + a1))

memrow("openssl s_server (after the handshakes)", srv["plain"][1].pid, srv["heap"][1].pid)
np_, nh = ngx["plain"][1].pid, ngx["heap"][1].pid
memrow("nginx master", np_, nh)
memrow("nginx worker", children(np_)[0], children(nh)[0])
memrow("gpg-agent (after the signatures)", agents["plain"], agents["heap"])
# ssh-agent with two keys (a copy without the set-group-ID bit)
shutil.copy(shutil.which("ssh-agent"), tmp + "/ssh-agent")
os.chmod(tmp + "/ssh-agent", 0o755)
subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", tmp + "/id_rsa"],
               check=True, capture_output=True)
os.chmod(tmp + "/id_rsa", 0o600)
subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", tmp + "/id_ed25519"], check=True)
sa = {}
for mode in ("plain", "heap"):
    sock = "%s/agent-%s.sock" % (tmp, mode)
    p = spawn([tmp + "/ssh-agent", "-D", "-a", sock], mode, "%s/ssh-agent-%s.log" % (tmp, mode))
    for _ in range(500):
        if os.path.exists(sock):
            break
        time.sleep(0.02)
    subprocess.run(["ssh-add", tmp + "/id_rsa", tmp + "/id_ed25519"], env=dict(PLAINENV, SSH_AUTH_SOCK=sock),
                   check=True, capture_output=True)
    sa[mode] = p.pid
memrow("ssh-agent (two keys)", sa["plain"], sa["heap"])
py = {}
for mode in ("plain", "heap"):
    p = spawn(["/usr/bin/python3", "-c", "import ssl, time; ssl.create_default_context(); time.sleep(60)"], mode,
              "%s/py-%s.log" % (tmp, mode))
    py[mode] = p.pid
time.sleep(1.5)
memrow("python3 (import ssl, a default context)", py["plain"], py["heap"])

# ---- report --------------------------------------------------------------------
def spread(v):
    v = sorted(v)
    return "%.3f [%.3f-%.3f]" % (statistics.median(v), v[0], v[-1])

print("%-38s %12s %12s  %s" % ("figure (per round: median of rounds)", "plain", "heap", "heap/plain: median [min-max]"))
for fig, d in res.items():
    ratios = [h / p for p, h in zip(d["plain"], d["heap"]) if p]
    print("%-38s %12.2f %12.2f  %s" % (fig, statistics.median(d["plain"]), statistics.median(d["heap"]), spread(ratios)))
print("\n%d rounds, the two modes taking turns (order alternating); SECONDS = %d.  openssl speed counts\n"
      "operations per CPU second of its process (OpenSSL's default); 'CPU s / wall s' shows how much\n"
      "CPU it got.  TLS: s_time -new (full handshakes, RSA-2048, TLS 1.3) against s_server; nginx: wrk\n"
      "-t1 -c8, HTTPS keep-alive, 1 worker; server CPU from /proc/PID/stat (%d ticks/s)." % (rounds, secs, HZ))
print("\n%-42s %14s %12s %14s %16s" % ("memory (KiB of Rss)", "plain heap+anon", "plain [heap]", "heap: secret",
                                      "heap: heap+anon"))
for name, pa, ph, hs, ha in mem:
    print("%-42s %14d %12d %14d %16d" % (name, pa, ph, hs, ha))
print("\n'heap+anon': [heap] plus private anonymous mappings (thread stacks and memory programs map\n"
      "themselves, not the main stack); under heap mode blocks over 1 MiB (SECRETMEM_HEAP_HUGE) stay\n"
      "there too.  'secret': the process's /secretmem mappings.")
cleanup()
EOF
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -x "$here/heap_fork.sh" ] && [ -x "$build/bench/heap_fork" ]; then
	echo
	echo "fork() per MiB of live heap (bench/heap_fork.sh 5 \"0 1 4 16\", the heap module's own benchmark):"
	BUILD=$build sh "$here/heap_fork.sh" 5 "0 1 4 16"
else
	echo
	echo "fork() per MiB of live heap: bench/heap_fork.sh or $build/bench/heap_fork missing (make build/bench/heap_fork)"
fi
