/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * lockkeys.h - shared by the helpers of the locked-memory proofs
 * (test/t_heap_lock_*: lock_sodium, lock_gcrypt, lock_openssl, lock_botan)
 * and by the tests, which compute the same checksums.
 *
 * A helper is run as "HELPER KEYFILE once|wait".  KEYFILE holds the test's
 * random 32-byte keys, which the helper read()s straight into the library's
 * locked memory (no copy of its own in ordinary memory).  It prints, on
 * stdout, what each library call returned and a checksum of each key as it
 * reads it back, then forks: the child prints the checksums it reads and
 * overwrites the keys in its copy, the parent checks that its own keys are
 * unchanged after the child ended.  "wait": then it forks a child that
 * keeps its copy of the keys ("keeper: PID"), prints "ready" and both wait
 * to be scanned; "once": it ends.  Everything printed depends only on the keys,
 * so a plain run and a heap-mode run print the same text.
 */
#ifndef SECRETMEM_LOCKKEYS_H
#define SECRETMEM_LOCKKEYS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define LK_KEYLEN 32

/* FNV-1a, 64 bits: tells a key read back correctly from a damaged one. */
static inline uint64_t lk_sum(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}


/* What a helper does with its library. */
struct lk_ops {
	int nkeys;
	const char *name[4];
	/* read the keys from fd into the library's locked memory, printing
	 * what the library calls returned; 0, or -1 (the helper fails) */
	int (*load)(int fd);
	/* the checksum of key i, read back from where the library keeps it */
	uint64_t (*sum)(int i);
	/* overwrite key i where the library keeps it (in the fork child) */
	void (*scribble)(int i);
	/* release everything, printing what the library calls returned */
	void (*finish)(void);
};

/* Read exactly LK_KEYLEN bytes from fd into p: 0 or -1. */
static inline int lk_read(int fd, void *p)
{
	return read(fd, p, LK_KEYLEN) == LK_KEYLEN ? 0 : -1;
}

static inline void lk_sums(const struct lk_ops *ops, const char *who)
{
	for (int i = 0; i < ops->nkeys; i++)
		printf("%skey %s: %016llx\n", who, ops->name[i], (unsigned long long)ops->sum(i));
}

/* The helper's main: see the top of this file. */
static inline int lk_main(int argc, char **argv, const struct lk_ops *ops)
{
	int st, fd;
	pid_t pid;

	if (argc != 3 || (strcmp(argv[2], "once") != 0 && strcmp(argv[2], "wait") != 0)) {
		fprintf(stderr, "usage: %s KEYFILE once|wait\n", argv[0]);
		return 64;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	if (ops->load(fd) != 0)
		return 1;
	close(fd);
	lk_sums(ops, "");
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		lk_sums(ops, "child: ");
		for (int i = 0; i < ops->nkeys; i++)
			ops->scribble(i);
		fflush(stdout);
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid)
		return 1;
	printf("child: %s %d\n", WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	lk_sums(ops, "after the child: ");
	if (strcmp(argv[2], "wait") == 0) {
		/* a second child that keeps its copy of the keys, for the scan
		 * of a fork child; it dies with this process */
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(0);
			for (;;)
				pause();
		}
		printf("keeper: %d\n", (int)pid);
		printf("ready\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	ops->finish();
	return 0;
}

#endif
