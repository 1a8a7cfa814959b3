/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_sandbox_kill - heap mode under seccomp filters whose action kills:
 * the program must live wherever it would live without the module.
 *  - allowlist (prctl, and syscall(SYS_seccomp)): after it has used its
 *    heap, the program installs a filter like OpenSSH's privilege-separated
 *    child's (the calls a malloc needs and a few more; kill at anything
 *    else, clone, mincore, memfd_secret, prlimit64 and openat among them),
 *    then frees blocks of many pages, churns, grows its heap by 25 MiB,
 *    locks 64 KiB it mapped and asks mallinfo2(): it lives; no secret memory is made after the filter (the figures
 *    page's secret bytes do not grow), the new blocks are ordinary memory
 *    (one warning names the sandbox), the blocks made before keep their
 *    contents in secret memory; fork() fails with ENOMEM without making a
 *    child (a clone would be killed).
 *  - listener: the same with a supervisor's filter (syscall(SYS_seccomp),
 *    NEW_LISTENER: success is a descriptor, not 0) that hands memfd_secret
 *    to a supervisor who never answers: the module must read it, or its
 *    memfd_secret child waits for ever.
 *  - nostderr: a filter that kills only at a write(2) on stderr: the same,
 *    with the warnings left unsaid (they would be the killing call).
 *  - fstat-kill, fstat-trap: a filter that kills (traps) only at
 *    newfstatat, glibc's fstat(), which the library calls after the
 *    ftruncate of a new secret file: the same as the allowlist, one warning.
 *  - mincore: a filter that kills only at mincore (no systemd group allows
 *    it), installed while the program runs (after two of libseccomp's
 *    probes, which install nothing) or inherited at exec: frees,
 *    churn, growth and fork work, and new blocks (2 MiB) are still secret
 *    memory.
 *  - fallback: memfd_secret refused (ERRNO ENOSYS) by a filter inherited at
 *    exec, so the heap is the locked fallback; the program then installs a
 *    filter that kills only at mlock2, which locks a fork child's copy of
 *    it: the child runs (its copy unlocked, one warning names the sandbox).
 * Each as root and as uid 65534 under `ulimit -l 8192`; plain runs of the
 * allowlist, fstat and mincore cases (no module) are the control that the
 * program itself lives under them.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heaprig.h"
#include "helpers/seccomp_allow.h"
#include "tlib.h"

#define PRE 64
#define GROW 400 /* x 64 KiB after the filter (allowlist: 25 MiB) */
#define GROW_SECRET 32 /* ... with secret memory to make (2 MiB: under ulimit -l 8192) */

static const int allowed[] = {
	SYS_brk, SYS_clock_gettime, SYS_close, SYS_exit, SYS_exit_group, SYS_futex, SYS_getpid, SYS_getrandom,
	SYS_gettimeofday, SYS_madvise, SYS_mmap, SYS_mprotect, SYS_mremap, SYS_munmap, SYS_poll, SYS_ppoll, SYS_read,
	SYS_rt_sigprocmask, SYS_rt_sigreturn, SYS_select, SYS_pselect6, SYS_shutdown, SYS_write, SYS_writev,
	SYS_nanosleep, SYS_clock_nanosleep, SYS_sigaltstack, SYS_mlock, SYS_munlock,
};

static int allowlist(int through_syscall)
{
	return seccomp_allow_only(allowed, (int)(sizeof(allowed) / sizeof(allowed[0])),
				  through_syscall ? ALLOW_SYSCALL : ALLOW_PRCTL);
}

/* A supervisor's filter (SECCOMP_FILTER_FLAG_NEW_LISTENER): memfd_secret
 * waits for an answer that never comes (nobody reads the listener); the
 * call's success is the listener's descriptor, not 0. */
static int listener(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_secret, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog) > 0 ? 0 : -1;
}

/* Installs the n-instruction filter f through prctl, after no_new_privs. */
static int install(struct sock_filter *f, unsigned short n)
{
	struct sock_fprog prog = { n, f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* Kills at a write(2) on stderr, nothing else: the module's warnings are
 * the calls it would make (stdout stays open for say()). */
static int no_stderr(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 2),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 2, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	return install(f, (unsigned short)(sizeof(f) / sizeof(f[0])));
}

/* Kills (traps) only at newfstatat, glibc's fstat since 2.33 (fd, "",
 * AT_EMPTY_PATH): the program makes none after it. */
static int no_fstat(unsigned action)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_newfstatat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, action),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	return install(f, (unsigned short)(sizeof(f) / sizeof(f[0])));
}

/* The figures page's address (read before a filter stops /proc). */
static const struct sm_heap_stats *stats_page(void)
{
	char line[512];
	unsigned long start = 0, end;
	FILE *f = fopen("/proc/self/maps", "re");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "/memfd:" SM_HEAP_STATS_NAME) && sscanf(line, "%lx-%lx", &start, &end) == 2)
			break;
	if (f)
		fclose(f);
	return (const struct sm_heap_stats *)start;
}

