/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/* lockrig.c - the rig of the locked-library-memory proofs; see lockrig.h. */
#ifndef _GNU_SOURCE /* the Makefile also passes -D_GNU_SOURCE */
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "heapscan.h"
#include "lockrig.h"
#include "tlib.h"

const char *lr_helper(const char *name)
{
	static char path[PATH_MAX];
	char rel[128], msg[300];

	snprintf(rel, sizeof(rel), "test/helpers/%s", name);
	if (!realpath(tl_build_path(rel), path)) {
		snprintf(msg, sizeof(msg), "%s is not built", tl_build_path(rel));
		tl_skip(msg);
	}
	return path;
}

long lr_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t n;

	buf[0] = '\0';
	if (fd < 0)
		return -1;
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
	return (long)got;
}

/* Copy src to dir/name with mode; 0 or -1. */
static int copy_file(const char *src, const char *dst, mode_t mode)
{
	char buf[65536];
	int in = open(src, O_RDONLY | O_CLOEXEC), rc = -1;
	int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	ssize_t n = -1;

	if (in >= 0 && out >= 0) {
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, (size_t)n) != n)
				break;
		rc = n == 0 && fchmod(out, mode) == 0 ? 0 : -1;
	}
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

/* As root, the build tree may be out of uid 65534's reach: the helper and
 * the module are run from copies in rig_tmpdir() (0755). */
static const char *staged(const char *src, const char *name)
{
	static char path[2][PATH_MAX];
	char *p = path[strcmp(name, "libsecretmem-heap.so") == 0];

	snprintf(p, PATH_MAX, "%s/%s", rig_tmpdir(), name);
	if (access(p, R_OK) != 0 && copy_file(src, p, 0755) != 0)
		TL_FAIL("copying %s to %s: %s", src, p, strerror(errno));
	return p;
}

pid_t lr_spawn(const char *helper, const char *keyfile, const char *mode, int heap, size_t memlock,
	       const char *log)
{
	const char *prog = helper, *mod = heap ? heap_module() : NULL;
	char errlog[PATH_MAX + 8];
	pid_t parent = getpid(), pid;

	if (heap && !mod)
		TL_FAIL("heap mode, but the module is not built");
	if (memlock && geteuid() == 0) {
		const char *slash = strrchr(helper, '/');
		prog = staged(helper, slash ? slash + 1 : helper);
		if (heap)
			mod = staged(mod, "libsecretmem-heap.so");
	}
	snprintf(errlog, sizeof(errlog), "%s.err", log);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		TL_FAIL("fork: %s", strerror(errno));
	if (pid > 0)
		return pid;
	int in = open("/dev/null", O_RDONLY);
	int out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int err = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(126);
	unsetenv("LD_PRELOAD");
	if (heap) {
		const char *const *env = heap_env();
		for (int i = 0; env[i]; i++)
			putenv((char *)(unsigned long)env[i]);
		setenv("LD_PRELOAD", mod, 1);
	}
	/* an ASan build's helpers: the libraries' own allocations at exit are
	 * not ours to leak-check */
	setenv("ASAN_OPTIONS", "detect_leaks=0", 0);
	if (memlock) {
		if (tl_user_memlock(memlock) != 0)
			_exit(126);
		if (geteuid() == 0 && (chdir("/") != 0 || setgroups(0, NULL) != 0 || setgid(65534) != 0 ||
				       setuid(65534) != 0)) {
			fprintf(stderr, "lockrig: cannot become uid 65534: %s\n", strerror(errno));
			_exit(126);
		}
	}
	/* after the change of user, which clears it; the helper must not
	 * outlive the test (a timeout kills the test with SIGTERM) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(126);
	execl(prog, prog, keyfile, mode, (char *)NULL);
	fprintf(stderr, "lockrig: cannot execute %s: %s\n", prog, strerror(errno));
	_exit(127);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

int lr_wait(pid_t pid, int ms)
{
	int st;

	for (int waited = 0; waited <= ms; waited += 10) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return st;
		if (r < 0 && errno != EINTR)
			TL_FAIL("waitpid %d: %s", (int)pid, strerror(errno));
		sleep_ms(10);
	}
	return -1;
}

void lr_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static void show(const char *path)
{
	char text[8192];

	if (lr_read_file(path, text, sizeof(text)) >= 0)
		fprintf(stderr, "--- %s:\n%s---\n", path, text);
}

void lr_wait_ready(pid_t pid, const char *log)
{
	char text[8192], err[PATH_MAX + 8];
	int st;

	for (int waited = 0; waited < 30000; waited += 20) {
		if (lr_read_file(log, text, sizeof(text)) > 0 && tl_has_line(text, "ready"))
			return;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			snprintf(err, sizeof(err), "%s.err", log);
			show(log);
			show(err);
			TL_FAIL("%s ended before it was ready: %s", log, tl_status_str(st));
		}
		sleep_ms(20);
	}
	lr_kill(pid);
	show(log);
	TL_FAIL("%s: not ready in 30 s", log);
}

/* "plain" / "heap", ", uid 65534" */
static const char *run_name(int heap, size_t memlock)
{
	static char name[64];

	snprintf(name, sizeof(name), "%s%s", heap ? "heap" : "plain",
		 !memlock ? "" : geteuid() == 0 ? ", uid 65534" : ", memlock-limited");
	return name;
}

static const char *log_path(const struct lr_case *c, const char *what, int heap, size_t memlock)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s-%s-%s%s.log", rig_tmpdir(), c->helper, what, heap ? "heap" : "plain",
		 memlock ? "-user" : "");
	return path;
}

