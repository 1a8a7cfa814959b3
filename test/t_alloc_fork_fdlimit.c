/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_fdlimit - the copy policy at the descriptor limit
 * (RLIMIT_NOFILE), with exactly one free descriptor and with none.  A
 * secret the parent writes right after fork() returns must never appear in
 * the child.  With one free descriptor the child has its copy (the copy
 * needs one descriptor for a moment, before fork()); with none the copy
 * cannot be made and the child has no secret memory (touching it faults)
 * and says so on stderr: it fails closed.
 */
#include "tljmp.h" /* first: the jump out of the handler, under ThreadSanitizer */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define LIM 64
#define ROUNDS 20
#define SMALL 64
#define REGION (1u << 20)

enum { SAW_COPY = 0, SAW_FAULT = 10, SAW_LATER = 20 };

static unsigned char *small, *reg;
static sigjmp_buf jb;

static void on_fault(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/* In the forked child: what does it hold at the secrets' addresses? */
static int look(uint64_t at_fork, uint64_t later)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fault;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	if (sigsetjmp(jb, 1))
		return SAW_FAULT;
	if (tl_check(small, SMALL, later) || tl_check(reg, REGION, later) || tl_check(reg + REGION - 4096, 4096, later + 7))
		return SAW_LATER;
	if (!tl_check(small, SMALL, at_fork) || !tl_check(reg, REGION, at_fork))
		return 30;
	return SAW_COPY;
}

static int at_limit(void *arg)
{
	int nfree = (int)(intptr_t)arg, faults = 0, copies = 0;
	struct secretmem_region *r = secretmem_region_create(REGION, 0);

	small = secretmem_malloc(SMALL);
	if (!r || !small) {
		printf("setup: %s\n", strerror(errno));
		return 2;
	}
	reg = secretmem_region_data(r);
	/* descriptors 0..LIM-1 all open, the limit LIM + nfree */
	for (int fd = 0; fd < LIM; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDONLY) != fd) {
			printf("could not fill descriptor %d\n", fd);
			return 2;
		}
	struct rlimit rl = { (rlim_t)(LIM + nfree), (rlim_t)(LIM + nfree) };
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		printf("setrlimit: %s\n", strerror(errno));
		return 2;
	}
	for (int round = 0; round < ROUNDS; round++) {
		uint64_t at_fork = 1000 + (uint64_t)round * 2, later = at_fork + 1;
		tl_fill(small, SMALL, at_fork);
		tl_fill(reg, REGION, at_fork);
		fflush(stdout);
		fflush(stderr);
		pid_t pid = fork();
		if (pid == 0)
			_exit(look(at_fork, later));
		/* at once after fork() returns */
		tl_fill(small, SMALL, later);
		tl_fill(reg, REGION, later);
		tl_fill(reg + REGION - 4096, 4096, later + 7);
		if (pid < 0) {
			printf("fork: %s\n", strerror(errno));
			return 2;
		}
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || (WEXITSTATUS(st) != SAW_COPY && WEXITSTATUS(st) != SAW_FAULT)) {
			printf("round %d: child %s (%d: a write made after fork() is in the child)\n", round,
			       tl_status_str(st), WIFEXITED(st) ? WEXITSTATUS(st) : -1);
			return 3;
		}
		if (WEXITSTATUS(st) == SAW_FAULT)
			faults++;
		else
			copies++;
	}
	printf("%d free descriptor(s): %d copies, %d dropped\n", nfree, copies, faults);
	if (nfree >= 1 && copies != ROUNDS)
		return 4; /* one descriptor is all a copy needs */
	if (nfree == 0 && faults != ROUNDS)
		return 5;
	return 0;
}

int main(void)
{
	static char out[16384];

	tl_need_secretmem(); /* the fallback backend needs no descriptor */
	for (int nfree = 1; nfree >= 0; nfree--) {
		int st = tl_run_child(at_limit, (void *)(intptr_t)nfree, out, sizeof(out));
		fputs(out, stdout);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%d free descriptor(s): %s", nfree, tl_status_str(st));
		if (nfree == 0)
			TL_CHECK(strstr(out, "secretmem: warning: fork: could not copy secret memory into the child (no free file descriptor)"),
				 "no free descriptor: the child did not warn that it has no copy");
	}
	return TL_PASS;
}
