/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_early_handler - a pthread_atfork child handler registered
 * before the library's first use runs in the child before the library's own
 * handler (glibc runs child handlers in registration order).  Like an RNG
 * that wipes its state in children, it zeroes secrets it knows of.  Under
 * the copy policy it must not reach the parent's pages: with the secret
 * backend it finds nothing mapped there (SIGSEGV, caught by the test), the
 * parent's secrets stay intact, and after fork() the child holds its own
 * copy of every secret.  Checked for a small block, a large block and a
 * region; with the fallback backend (private memory) the handler writes
 * only the child's private copy.
 */
#include "tljmp.h" /* first: the jump out of the handler, under ThreadSanitizer */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define NT 3

static unsigned char *target[NT];
static size_t tlen[NT];
static int backend_secret;
static volatile int faulted, wrote;
static sigjmp_buf jb;

static void on_fault(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/* Registered before the library's first use: runs first in the child. */
static void early_child(void)
{
	struct sigaction sa, old_segv, old_bus;

	if (!target[0])
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fault;
	sigaction(SIGSEGV, &sa, &old_segv);
	sigaction(SIGBUS, &sa, &old_bus);
	for (volatile int i = 0; i < NT; i++) {
		if (sigsetjmp(jb, 1) == 0) {
			volatile unsigned char *p = target[i];
			for (size_t k = 0; k < tlen[i]; k++)
				p[k] = 0;
			wrote |= 1 << i;
		} else {
			faulted |= 1 << i;
		}
	}
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGBUS, &old_bus, NULL);
}

static int child_check(void)
{
	if (backend_secret) {
		if (faulted != (1 << NT) - 1) {
			fprintf(stderr, "child: the early handler could write secrets (mask %#x faulted, %#x written)\n",
				faulted, wrote);
			return 2;
		}
		for (int i = 0; i < NT; i++)
			if (!tl_check(target[i], tlen[i], 100 + (uint64_t)i)) {
				fprintf(stderr, "child: secret %d is not the copy made at fork\n", i);
				return 3;
			}
	}
	/* the child's heap works on its copy */
	secretmem_free(target[0]);
	unsigned char *p = secretmem_malloc(32);
	if (!p)
		return 4;
	for (int k = 0; k < 32; k++)
		if (p[k])
			return 5;
	secretmem_free(p);
	return 0;
}

int main(void)
{
	TL_CHECK(pthread_atfork(NULL, NULL, early_child) == 0, "pthread_atfork");
	/* the library is used only now */
	int backend = secretmem_default_backend();
	backend_secret = backend == SECRETMEM_BACKEND_SECRET;
	printf("backend: %s\n", secretmem_backend_name(backend));
	if (getenv("SECRETMEM_TEST_REQUIRE_KERNEL") && strcmp(getenv("SECRETMEM_TEST_REQUIRE_KERNEL"), "1") == 0 &&
	    !tl_under_valgrind())
		tl_need_secretmem();
	TL_CHECK(secretmem_get_option(SECRETMEM_OPT_FORK) == SECRETMEM_FORK_COPY, "default policy is not copy");

	struct secretmem_region *r = secretmem_region_create(8192, 0);
	TL_CHECK(r, "region_create: %s", strerror(errno));
	tlen[0] = 32;
	tlen[1] = 100000;
	tlen[2] = 8192;
	target[0] = secretmem_malloc(tlen[0]);
	target[1] = secretmem_malloc(tlen[1]);
	target[2] = secretmem_region_data(r);
	TL_CHECK(target[0] && target[1], "malloc: %s", strerror(errno));
	for (int i = 0; i < NT; i++)
		tl_fill(target[i], tlen[i], 100 + (uint64_t)i);

	for (int round = 0; round < 3; round++) {
		fflush(stdout);
		pid_t pid = fork();
		TL_CHECK(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0)
			tl_child_exit(child_check());
		int st;
		TL_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
		for (int i = 0; i < NT; i++)
			TL_CHECK(tl_check(target[i], tlen[i], 100 + (uint64_t)i),
				 "round %d: the early child handler wrote the parent's secret %d (%zu bytes)", round, i,
				 tlen[i]);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "round %d: child %s", round, tl_status_str(st));
	}
	secretmem_free(target[0]);
	secretmem_free(target[1]);
	TL_CHECK(secretmem_region_destroy(r) == 0, "region_destroy");
	printf("ok: an early pthread_atfork child handler %s the parent's secrets\n",
	       backend_secret ? "faults on" : "writes only its private copy of");
	return TL_PASS;
}
