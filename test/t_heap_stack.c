/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_stack - no key in a dead stack frame or a vector register of a
 * waiting heap-mode program (heap/stackclear.c).  test/helpers/heap_stackkey
 * copies a random key into a local array four calls deep, in a worker
 * thread that then waits in poll() and in the main thread that then waits
 * in read(), and in a thread that then ends (glibc keeps its stack); the
 * last copy also passes through xmm15.  The worker waited 2 ms just before
 * its copy, so the module clears it 10 ms into its poll() (waits.c's GAP).
 * Once both waiting threads wait, and 50 ms later, a root process reads the program's memory (/proc/PID/mem) and a gcore dump
 * of it, and counts the copies by place: the main thread's stack, the
 * worker's, the ended thread's, elsewhere, and the dump's notes
 * (registers).
 *  - control, no module: the three stacks and the registers hold the key;
 *  - SECRETMEM_HEAP_STACKS=0 under the module: the stacks still hold it
 *    (the heap is secret memory, the clearing is what removes the rest);
 *  - heap mode, as root and as uid 65534 without CAP_IPC_LOCK under
 *    `ulimit -l 8192`: no copy anywhere;
 *  - heap mode in a sandbox: after a first wait, the program installs a
 *    seccomp filter that kills it at any system call but its own few
 *    (prctl for the main thread; syscall(SYS_seccomp) with TSYNC for all),
 *    then copies the key: it lives, and no copy anywhere.
 */
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "heapscan.h"
#include "tlib.h"

static char helper[PATH_MAX], keyfile[PATH_MAX];

struct places {
	int main, worker, ended, other, regs;
};

/* Wait until the main thread is in read(2) and the other one in poll(2). */
static void wait_waiting(pid_t pid, const char *log)
{
	char dir[64];

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	for (int ms = 0; ms < 30000; ms += 10) {
		int main_reads = heap_in_syscall(pid, pid) == 0, worker_polls = 0;
		DIR *d = opendir(dir);
		struct dirent *e;

		while (d && (e = readdir(d))) {
			long tid = atol(e->d_name), nr;
			if (tid > 0 && tid != pid && ((nr = heap_in_syscall(pid, tid)) == 7 || nr == 271))
				worker_polls = 1;
		}
		if (d)
			closedir(d);
		if (main_reads && worker_polls)
			return;
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	rig_cat(log);
	TL_FAIL("the program's threads did not reach their waits");
}

static struct places run(const struct scan_key *key, const char *mode)
{
	const char *dir = rig_tmpdir();
	char log[PATH_MAX], core[PATH_MAX], corefile[PATH_MAX + 32], label[96];
	const char *env[6] = { NULL };
	int heap = strcmp(mode, "plain") != 0, user = strcmp(mode, "heap, uid 65534") == 0;
	struct places p = { 0, 0, 0, 0, 0 };
	pid_t pid;

	if (heap) {
		const char *const *h = heap_env();
		int k = 0;
		while (h[k]) {
			env[k] = h[k];
			k++;
		}
		if (strcmp(mode, "heap, clearing off") == 0)
			env[k] = "SECRETMEM_HEAP_STACKS=0";
	}
	snprintf(log, sizeof(log), "%s/stack-%c%d.log", dir, mode[0], (int)strlen(mode));
	if (user) {
		char *argv[] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
				 helper, keyfile, NULL };
		pid = rig_spawn_limited(argv, env, log, (size_t)8 << 20);
		for (int ms = 0; ms < 30000 && !rig_file_has(log, "ready"); ms += 10) {
			struct timespec ts = { 0, 10000000 };
			nanosleep(&ts, NULL);
		}
	} else {
		char *argv[] = { helper, keyfile, strstr(mode, "prctl") ? "prctl" : strstr(mode, "seccomp") ? "seccomp" : NULL,
				 NULL };
		pid = rig_spawn_ready(argv, env, log);
	}
	wait_waiting(pid, log);
	struct timespec gap = { 0, 50000000 };
	nanosleep(&gap, NULL);

	uint64_t lo = 0, hi = 0, elo = 0, ehi = 0;
	FILE *f = fopen(log, "re");
	char line[256];
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "worker %" SCNx64 " %" SCNx64, &lo, &hi) != 2)
			sscanf(line, "ended %" SCNx64 " %" SCNx64, &elo, &ehi);
	if (f)
		fclose(f);
	TL_CHECK(hi > lo && ehi > elo, "%s: no thread stacks in the log", mode);

	struct scan_result res;
	snprintf(label, sizeof(label), "heap_stackkey (%s)", mode);
	TL_CHECK(scan_pid(key, pid, &res, label) >= 0, "%s: cannot read the program's memory", mode);
	for (int i = 0; i < res.count; i++) {
		if (strstr(res.copy[i].where, "[stack]"))
			p.main++;
		else if (res.copy[i].start >= lo && res.copy[i].start < hi)
			p.worker++;
		else if (res.copy[i].start >= elo && res.copy[i].start < ehi)
			p.ended++;
		else
			p.other++;
	}
	scan_result_free(&res);
	if (heap && !strstr(mode, "off"))
		TL_CHECK(rig_secret_rss_kb(pid) > 0, "%s: the program has no secret memory", mode);

	snprintf(core, sizeof(core), "%s/stack.gcore", dir);
	TL_CHECK(rig_gcore(pid, core, corefile, sizeof(corefile)) == 0, "%s: gcore failed", mode);
	snprintf(label, sizeof(label), "heap_stackkey (%s), gcore", mode);
	struct heap_hits c = heap_scan_file(key, corefile, pid, label, NULL);
	p.regs = c.regs;
	remove(corefile);
	if (heap && rig_file_has(log, "secretmem-heap:")) {
		rig_cat(log);
		TL_FAIL("%s: the module complained", mode);
	}
	rig_stop(pid);
	fprintf(stderr, "%s: main stack %d, worker stack %d, ended thread's stack %d, elsewhere %d, registers %d\n",
		mode, p.main, p.worker, p.ended, p.other, p.regs);
	return p;
}

