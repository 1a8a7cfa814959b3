/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_taken - a pthread_atfork child handler registered before the
 * library's first use maps memory at the address of a secret (which is
 * empty in the child: MADV_DONTFORK).  The library's child handler must
 * neither unmap that mapping (to put the copy there) nor leave the
 * program's pointer leading into it: the child aborts with the fixed line
 * of secretmem(7), under every policy.  The parent's secret is untouched.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define LINE "secretmem: fatal: fork: the child mapped memory at the address of a secret before the library's fork handler ran"

static unsigned char *target;
static volatile int armed;

static void early_child(void)
{
	if (!armed)
		return;
	void *p = mmap(target, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != target)
		_exit(3); /* the address was not free: the secret is mapped here */
	memset(p, 0x5a, 4096);
}

static int fork_with_taken_address(void *arg)
{
	int st;

	tl_no_core();
	tl_signal_default(SIGABRT);
	if (secretmem_set_option(SECRETMEM_OPT_FORK, (int)(intptr_t)arg))
		return 2;
	armed = 1;
	pid_t pid = fork();
	if (pid == 0)
		_exit(0); /* the library let the child run on */
	armed = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 2;
	printf("child: %s\n", tl_status_str(st));
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT ? 0 : 4;
}

int main(void)
{
	static char out[8192];

	TL_CHECK(pthread_atfork(NULL, NULL, early_child) == 0, "pthread_atfork");
	tl_need_secretmem(); /* fallback memory is private: nothing is empty in the child */
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	TL_CHECK(r, "region_create: %s", strerror(errno));
	target = secretmem_region_data(r);
	tl_fill(target, 4096, 77);
	for (int policy = SECRETMEM_FORK_COPY; policy <= SECRETMEM_FORK_DROP; policy++) {
		if (policy == SECRETMEM_FORK_SHARE)
			continue; /* shared: the pages are in the child, the address is not free */
		int st = tl_run_child(fork_with_taken_address, (void *)(intptr_t)policy, out, sizeof(out));
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && tl_has_line(out, LINE),
			 "policy %d: expected the child to abort with \"%s\"; got %s, output:\n%s", policy, LINE,
			 tl_status_str(st), out);
		printf("ok: policy %d: the child aborts with the fixed line\n", policy);
	}
	TL_CHECK(tl_check(target, 4096, 77), "the parent's secret changed");
	TL_CHECK(secretmem_region_destroy(r) == 0, "region_destroy");
	return TL_PASS;
}
