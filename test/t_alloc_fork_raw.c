/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_raw - children that run no pthread_atfork handlers: made by
 * glibc's _Fork() and by a raw clone(2) system call.  With the secret
 * backend they have nothing mapped at the parent's secrets (MADV_DONTFORK):
 * reading or writing a small block, a large block or a region faults.  With
 * the fallback backend (private memory) their writes stay in their own
 * copy.  Either way the parent's secrets are intact, and the child's heap
 * works: its first call starts it empty (rawchild.c), so malloc, realloc,
 * free, a large block and a new region work, never at an inherited
 * address, and the inherited blocks are no longer the allocator's.
 */
#include "tljmp.h" /* first: the jump out of the handler, under ThreadSanitizer */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define NT 3

static unsigned char *target[NT];
static size_t tlen[NT];
static sigjmp_buf jb;

static void on_fault(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/* The child's own heap: new blocks and a region, away from every inherited
 * address; 0 when all of it works. */
static int child_heap(void)
{
	unsigned char *a = secretmem_malloc(32), *b = secretmem_malloc(70000);
	struct secretmem_region *nr = secretmem_region_create(4096, 0);

	if (!a || !b || !nr)
		return 1;
	unsigned char *c = secretmem_region_data(nr);
	for (int i = 0; i < NT; i++)
		for (unsigned char *p = a; p; p = p == a ? b : p == b ? c : NULL)
			if (p < target[i] + tlen[i] && target[i] < p + 4096)
				return 2;
	if (secretmem_owns(target[0]) || secretmem_owns(target[1]))
		return 3;
	tl_fill(a, 32, 1);
	tl_fill(b, 70000, 2);
	tl_fill(c, 4096, 3);
	a = secretmem_realloc(a, 3000);
	if (!a || !tl_check(a, 32, 1) || !tl_check(b, 70000, 2) || !tl_check(c, 4096, 3))
		return 4;
	secretmem_free(a);
	secretmem_free(b);
	return secretmem_region_destroy(nr) ? 5 : 0;
}

/* Exit code: bit i set when reading target i faulted, bit 3+i when writing
 * it faulted, bit 6 when the child's own heap faulted or failed. */
static int raw_child(void)
{
	struct sigaction sa;
	volatile int code = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fault;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	for (volatile int i = 0; i < NT; i++) {
		volatile unsigned char *p = target[i];
		if (sigsetjmp(jb, 1) == 0) {
			unsigned char v = 0;
			for (size_t k = 0; k < tlen[i]; k++)
				v |= p[k];
			(void)v;
		} else {
			code |= 1 << i;
		}
		if (sigsetjmp(jb, 1) == 0) {
			for (size_t k = 0; k < tlen[i]; k++)
				p[k] = 0x5a;
		} else {
			code |= 8 << i;
		}
	}
	if (sigsetjmp(jb, 1) == 0) {
		if (child_heap())
			code |= 64;
	} else {
		code |= 64;
	}
	return code;
}

static void check_child(const char *how, pid_t pid, int backend_secret)
{
	int st;

	TL_CHECK(pid >= 0, "%s: %s", how, strerror(errno));
	while (waitpid(pid, &st, 0) < 0)
		TL_CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
	for (int i = 0; i < NT; i++)
		TL_CHECK(tl_check(target[i], tlen[i], 200 + (uint64_t)i),
			 "%s: a child without fork handlers wrote the parent's secret %d (%zu bytes); child %s", how, i,
			 tlen[i], tl_status_str(st));
	TL_CHECK(WIFEXITED(st), "%s: child %s", how, tl_status_str(st));
	int code = WEXITSTATUS(st);
	TL_CHECK(!(code & 64), "%s: child exit %#x: its own heap did not work", how, code);
	if (backend_secret)
		TL_CHECK(code == 63, "%s: child exit %#x: expected every read and write of an inherited secret to fault (0x3f)",
			 how, code);
	printf("ok: %s: child code %#x, parent's secrets intact\n", how, code);
}

int main(void)
{
	int backend = secretmem_default_backend(), secret = backend == SECRETMEM_BACKEND_SECRET;

	printf("backend: %s\n", secretmem_backend_name(backend));
	if (getenv("SECRETMEM_TEST_REQUIRE_KERNEL") && strcmp(getenv("SECRETMEM_TEST_REQUIRE_KERNEL"), "1") == 0 &&
	    !tl_under_valgrind())
		tl_need_secretmem();
	struct secretmem_region *r = secretmem_region_create(8192, 0);
	TL_CHECK(r, "region_create: %s", strerror(errno));
	tlen[0] = 48;
	tlen[1] = 70000;
	tlen[2] = 8192;
	target[0] = secretmem_malloc(tlen[0]);
	target[1] = secretmem_malloc(tlen[1]);
	target[2] = secretmem_region_data(r);
	TL_CHECK(target[0] && target[1], "malloc: %s", strerror(errno));
	for (int i = 0; i < NT; i++)
		tl_fill(target[i], tlen[i], 200 + (uint64_t)i);

	for (int policy = SECRETMEM_FORK_COPY; policy <= SECRETMEM_FORK_DROP; policy++) {
		static const char *const name[] = { "copy", "share", "drop" };
		char how[64];
		TL_CHECK(secretmem_set_option(SECRETMEM_OPT_FORK, policy) == 0, "set_option");
		fflush(stdout);
		fflush(stderr);
		snprintf(how, sizeof(how), "_Fork() under %s", name[policy]);
		pid_t pid = _Fork();
		if (pid == 0)
			_exit(raw_child());
		check_child(how, pid, secret);
		snprintf(how, sizeof(how), "clone(SIGCHLD) under %s", name[policy]);
		pid = (pid_t)syscall(SYS_clone, (unsigned long)SIGCHLD, NULL, NULL, NULL, NULL);
		if (pid == 0)
			_exit(raw_child());
		check_child(how, pid, secret);
	}
	secretmem_free(target[0]);
	secretmem_free(target[1]);
	TL_CHECK(secretmem_region_destroy(r) == 0, "region_destroy");
	return TL_PASS;
}
