/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * pair_steps - instructions per 32-byte pair (alloc + write + free),
 * counted by single-stepping a child with ptrace: no hardware counters are
 * needed, and the library runs natively on its secret backend (under
 * valgrind it would run on the fallback backend with valgrind's requests).
 *
 *   build/bench/pair_steps            secretmem_malloc + write + secretmem_free
 *   build/bench/pair_steps glibc      malloc + write + explicit_bzero + free
 *
 * The child warms up with 1,000 pairs, stops at an int3, runs PAIRS pairs
 * and stops at a second int3; the parent counts the steps in between.  The
 * count includes the loop and the 32-byte write (two 16-byte stores).
 * x86-64 only.
 */
#include <secretmem.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAIRS 10
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

static void pair(int glibc)
{
	unsigned char *p = glibc ? malloc(32) : secretmem_malloc(32);

	if (!p)
		_exit(3);
	memset(p, 1, 32);
	ESCAPE(p);
	if (glibc) {
		explicit_bzero(p, 32);
		free(p);
	} else {
		secretmem_free(p);
	}
}

int main(int argc, char **argv)
{
#if defined(__x86_64__)
	int glibc = argc > 1 && strcmp(argv[1], "glibc") == 0, st;
	long steps = 0;
	pid_t c = fork();

	if (c < 0) {
		perror("fork");
		return 1;
	}
	if (c == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(2);
		raise(SIGSTOP);
		for (int i = 0; i < 1000; i++)
			pair(glibc);
		__asm__ volatile("int3");
		for (int i = 0; i < PAIRS; i++)
			pair(glibc);
		__asm__ volatile("int3");
		_exit(0);
	}
	/* the SIGSTOP, then the first int3 */
	if (waitpid(c, &st, 0) != c || !WIFSTOPPED(st) || ptrace(PTRACE_CONT, c, NULL, NULL) != 0 ||
	    waitpid(c, &st, 0) != c || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP) {
		fprintf(stderr, "pair_steps: the child did not reach its first stop\n");
		return 1;
	}
	for (;;) {
		if (ptrace(PTRACE_SINGLESTEP, c, NULL, NULL) != 0 || waitpid(c, &st, 0) != c || !WIFSTOPPED(st)) {
			fprintf(stderr, "pair_steps: the child ended before its second stop\n");
			return 1;
		}
		steps++;
		long rip = ptrace(PTRACE_PEEKUSER, c, offsetof(struct user_regs_struct, rip), NULL);
		long word = ptrace(PTRACE_PEEKTEXT, c, rip, NULL);
		if ((word & 0xff) == 0xcc)
			break;
	}
	kill(c, SIGKILL);
	waitpid(c, &st, 0);
	printf("%s: %.1f instructions per 32-byte pair\n", glibc ? "glibc+bzero" : "secretmem",
	       (double)steps / PAIRS);
	return 0;
#else
	(void)argc;
	(void)argv;
	fprintf(stderr, "pair_steps: x86-64 only\n");
	return 1;
#endif
}
