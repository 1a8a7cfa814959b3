/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * heap_fork MIB FORKS - how long fork() takes with MIB MiB of live heap
 * (1 KiB blocks, every byte written), in the process it runs in: run it
 * plain or under libsecretmem-heap.so (bench/heap_fork.sh does both,
 * interleaved).  Prints the median, minimum and maximum wall time of the
 * fork() call in the parent (the heap module copies the secret heap there,
 * in the prepare handler) and the CPU time of the whole run, in
 * microseconds: "fork_us median min max cpu_us".
 *
 * heap_fork MIB FORKS exec - the same, but the child executes /bin/true at
 * once and the time is that of fork() + exec + the child's exit (waitpid):
 * what a program that runs a helper pays.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "exec")))
		return 64;
	int exec = argc == 4;
	size_t mib = strtoul(argv[1], NULL, 10), n = mib * 1024;
	int forks = atoi(argv[2]);
	char **blk = malloc((n ? n : 1) * sizeof(*blk));
	double *t = malloc((size_t)forks * sizeof(*t));

	if (!blk || !t)
		return 1;
	for (size_t i = 0; i < n; i++) {
		blk[i] = malloc(1024);
		if (!blk[i])
			return 1;
		memset(blk[i], (int)i, 1024);
	}
	for (int k = 0; k < forks; k++) {
		double t0 = now_us();
		pid_t pid = fork();
		if (pid == 0) {
			if (exec)
				execl("/bin/true", "true", (char *)NULL);
			_exit(blk && (!n || blk[n - 1][0] == (char)(n - 1)) ? 0 : 1);
		}
		if (!exec)
			t[k] = now_us() - t0;
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
		if (exec)
			t[k] = now_us() - t0;
	}
	qsort(t, (size_t)forks, sizeof(*t), cmp);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1e6 + ru.ru_stime.tv_usec;
	printf("%.1f %.1f %.1f %.0f\n", t[forks / 2], t[0], t[forks - 1], cpu);
	return 0;
}
