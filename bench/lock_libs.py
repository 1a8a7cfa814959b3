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
MODS="name=path name2=path2" compares several builds of the module (say,
before and after a change) with plain in the same rounds, their order
rotating (default: heap=BUILD/libsecretmem-heap.so).

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
MODS = [tuple(m.split("=", 1)) for m in os.environ.get(
    "MODS", "heap=" + os.path.join(BUILD, "libsecretmem-heap.so")).split()]
MODS = [(n, os.path.realpath(p)) for n, p in MODS]
MSG_MIB = int(os.environ.get("MSG_MIB", "16"))
GPG_REPS = int(os.environ.get("GPG_REPS", "3"))


def env_for(mod):
    """The environment of a run: plain (mod None) or with the module."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if mod:
        env.update(LD_PRELOAD=mod, G_SLICE="always-malloc")  # as secretmem exec sets
        env.pop("PYTHONMALLOC", None)
    return env


def run(argv, mod, capture=False):
    """(wall seconds, cpu seconds, stdout) of one run; fails on error."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=env_for(mod), stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    out = p.stdout.read() if capture else b""
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit("%s (%s) failed: %s\n%s" % (" ".join(argv), mod or "plain", p.returncode,
                                              err.decode(errors="replace")))
    if mod and b"secretmem-heap:" in err:
        sys.exit("the module complained:\n" + err.decode(errors="replace"))
    return wall, ru.ru_utime + ru.ru_stime, out


def summary(name, values):
    print("%-28s median %.3f  range [%.3f-%.3f]" % (name, statistics.median(values), min(values), max(values)))


def main():
    for _, mod in MODS:
        if not os.path.exists(mod):
            sys.exit("%s is not built" % mod)
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
        for name, mod in MODS:
            print("# %s: %s" % (name, mod))
        keys = ("gpg wall", "gpg cpu", "openssl wall", "openssl cpu", "openssl sign/s", "openssl verify/s")
        ratios = {name: {k: [] for k in keys} for name, _ in MODS}
        runs = [("plain", None)] + MODS
        for r in range(ROUNDS):
            res = {}
            for name, mod in runs[r % len(runs):] + runs[:r % len(runs)]:
                w = c = 0.0
                for _ in range(GPG_REPS):
                    dw, dc, _ = run(dec, mod)
                    w += dw
                    c += dc
                sw, sc, out = run(speed, mod, capture=True)
                m = re.search(rb"^rsa\s+2048 bits\s+\S+s\s+\S+s\s+([\d.]+)\s+([\d.]+)", out, re.M)
                if not m:
                    sys.exit("no rsa 2048 line in openssl speed's output:\n" + out.decode())
                res[name] = (w, c, sw, sc, float(m.group(1)), float(m.group(2)))
            p = res["plain"]
            print("round %d: plain: gpg wall %.3f s cpu %.3f s; openssl wall %.2f s cpu %.2f s sign/s %.0f "
                  "verify/s %.0f" % ((r + 1,) + p))
            for name, _ in MODS:
                h = res[name]
                row = [h[i] / p[i] for i in range(6)]
                for k, v in zip(keys, row):
                    ratios[name][k].append(v)
                print("  %s/plain: " % name + ", ".join("%s %.3f" % (k, v) for k, v in zip(keys, row)))
        for name, _ in MODS:
            print("# %s/plain ratio over %d rounds" % (name, ROUNDS))
            for k, v in ratios[name].items():
                summary(k, v)
    finally:
        subprocess.run(["gpgconf", "--homedir", home, "--kill", "gpg-agent"], stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
