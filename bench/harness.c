/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * harness.c - the measuring machinery every workload uses: the timer (wall
 * and CPU time, minor page faults and new secretmem mappings between two
 * points), the errors, the samples (one per round, workload and
 * allocator), the child processes (this program run again with
 * --child ..., its figures read back), an allocator's set-up in a child,
 * and the rounds of fresh processes of 6 and 7, then the processes of 8,
 * the allocators taking turns.  The figures are drawn from the samples in
 * report.c.
 */
#include <errno.h>
#include <math.h>
#include <openssl/crypto.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench.h"

double clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static long thread_minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_minflt;
}

static size_t regions_created(void)
{
	struct secretmem_stats st;

	return secretmem_stats(&st) == 0 ? st.regions_created : 0;
}

/*
 * A timed run: wall time (CLOCK_MONOTONIC), the CPU time of the calling
 * thread, its minor page faults, and with count_maps the secretmem regions
 * created - all between timer_start() and timer_stop() only.
 */
static double wall0, cpu0;
double last_cpu, last_faults, last_maps;
static long flt0;
static size_t maps0;
int count_maps;

void timer_start(void)
{
	flt0 = thread_minflt();
	if (count_maps)
		maps0 = regions_created();
	cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	wall0 = now_ns();
}

/* Wall time since timer_start(); the CPU time goes to last_cpu. */
double timer_stop(void)
{
	double w = now_ns() - wall0;

	last_cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	last_faults = (double)(thread_minflt() - flt0);
	last_maps = count_maps ? (double)(regions_created() - maps0) : NAN;
	return w;
}

const char *cur_name = "";

void die(const char *what)
{
	fprintf(stderr, "bench: %s: %s\n", what, strerror(errno));
	exit(2);
}

void oom(const char *who)
{
	fprintf(stderr, "bench: %s: allocation failed: %s\n", who, strerror(errno));
	exit(2);
}

struct series ser[NWORK][NALLOC];

void add_sample(int w, int a, struct sample s)
{
	struct series *q = &ser[w][a];

	if (q->n < MAXROUNDS)
		q->s[q->n++] = s;
}

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One fd per naive secret: allow as many as the hard limit permits. */
void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * Run this program again with --child what arg [arg2]; parse up to nout numbers
 * from its output.  Returns the count parsed, or -1 (status describes why).
 */
int run_child(const char *what, const char *arg, const char *arg2, double *out, int nout,
	      char *status, size_t status_len)
{
	int fd[2];

	snprintf(status, status_len, "failed");
	fflush(NULL);
	if (pipe(fd) != 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execl("/proc/self/exe", "bench", "--child", what, arg, arg2, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	char buf[512];
	size_t len = 0;
	ssize_t r;
	while ((r = read(fd[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)r;
	close(fd[0]);
	buf[len] = 0;
	int st;
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	if (WIFSIGNALED(st)) {
		snprintf(status, status_len, "killed by SIG%s", sigabbrev_np(WTERMSIG(st)) ?
			 sigabbrev_np(WTERMSIG(st)) : "?");
		return -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(status, status_len, "exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return -1;
	}
	int n = 0;
	char *s = buf, *end;
	while (n < nout) {
		double d = strtod(s, &end);
		if (end == s)
			break;
		out[n++] = d;
		s = end;
	}
	snprintf(status, status_len, "ok");
	return n;
}

/* Initialise the allocator a for a child case; arena: OpenSSL heap size. */
int child_init(int a, size_t arena)
{
	struct secretmem_stats st;

	switch (a) {
	case A_SECRETMEM:
		secretmem_stats(&st); /* the library's set-up, outside the clock */
		return 1;
	case A_OPENSSL:
		return CRYPTO_secure_malloc_init(arena, 16);
	case A_SODIUM:
		if (sodium_init() < 0) {
			fprintf(stderr, "bench: sodium_init failed\n");
			exit(2);
		}
		return 1;
	case A_NAIVE:
		raise_nofile();
		return 1;
	default:
		if (!allocs[a].available) {
			fprintf(stderr, "bench: %s: %s\n", allocs[a].name, allocs[a].why);
			exit(2);
		}
		return 1;
	}
}

char child_fail[256]; /* the first failure of a per-round child */

void note_child_fail(const char *what, int a, const char *status)
{
	if (!child_fail[0])
		snprintf(child_fail, sizeof(child_fail), "%s %s: %s", what, allocs[a].name, status);
}

/* 6, 7 and 8, in rounds of fresh processes, the allocators taking turns. */
void measure_children(void)
{
	for (int r = 0; r < opt.child_rounds; r++) {
		fprintf(stderr, "bench: realloc chains and live-set growth, round %d of %d\n", r + 1,
			opt.child_rounds);
		chain_round(r);
		grow_round(r);
	}
	sweep_processes();
}
