#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""bench/lock_libs.py [ROUNDS] - the cost of heap mode on programs whose
keys live in memory their library locks itself (issue 29): `gpg --decrypt`
(libgcrypt's secure pool) and `openssl speed -seconds 1 rsa2048`, each run
plain and under libsecretmem-heap.so (LD_PRELOAD, with the environment of
`secretmem exec --mode heap`), interleaved: in each round both, the order
alternating.  Prints per round the heap/plain ratio of wall time and of CPU
time (user + system, from wait4) and, for openssl speed, of its sign/s and
verify/s; then the median and range [min-max] of each ratio over the rounds.

gpg: a fresh GNUPGHOME in a temporary directory, a key made with
--quick-gen-key (no passphrase, its agent started plainly before the
rounds and serving both), a message of MSG_MIB MiB (default 16) of random
data encrypted to it; each run is `gpg --batch --pinentry-mode loopback
--passphrase '' --decrypt -o /dev/null message.gpg`, repeated GPG_REPS
times (default 3) per run.  Run from the top of the tree after `make`
(BUILD=dir for another build directory).
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 7
BUILD = os.environ.get("BUILD", "build")
MOD = os.path.realpath(os.path.join(BUILD, "libsecretmem-heap.so"))
MSG_MIB = int(os.environ.get("MSG_MIB", "16"))
GPG_REPS = int(os.environ.get("GPG_REPS", "3"))


def env_for(heap):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if heap:
        env.update(LD_PRELOAD=MOD, PYTHONMALLOC="malloc", G_SLICE="always-malloc")
    return env


def run(argv, heap, capture=False):
    """(wall seconds, cpu seconds, stdout) of one run; fails on error."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=env_for(heap), stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    out = p.stdout.read() if capture else b""
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit("%s (%s) failed: %s\n%s" % (" ".join(argv), "heap" if heap else "plain", p.returncode,
                                              err.decode(errors="replace")))
    if heap and b"secretmem-heap:" in err:
        sys.exit("the module complained:\n" + err.decode(errors="replace"))
    return wall, ru.ru_utime + ru.ru_stime, out


def summary(name, values):
    print("%-28s median %.3f  range [%.3f-%.3f]" % (name, statistics.median(values), min(values), max(values)))


def main():
    if not os.path.exists(MOD):
        sys.exit("%s is not built" % MOD)
    tmp = tempfile.mkdtemp(prefix="secretmem-locklibs.")
    home = os.path.join(tmp, "gnupg")
    os.mkdir(home, 0o700)
    gpg = ["gpg", "--homedir", home, "--batch"]
    try:
        subprocess.run(gpg + ["--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key",
                              "bench <bench@test>", "default", "default", "never"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        msg = os.path.join(tmp, "message")
        with open(msg, "wb") as f:
            f.write(os.urandom(MSG_MIB << 20))
        subprocess.run(gpg + ["--trust-model", "always", "-r", "bench@test", "-e", "-o", msg + ".gpg", msg],
                       check=True, stderr=subprocess.DEVNULL)
        dec = gpg + ["--no-autostart", "--pinentry-mode", "loopback", "--passphrase", "", "--decrypt", "-o",
                     "/dev/null", msg + ".gpg"]
        speed = ["openssl", "speed", "-seconds", "1", "rsa2048"]
        print("# %s; %d rounds; kernel %s; nproc %d; load %s" % (time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              ROUNDS, os.uname().release, os.cpu_count(), open("/proc/loadavg").read().split()[:3]))
        print("# gpg: %s (x%d per run), %d MiB message" % (" ".join(dec), GPG_REPS, MSG_MIB))
        print("# openssl: %s" % " ".join(speed))
        print("# module: %s" % MOD)
        ratios = {k: [] for k in ("gpg wall", "gpg cpu", "openssl wall", "openssl cpu", "openssl sign/s",
                                  "openssl verify/s")}
        for r in range(ROUNDS):
            res = {}
            for heap in ((0, 1) if r % 2 == 0 else (1, 0)):
                w = c = 0.0
                for _ in range(GPG_REPS):
                    dw, dc, _ = run(dec, heap)
                    w += dw
                    c += dc
                sw, sc, out = run(speed, heap, capture=True)
                m = re.search(rb"^rsa\s+2048 bits\s+\S+s\s+\S+s\s+([\d.]+)\s+([\d.]+)", out, re.M)
                if not m:
                    sys.exit("no rsa 2048 line in openssl speed's output:\n" + out.decode())
                res[heap] = (w, c, sw, sc, float(m.group(1)), float(m.group(2)))
            p, h = res[0], res[1]
            row = [h[0] / p[0], h[1] / p[1], h[2] / p[2], h[3] / p[3], h[4] / p[4], h[5] / p[5]]
            for k, v in zip(ratios, row):
                ratios[k].append(v)
            print("round %d: gpg wall %.3f/%.3f s cpu %.3f/%.3f s; openssl wall %.2f/%.2f s cpu %.2f/%.2f s "
                  "sign/s %.0f/%.0f verify/s %.0f/%.0f (heap/plain)" %
                  (r + 1, h[0], p[0], h[1], p[1], h[2], p[2], h[3], p[3], h[4], p[4], h[5], p[5]))
            print("  ratios heap/plain: " + ", ".join("%s %.3f" % (k, v) for k, v in zip(ratios, row)))
        print("# heap/plain ratio over %d rounds" % ROUNDS)
        for k, v in ratios.items():
            summary(k, v)
    finally:
        subprocess.run(["gpgconf", "--homedir", home, "--kill", "gpg-agent"], stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