/* A complaint of the module on the helper's stderr: 1 (and shown). */
static int complained(const char *log)
{
	char err[PATH_MAX + 8];

	snprintf(err, sizeof(err), "%s.err", log);
	if (!rig_file_has(err, "secretmem-heap:"))
		return 0;
	show(err);
	return 1;
}

/*
 * A "once" run: 0 when it ends with exit 0 and prints exactly expect,
 * else -1 with the difference shown.
 */
static int check_output(const struct lr_case *c, const char *helper, const char *keyfile, const char *expect,
			int heap, size_t memlock)
{
	const char *log = log_path(c, "once", heap, memlock);
	char text[8192], err[PATH_MAX + 8];
	pid_t pid = lr_spawn(helper, keyfile, "once", heap, memlock, log);
	int st = lr_wait(pid, 60000);

	snprintf(err, sizeof(err), "%s.err", log);
	if (st == -1) {
		lr_kill(pid);
		fprintf(stderr, "%s, %s: did not end in 60 s\n", c->helper, run_name(heap, memlock));
		return -1;
	}
	lr_read_file(log, text, sizeof(text));
	if (st != 0 || strcmp(text, expect) != 0 || complained(log)) {
		fprintf(stderr, "%s, %s: %s; expected output:\n%s--- it printed:\n%s", c->helper,
			run_name(heap, memlock), tl_status_str(st), expect, text);
		show(err);
		return -1;
	}
	printf("%s, %s: output as expected (exit 0, %zu bytes)\n", c->helper, run_name(heap, memlock), strlen(text));
	return 0;
}

/* A "wait" run scanned by root: the hits. */
static struct heap_hits scan_run(const struct lr_case *c, const struct scan_key *key, const char *helper,
				 const char *keyfile, int heap, size_t memlock)
{
	const char *log = log_path(c, "wait", heap, memlock);
	char label[160];
	pid_t pid = lr_spawn(helper, keyfile, "wait", heap, memlock, log);
	struct heap_hits h;

	char text[8192], *k;
	int keeper = 0;

	lr_wait_ready(pid, log);
	snprintf(label, sizeof(label), "%s %s, keys in place", c->helper, run_name(heap, memlock));
	h = heap_scan_pid(key, pid, label, heap ? NULL : "*", heap);
	printf("%s: %d copies outside the stack, %d on the stack\n", label, h.other, h.stack);
	/* the fork child that kept its copy: the same figures */
	lr_read_file(log, text, sizeof(text));
	k = strstr(text, "keeper: ");
	TL_CHECK(k && sscanf(k, "keeper: %d", &keeper) == 1 && keeper > 0, "%s: no keeper pid in %s", c->helper, log);
	snprintf(label, sizeof(label), "%s %s, fork child, keys in its copy", c->helper, run_name(heap, memlock));
	struct heap_hits hc = heap_scan_pid(key, keeper, label, heap ? NULL : "*", heap);
	printf("%s: %d copies outside the stack, %d on the stack\n", label, hc.other, hc.stack);
	lr_kill(pid);
	if (heap && complained(log))
		TL_FAIL("%s: the module complained", label);
	h.other += hc.other;
	h.stack += hc.stack;
	return h;
}