int main(void)
{
	struct scan_key key;

	tl_need_root("the scan reads another process's memory and gcore attaches to it");
	rig_need("gdb");
	rig_need("gcore");
	rig_need("setpriv");
	heap_stackkey_setup("t_heap_stack", &key, helper, keyfile);

	struct places plain = run(&key, "plain");
	TL_CHECK(plain.main > 0 && plain.worker > 0 && plain.ended > 0 && plain.regs > 0,
		 "control: the key should be in the three dead stacks and in the registers");
	struct places off = run(&key, "heap, clearing off");
	TL_CHECK(off.main > 0 && off.worker > 0 && off.ended > 0,
		 "SECRETMEM_HEAP_STACKS=0: the key should stay on the three stacks");
	TL_CHECK(off.other == 0, "SECRETMEM_HEAP_STACKS=0: a copy outside the stacks");
	const char *modes[] = { "heap", "heap, uid 65534", "heap, a prctl seccomp filter",
				"heap, a seccomp filter for all threads" };
	for (int i = 0; i < 4; i++) {
		struct places h = run(&key, modes[i]);
		TL_CHECK(h.main == 0 && h.worker == 0 && h.ended == 0 && h.other == 0 && h.regs == 0,
			 "%s: %d copies on the main stack, %d on the worker's, %d on the ended thread's, %d elsewhere, "
			 "%d in registers", modes[i], h.main, h.worker, h.ended, h.other, h.regs);
	}
	scan_key_free(&key);
	printf("a waiting heap-mode program keeps no key in its dead stack frames or vector registers "
	       "(control: %d + %d + %d stack copies, %d in registers)\n", plain.main, plain.worker, plain.ended,
	       plain.regs);
	return 0;
}
