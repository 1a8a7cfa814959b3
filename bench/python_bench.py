#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""bench/python_bench.py - what heap mode costs Python (secretmem-heap(7),
PYTHON): plain against heap mode with Python's own allocator (pymalloc, its
arenas from the module) and, for comparison, with PYTHONMALLOC=malloc (every
object from the module's malloc, what `secretmem exec` set before).

    python3 bench/python_bench.py [ROUNDS] [OLD_MODULE]

Contenders, interleaved in every round (the order rotates from round to
round), each a fresh /usr/bin/python3:
  plain          no module;
  heap           LD_PRELOAD=build/libsecretmem-heap.so;
  heap-malloc    the same with PYTHONMALLOC=malloc;
  old-malloc     OLD_MODULE (an earlier build) with PYTHONMALLOC=malloc,
                 when given.
Workloads:
  pass    `python3 -c pass`, 10 runs per round (median);
  alloc   a dict of 200,000 str keys, sorting 10^6 ints, a json round
          trip of 5 MB (3 runs per round, median).
Figure: CPU time of the child (user + system).  Printed: per contender the
median over the rounds, and the median and [min-max] over the rounds of
the ratio contender/plain - never the best of N.  Then the memory-lock
charge (VmLck) and the secret pages resident of `python3 -c pass`.
"""
import os, resource, statistics, subprocess, sys

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 11
OLD = os.path.realpath(sys.argv[2]) if len(sys.argv) > 2 else None
BUILD = os.environ.get("SECRETMEM_BUILD", "build")
NEW = os.path.realpath(os.path.join(BUILD, "libsecretmem-heap.so"))
PY = "/usr/bin/python3"

ALLOC = r'''
import json, random
random.seed(1)
d = {"key%d" % i: i for i in range(200000)}
a = [random.randrange(10**9) for _ in range(10**6)]
a.sort()
doc = [{"id": i, "name": "n%d" % i, "tags": ["a", "b", "c"], "v": i * 0.5} for i in range(60000)]
s = json.dumps(doc)
assert len(s) > 5 * 10**6 - 10**6
back = json.loads(s)
assert len(back) == len(doc) and len(d) == 200000
'''
MEM = r'''
import re
smaps = open("/proc/self/smaps").read().split("\n")
secret = False
rss = 0
for l in smaps:
    if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", l):
        secret = "/secretmem" in l
    elif l.startswith("Rss:") and secret:
        rss += int(l.split()[1])
lck = open("/proc/self/status").read().split("VmLck:")[1].split()[0]
print(lck, rss)
'''


def env_for(module, pymalloc):
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "PYTHONMALLOC"):
        env.pop(k, None)
    if module:
        env["LD_PRELOAD"] = module
    if pymalloc:
        env["PYTHONMALLOC"] = pymalloc
    return env


def cpu(args, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([PY] + args, env=env, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def summary(xs):
    return "%.3f [%.3f-%.3f]" % (statistics.median(xs), min(xs), max(xs))


def main():
    contenders = [("plain", None, None), ("heap", NEW, None), ("heap-malloc", NEW, "malloc")]
    if OLD:
        contenders.append(("old-malloc", OLD, "malloc"))
    work = {"pass": (["-c", "pass"], 10), "alloc": (["-c", ALLOC], 3)}
    fig = {(c[0], w): [] for c in contenders for w in work}
    ratio = {(c[0], w): [] for c in contenders[1:] for w in work}
    print("python_bench: %d rounds, %s; load average at start %s" %
          (ROUNDS, subprocess.run([PY, "--version"], capture_output=True, text=True).stdout.strip(),
           " ".join(open("/proc/loadavg").read().split()[:3])))
    for r in range(ROUNDS):
        k = r % len(contenders)
        order = contenders[k:] + contenders[:k]
        got = {}
        for w, (args, n) in work.items():
            for name, mod, pm in order:
                got[(name, w)] = statistics.median(cpu(args, env_for(mod, pm)) for _ in range(n))
        for name, _, _ in contenders:
            for w in work:
                fig[(name, w)].append(got[(name, w)])
                if name != "plain":
                    ratio[(name, w)].append(got[(name, w)] / got[("plain", w)])
        print("round %d done" % (r + 1), file=sys.stderr)
    for w in work:
        for name, _, _ in contenders:
            line = "%-5s %-11s CPU %.1f ms" % (w, name, statistics.median(fig[(name, w)]) * 1e3)
            if name != "plain":
                line += "   / plain %s" % summary(ratio[(name, w)])
            print(line)
    for name, mod, pm in contenders:
        out = subprocess.run([PY, "-c", MEM], env=env_for(mod, pm), check=True, capture_output=True,
                             text=True).stdout.split()
        print("python3 -c pass, %-11s memory-lock charge %5s kB, secret resident %5s kB" % (name, out[0], out[1]))
    print("load average at end %s" % " ".join(open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