/* The lines lockkeys.h's lk_main prints between load and finish. */
static void expect_text(const struct lr_case *c, unsigned char keys[][LK_KEYLEN], char *out, size_t outlen)
{
	static const char *const who[] = { "", "child: " };
	size_t n = (size_t)snprintf(out, outlen, "%s", c->loaded);

	for (int w = 0; w < 2; w++)
		for (int i = 0; i < c->nkeys; i++)
			n += (size_t)snprintf(out + n, n < outlen ? outlen - n : 0, "%skey %s: %016llx\n", who[w],
					      c->name[i], (unsigned long long)lk_sum(keys[i], LK_KEYLEN));
	n += (size_t)snprintf(out + n, n < outlen ? outlen - n : 0, "child: exit 0\n");
	for (int i = 0; i < c->nkeys; i++)
		n += (size_t)snprintf(out + n, n < outlen ? outlen - n : 0, "after the child: key %s: %016llx\n",
				      c->name[i], (unsigned long long)lk_sum(keys[i], LK_KEYLEN));
	snprintf(out + n, n < outlen ? outlen - n : 0, "%s", c->finished);
}

void lr_prove(const struct lr_case *c)
{
	unsigned char keys[LR_MAX_KEYS][LK_KEYLEN];
	char expect[8192], keyfile[PATH_MAX], msg[400];
	const char *helper = lr_helper(c->helper);
	int root = geteuid() == 0, failed = 0, fd;
	struct scan_key key;

	TL_CHECK(c->nkeys > 0 && c->nkeys <= LR_MAX_KEYS, "nkeys");
	TL_CHECK(getrandom(keys, sizeof(keys), 0) == (ssize_t)sizeof(keys), "getrandom");
	memset(&key, 0, sizeof(key));
	for (int i = 0; i < c->nkeys; i++) {
		char name[24];

		if (c->bignum[i])
			keys[i][0] |= 0x80;
		snprintf(name, sizeof(name), "%s(be)", c->name[i]);
		TL_CHECK(scan_key_add(&key, c->bignum[i] ? name : c->name[i], c->name[i], 1, keys[i], LK_KEYLEN, 0) == 0,
			 "scan_key_add");
		snprintf(name, sizeof(name), "%s(le)", c->name[i]);
		if (c->bignum[i])
			TL_CHECK(scan_key_add(&key, name, c->name[i], 1, keys[i], LK_KEYLEN, 1) == 0, "scan_key_add");
	}
	snprintf(keyfile, sizeof(keyfile), "%s/%s.keys", rig_tmpdir(), c->helper);
	fd = open(keyfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	TL_CHECK(fd >= 0 && write(fd, keys, (size_t)c->nkeys * LK_KEYLEN) == (ssize_t)c->nkeys * LK_KEYLEN &&
			 fchmod(fd, 0644) == 0 && close(fd) == 0,
		 "%s: %s", keyfile, strerror(errno));
	expect_text(c, keys, expect, sizeof(expect));
	TL_CHECK(strlen(expect) < sizeof(expect) - 1, "expected text too long");

	/* the control */
	TL_CHECK(check_output(c, helper, keyfile, expect, 0, 0) == 0, "%s: plain run", c->helper);
	TL_CHECK(check_output(c, helper, keyfile, expect, 0, LR_MEMLOCK) == 0, "%s: plain run, %s", c->helper,
		 run_name(0, LR_MEMLOCK));
	if (root) {
		scan_run(c, &key, helper, keyfile, 0, 0);
		scan_run(c, &key, helper, keyfile, 0, LR_MEMLOCK);
	}

	/* heap mode: collects the failures, so that every figure is shown */
	heap_need_module(c->test);
	if (check_output(c, helper, keyfile, expect, 1, 0) != 0) {
		fprintf(stderr, "FAILED: heap mode changed the output of %s\n", c->helper);
		failed++;
	}
	if (check_output(c, helper, keyfile, expect, 1, LR_MEMLOCK) != 0) {
		fprintf(stderr, "FAILED: heap mode changed the output of %s, %s\n", c->helper, run_name(1, LR_MEMLOCK));
		failed++;
	}
	if (!root) {
		TL_CHECK(!failed, "%s: %d heap-mode output check(s) failed (above)", c->helper, failed);
		snprintf(msg, sizeof(msg),
			 "needs root: the scans read another process's memory; %s's output and fork checks passed "
			 "plain and in heap mode", c->helper);
		scan_key_free(&key);
		tl_skip(msg);
	}
	for (int user = 0; user < 2; user++) {
		struct heap_hits h = scan_run(c, &key, helper, keyfile, 1, user ? LR_MEMLOCK : 0);

		if (h.other) {
			fprintf(stderr, "FAILED: %s, %s: %d copies of the keys outside the stack (listed above)\n",
				c->helper, run_name(1, user ? LR_MEMLOCK : 0), h.other);
			failed++;
		}
	}
	scan_key_free(&key);
	TL_CHECK(!failed, "%s: %d heap-mode check(s) failed (above)", c->helper, failed);
	printf("%s: keys found in the library's locked memory without the module; in heap mode none outside the "
	       "stack, same output, fork child reads them\n", c->helper);
}