/* Writes only (stdio's first write may allocate: done before a filter). */
static void say(const char *s)
{
	if (write(1, s, strlen(s)) < 0)
		_exit(9);
}

static int child(const char *mode)
{
	static unsigned char *pre[PRE], *grown[GROW];
	int heap = hr_active(), pre_secret = 1;
	int kill_all = !strncmp(mode, "allowlist", 9) || !strcmp(mode, "listener") || !strcmp(mode, "nostderr") ||
		       !strncmp(mode, "fstat", 5);
	const struct sm_heap_stats *st = heap ? stats_page() : NULL;

	for (int i = 0; i < PRE; i++) {
		size_t n = 1000 + (size_t)i * 1000; /* up to 64 KiB: many pages */
		pre[i] = malloc(n);
		TL_CHECK(pre[i], "malloc");
		tl_fill(pre[i], n, (uint64_t)i);
		pre_secret &= !heap || hr_where(pre[i]) == 's';
	}
	TL_CHECK(pre_secret, "blocks made before the filter are not all secret");
	TL_CHECK(!heap || st, "no figures page");
	uint64_t secret_before = st ? st->secret_bytes : 0;
	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(mode, "listener"))
		TL_CHECK(listener() == 0, "the filter: %s", strerror(errno));
	else if (!strcmp(mode, "nostderr"))
		TL_CHECK(no_stderr() == 0, "the filter: %s", strerror(errno));
	else if (!strncmp(mode, "fstat", 5))
		TL_CHECK(no_fstat(!strcmp(mode, "fstat-trap") ? SECCOMP_RET_TRAP : SECCOMP_RET_KILL_PROCESS) == 0,
			 "the filter: %s", strerror(errno));
	else if (kill_all)
		TL_CHECK(allowlist(strstr(mode, "syscall") != NULL) == 0, "the filter: %s", strerror(errno));
	else if (!strcmp(mode, "mincore")) {
		/* libseccomp's probes first: they install nothing */
		TL_CHECK(syscall(SYS_seccomp, SECCOMP_SET_MODE_STRICT, 1, NULL) == -1 && errno == EINVAL, "probe 1");
		TL_CHECK(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, NULL) == -1 && errno == EFAULT, "probe 2");
		TL_CHECK(tl_seccomp_action(SYS_mincore, SECCOMP_RET_KILL_PROCESS) == 0, "the filter");
	}
	say("filter in\n");

	for (int i = 0; i < PRE; i += 2) /* frees of many pages: mincore would be asked */
		free(pre[i]);
	for (int r = 0; r < 20; r++) {
		unsigned char *q[100];
		for (int i = 0; i < 100; i++) {
			size_t n = (size_t)(i * 997 % 30000) + 1;
			q[i] = malloc(n);
			TL_CHECK(q[i], "malloc in the churn");
			memset(q[i], r, n);
		}
		for (int i = 0; i < 100; i++)
			free(q[i]);
	}
	int ngrow = kill_all ? GROW : GROW_SECRET;
	for (int i = 0; i < ngrow; i++) {
		grown[i] = malloc(65536);
		TL_CHECK(grown[i], "malloc while growing");
		memset(grown[i], 5, 65536);
	}
	say("grown\n");
	/* memory the program locks (the module makes it secret when it can:
	 * LOCKED MEMORY) */
	unsigned char *lk = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	TL_CHECK(lk != MAP_FAILED, "mmap");
	memset(lk, 0x5a, 65536);
	TL_CHECK(mlock(lk, 65536) == 0 && lk[0] == 0x5a && lk[65535] == 0x5a && munlock(lk, 65536) == 0,
		 "mlock after the filter: %s", strerror(errno));
	say("locked\n");
	struct mallinfo2 mi = mallinfo2(); /* its figures must take no system call the filter stops */
	TL_CHECK(mi.uordblks > 0, "mallinfo2");
	say("mallinfo2\n");
	for (int i = 1; i < PRE; i += 2)
		TL_CHECK(tl_check(pre[i], 1000 + (size_t)i * 1000, (uint64_t)i), "block %d changed", i);

	errno = 0;
	pid_t pid = kill_all && heap ? fork() : -2;
	if (kill_all && heap) {
		TL_CHECK(pid == -1 && errno == ENOMEM, "fork under the allowlist: %d, errno %d", (int)pid, errno);
		TL_CHECK(st->secret_bytes == secret_before, "secret memory made after the filter (%llu -> %llu bytes)",
			 (unsigned long long)secret_before, (unsigned long long)st->secret_bytes);
		TL_CHECK(st->plain_blocks > 0 && st->refusals > 0, "no block went to ordinary memory");
		say("no secret memory made after the filter; fork: ENOMEM\n");
	} else if (!kill_all) {
		pid = fork();
		if (pid == 0)
			_exit(tl_check(pre[1], 2000, 1) ? 0 : 1);
		int ws;
		TL_CHECK(pid > 0 && waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "fork");
		if (heap) {
			int secret = 0;
			for (int i = 0; i < ngrow; i++)
				secret += hr_where(grown[i]) == 's';
			TL_CHECK(secret == ngrow, "only %d of %d new blocks secret", secret, ngrow);
			say("new blocks secret; fork: a child\n");
		}
	}
	say("child ok\n");
	return 0;
}

