/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * fork_bench - how long fork() blocks the parent under the copy policy, per
 * MiB of live secret data.
 *
 *   fork_bench LAYOUT MIB FORKS
 *
 * LAYOUT: region (one region of MIB MiB, every page written), small
 * (MIB MiB of live 256-byte blocks), large (MIB MiB of live 64 KiB blocks),
 * sparse (MIB MiB of 256-byte blocks allocated, then all but the first
 * eighth freed: the chunks stay mapped and faulted in, an eighth is live).  After the set-up the
 * program forks FORKS times; each child exits at once.  For each fork it
 * prints one line: "wall_ms cpu_ms" - the wall time of the fork() call in
 * the parent and the parent's CPU time (process-wide) in it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "secretmem.h"

static double ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *xmalloc(size_t n)
{
	void *p = secretmem_malloc(n);

	if (!p) {
		fprintf(stderr, "fork_bench: secretmem_malloc(%zu): %s\n", n, strerror(errno));
		exit(1);
	}
	memset(p, 0xa5, n);
	return p;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: fork_bench region|small|large|sparse MIB FORKS\n");
		return 2;
	}
	const char *layout = argv[1];
	size_t bytes = (size_t)strtoul(argv[2], NULL, 10) << 20;
	int forks = atoi(argv[3]);

	if (bytes && strcmp(layout, "region") == 0) {
		struct secretmem_region *r = secretmem_region_create(bytes, 0);
		if (!r) {
			fprintf(stderr, "fork_bench: region_create: %s\n", strerror(errno));
			return 1;
		}
		memset(secretmem_region_data(r), 0xa5, bytes);
	} else if (strcmp(layout, "small") == 0 || strcmp(layout, "sparse") == 0) {
		size_t n = bytes / 256;
		void **p = calloc(n ? n : 1, sizeof(*p));
		for (size_t i = 0; i < n; i++)
			p[i] = xmalloc(256);
		if (strcmp(layout, "sparse") == 0)
			for (size_t i = 0; i < n; i++)
				if (i >= n / 8)
					secretmem_free(p[i]);
	} else if (strcmp(layout, "large") == 0) {
		for (size_t i = 0; i < bytes / 65536; i++)
			xmalloc(65536);
	} else if (strcmp(layout, "region") != 0) {
		fprintf(stderr, "fork_bench: unknown layout %s\n", layout);
		return 2;
	}
	secretmem_free(xmalloc(32)); /* the handlers are installed in every layout */
	for (int f = 0; f < forks; f++) {
		fflush(stdout);
		double w0 = ms(CLOCK_MONOTONIC), c0 = ms(CLOCK_PROCESS_CPUTIME_ID);
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		double c1 = ms(CLOCK_PROCESS_CPUTIME_ID), w1 = ms(CLOCK_MONOTONIC);
		if (pid < 0) {
			fprintf(stderr, "fork_bench: fork: %s\n", strerror(errno));
			return 1;
		}
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		printf("%.3f %.3f\n", w1 - w0, c1 - c0);
	}
	return 0;
}
