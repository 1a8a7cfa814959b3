#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""bench/lazy_bench.py - what large blocks cost heap mode now that their pages
fault at the program's first touch (secretmem-heap(7), LARGE BLOCKS).

    python3 bench/lazy_bench.py [ROUNDS] [OLD_MODULE]

Contenders, interleaved in every round (the order rotates from round to
round): plain (glibc), heap (build/libsecretmem-heap.so) and, when
OLD_MODULE is given, heap-old (an earlier build of the module, e.g. one
that faulted large blocks in whole at malloc).  Workloads, each a fresh
process:
  big1    malloc(1 MiB), one byte written, free: page faults of the process
          (minflt) and CPU time, 200 times per process;
  git     `git status` in a repository of 2,000 files (made once in a
          temporary directory): CPU time (user + system of the child) and
          page faults;
  floor   the kernel's price of a secret page: the first touch of each page
          of a fresh 1 MiB memfd_secret mapping, CPU time per page.
Per round the ratio contender/plain of each figure; printed: the median
and [min-max] of the ratios over the rounds, never the best of N, with the
median floor per page, and git's extra CPU time as a number of floor pages.
"""
import os, resource, statistics, subprocess, sys, tempfile

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 11
OLD = sys.argv[2] if len(sys.argv) > 2 else None
BUILD = os.environ.get("SECRETMEM_BUILD", "build")
NEW = os.path.realpath(os.path.join(BUILD, "libsecretmem-heap.so"))

BIG1 = r'''
#include <stdlib.h>
int main(void) {
	for (int i = 0; i < 200; i++) {
		volatile char *p = malloc(1 << 20);
		p[0] = 1;
		free((void *)p);
		void *q = malloc(4000); /* something else between: no trivial reuse path */
		free(q);
	}
	return 0;
}
'''
FLOOR = r'''
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
int main(void) {
	size_t len = 1 << 20, ps = 4096;
	struct timespec a, b;
	int fd = syscall(447, 0);
	if (fd < 0 || ftruncate(fd, len)) return 1;
	char *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) return 1;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	for (size_t o = 0; o < len; o += ps) p[o] = 1;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	printf("%.3f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3 / (len / ps));
	return 0;
}
'''


def build(src, name, tmp):
    c = os.path.join(tmp, name + ".c")
    with open(c, "w") as f:
        f.write(src)
    exe = os.path.join(tmp, name)
    subprocess.run(["cc", "-O1", "-o", exe, c], check=True)
    return exe


def run(cmd, module, cwd=None):
    """CPU seconds (user+sys) and page faults of one child."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if module:
        env["LD_PRELOAD"] = module
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, after.ru_minflt - before.ru_minflt


def summary(xs):
    return "%.3f [%.3f-%.3f]" % (statistics.median(xs), min(xs), max(xs))


def main():
    tmp = tempfile.mkdtemp(prefix="lazy_bench.")
    big1 = build(BIG1, "big1", tmp)
    floor = build(FLOOR, "floor", tmp)
    repo = os.path.join(tmp, "repo")
    os.makedirs(repo)
    for d in range(20):
        os.makedirs(os.path.join(repo, "d%02d" % d))
        for i in range(100):
            with open(os.path.join(repo, "d%02d" % d, "f%03d.txt" % i), "w") as f:
                f.write("file %d %d\n" % (d, i) * 20)
    git = ["git", "-c", "user.email=b@x", "-c", "user.name=b"]
    subprocess.run(git + ["init", "-q"], cwd=repo, check=True)
    subprocess.run(git + ["add", "."], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-qm", "x"], cwd=repo, check=True)
    with open(os.path.join(repo, "d00", "f000.txt"), "a") as f:
        f.write("changed\n")
    contenders = [("plain", None), ("heap", NEW)] + ([("heap-old", os.path.realpath(OLD))] if OLD else [])
    work = {"big1": ([big1], None), "git": (["git", "status", "--porcelain"], repo)}
    fig = {(c, w, k): [] for c, _ in contenders for w in work for k in ("cpu", "flt")}
    ratio = {(c, w, k): [] for c, _ in contenders[1:] for w in work for k in ("cpu", "flt")}
    floors = []
    extra_pages = {c: [] for c, _ in contenders[1:]}
    print("lazy_bench: %d rounds; load average at start %s" % (ROUNDS, open("/proc/loadavg").read().split()[:3]))
    for r in range(ROUNDS):
        order = contenders[r % len(contenders):] + contenders[:r % len(contenders)]
        got = {}
        for w, (cmd, cwd) in work.items():
            for c, mod in order:
                n = 5 if w == "git" else 1
                cpus, flts = [], []
                for _ in range(n):
                    cpu, flt = run(cmd, mod, cwd)
                    cpus.append(cpu)
                    flts.append(flt)
                got[(c, w)] = (statistics.median(cpus), statistics.median(flts))
            fl = float(subprocess.run([floor], check=True, capture_output=True, text=True).stdout)
            floors.append(fl)
        for c, _ in contenders:
            for w in work:
                fig[(c, w, "cpu")].append(got[(c, w)][0])
                fig[(c, w, "flt")].append(got[(c, w)][1])
        for c, _ in contenders[1:]:
            for w in work:
                ratio[(c, w, "cpu")].append(got[(c, w)][0] / got[("plain", w)][0])
                ratio[(c, w, "flt")].append(got[(c, w)][1] / max(1, got[("plain", w)][1]))
            extra = got[(c, "git")][0] - got[("plain", "git")][0]
            extra_pages[c].append(extra * 1e6 / statistics.median(floors[-len(work):]))
        print("round %d done" % (r + 1), file=sys.stderr)
    print("floor: first touch of a secret page, CPU %.2f us per page (median of %d; range %.2f-%.2f)" %
          (statistics.median(floors), len(floors), min(floors), max(floors)))
    for w in work:
        for c, _ in contenders:
            print("%-5s %-8s CPU %.4f s  faults %6.0f  (medians)" %
                  (w, c, statistics.median(fig[(c, w, "cpu")]), statistics.median(fig[(c, w, "flt")])))
        for c, _ in contenders[1:]:
            print("%-5s %-8s / plain: CPU %s, faults %s" %
                  (w, c, summary(ratio[(c, w, "cpu")]), summary(ratio[(c, w, "flt")])))
    for c, _ in contenders[1:]:
        print("git   %-8s extra CPU per run = %s floor pages" % (c, summary(extra_pages[c])))
    print("load average at end %s" % open("/proc/loadavg").read().split()[:3])
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