/* The fallback case after exec: the heap in the fallback, a kill at mlock2,
 * a fork. */
static int fallback(void)
{
	static unsigned char *b[PRE];

	for (int i = 0; i < PRE; i++) {
		b[i] = malloc(1000 + (size_t)i * 1000);
		TL_CHECK(b[i], "malloc");
		tl_fill(b[i], 1000 + (size_t)i * 1000, (uint64_t)i);
	}
	TL_CHECK(hr_where(b[PRE - 1]) == 'f', "the heap is not in the fallback: '%c'", hr_where(b[PRE - 1]));
	TL_CHECK(tl_seccomp_action(SYS_mlock2, SECCOMP_RET_KILL_PROCESS) == 0, "the filter");
	say("filter in\n");
	for (int i = 0; i < GROW_SECRET; i++) {
		unsigned char *p = malloc(65536);
		TL_CHECK(p, "malloc while growing");
		memset(p, 5, 65536);
	}
	errno = 0;
	pid_t pid = fork();
	if (pid == 0)
		_exit(tl_check(b[1], 2000, 1) ? 0 : 1);
	int ws = 0;
	TL_CHECK(pid > 0 ? waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0 : errno == ENOMEM,
		 "fork: %d, errno %d, the child's status %#x", (int)pid, errno, ws);
	say("child ok\n");
	return 0;
}

/* Install the mincore filter (fallback: memfd_secret refused), then run
 * this program again under the module (the filter is inherited at exec). */
static int wrap(const char *self, int fb)
{
	char env[4096 + 16], path[4096], arg[16];

	snprintf(arg, sizeof(arg), "%s", fb ? "fallback-in" : "at-exec");
	if (fb)
		TL_CHECK(tl_seccomp_block(SYS_memfd_secret, ENOSYS) == 0, "the filter");
	else
		TL_CHECK(tl_seccomp_action(SYS_mincore, SECCOMP_RET_KILL_PROCESS) == 0, "the filter");
	snprintf(env, sizeof(env), "LD_PRELOAD=%s", hr_module());
	snprintf(path, sizeof(path), "%s", self);
	char *argv[] = { path, arg, NULL }, *envp[] = { env, NULL };
	execve(path, argv, envp);
	return 127;
}

static void one(const char *self, const char *mode, int heap, int user)
{
	char out[16384];
	int st = user ? hr_run_user(self, mode, heap, NULL, (size_t)8 << 20, out, sizeof(out))
		      : hr_run(self, mode, heap, NULL, out, sizeof(out));

	printf("== %s, %s%s: %s\n%s", mode, !strncmp(mode, "wrap", 4) ? "heap mode, filter at exec" : heap ? "heap mode" : "plain",
	       user ? ", uid 65534" : "", tl_status_str(st), out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok"), "%s (%s): %s", mode,
		 heap ? "heap" : "plain", tl_status_str(st));
	if (heap && (!strncmp(mode, "allowlist", 9) || !strcmp(mode, "listener")))
		TL_CHECK(strstr(out, "cause: sandbox"), "%s: no warning that names the sandbox", mode);
	if ((heap && !strncmp(mode, "fstat", 5)) || !strcmp(mode, "wrap-fallback")) {
		const char *w = strstr(out, "cause: sandbox");
		TL_CHECK(w && !strstr(w + 1, "cause: sandbox"), "%s: not one warning that names the sandbox", mode);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strncmp(argv[1], "wrap", 4))
		return wrap(argv[0], !strcmp(argv[1], "wrap-fallback"));
	if (argc > 1 && !strcmp(argv[1], "fallback-in"))
		return fallback();
	if (argc > 1)
		return child(!strcmp(argv[1], "at-exec") ? "at-exec" : argv[1]);
	tl_need_secretmem();
	hr_module();
	const char *modes[] = { "allowlist-prctl", "allowlist-syscall", "listener", "nostderr", "fstat-kill", "fstat-trap",
				"mincore", "wrap", "wrap-fallback" };
	for (int m = 0; m < (int)(sizeof(modes) / sizeof(modes[0])); m++) {
		int wrap = !strncmp(modes[m], "wrap", 4);
		if (!wrap)
			one(argv[0], modes[m], 0, 0);
		for (int user = 0; user < 2; user++)
			one(argv[0], modes[m], !wrap, user);
	}
	printf("pass\n");
	return 0;
}
