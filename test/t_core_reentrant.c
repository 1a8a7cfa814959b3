/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_reentrant - below the public API the library calls no malloc (so
 * stdio's fopen is out too) and reaches no cancellation point (issue 10,
 * design rules; a malloc built on the library needs both).
 *
 *  - malloc: this program replaces malloc/calloc/realloc/free (the static
 *    library links against them); while a flag is set, any call aborts with
 *    a message.  With the flag set from the very first library call on:
 *    the probe, regions, small and large blocks, realloc, strdup, stats,
 *    trim - and the same in a child under a seccomp filter installed after
 *    first use (the child-call path);
 *  - cancellation: the same calls in a thread whose deferred cancellation is
 *    already pending; any cancellation point would end it there.
 * Part one is left out in sanitizer builds (their runtimes own malloc).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

static volatile int forbid;

#ifndef TL_SANITIZED
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void __libc_free(void *);

static void caught(const char *what)
{
	static const char msg[] = "t_core_reentrant: the library called ";
	if (write(2, msg, sizeof(msg) - 1) < 0 || write(2, what, strlen(what)) < 0 || write(2, "\n", 1) < 0)
		_exit(5);
	_exit(6);
}

void *malloc(size_t n)
{
	if (forbid)
		caught("malloc");
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	if (forbid)
		caught("calloc");
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	if (forbid)
		caught("realloc");
	return __libc_realloc(p, n);
}

void free(void *p)
{
	if (forbid && p)
		caught("free");
	__libc_free(p);
}
#endif

/* Every path below the public API that a program can reach. */
static int exercise(void)
{
	int rc = secretmem_supported();
	if (rc != 0 && rc != -ENOSYS && rc != -EPERM)
		return 10;
	struct secretmem_region *r = secretmem_region_create(8192, 0);
	if (!r)
		return 11;
	if (secretmem_region_protect(r, SECRETMEM_READONLY) || secretmem_region_destroy(r))
		return 12;
	void *small[64];
	for (int i = 0; i < 64; i++)
		if (!(small[i] = secretmem_malloc(1000)))
			return 13;
	void *large = secretmem_malloc(200000);
	if (!large)
		return 14;
	large = secretmem_realloc(large, 400000);
	char *s = secretmem_strdup("a secret");
	if (!large || !s)
		return 15;
	struct secretmem_stats st;
	if (secretmem_stats(&st))
		return 16;
	secretmem_free(s);
	secretmem_free(large);
	for (int i = 0; i < 64; i++)
		secretmem_free(small[i]);
	if (secretmem_trim() < 0)
		return 17;
	(void)secretmem_default_backend();
	return 0;
}

static int no_malloc(void *arg)
{
	int filter = arg != NULL;

	forbid = 1;
	int rc = exercise();
	if (rc)
		return rc;
	if (filter) {
		forbid = 0;
		if (tl_seccomp_block(SYS_memfd_secret, 0) != 0) /* kills */
			return 20;
		forbid = 1;
		rc = exercise();
		if (rc)
			return rc + 20;
	}
	forbid = 0;
	return 0;
}

static volatile int reached;

static void *cancelled(void *arg)
{
	int filter = arg != NULL;

	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
	pthread_cancel(pthread_self()); /* pending from here on */
	int rc = exercise();
	if (!rc && filter) {
		/* filter installation is the test's, done by the main thread */
		rc = 0;
	}
	reached = rc ? -rc : 1;
	return NULL;
}

static int no_cancel(void *arg)
{
	pthread_t t;

	reached = 0;
	if (arg) {
		/* first use, then a filter that kills: the child-call path */
		if (exercise())
			return 30;
		if (tl_seccomp_block(SYS_memfd_secret, 0) != 0)
			return 31;
	}
	if (pthread_create(&t, NULL, cancelled, NULL))
		return 32;
	void *res;
	pthread_join(t, &res);
	if (res == PTHREAD_CANCELED && !reached) {
		printf("a cancellation point was reached inside the library\n");
		return 33;
	}
	if (reached != 1) {
		printf("exercise failed: %d\n", -reached);
		return 34;
	}
	return 0;
}

int main(void)
{
	static char out[8192];
	struct {
		const char *name;
		int (*fn)(void *);
		void *arg;
		int skip_sanitized;
	} cases[] = {
		{ "no malloc from the first call", no_malloc, NULL, 1 },
		{ "no malloc under a filter installed after first use", no_malloc, (void *)1, 1 },
		{ "no cancellation point", no_cancel, NULL, 0 },
		{ "no cancellation point under a filter installed after first use", no_cancel, (void *)1, 0 },
	};

	if (tl_under_valgrind())
		tl_skip("valgrind replaces malloc and answers memfd_secret itself");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
#ifdef TL_SANITIZED
		if (cases[i].skip_sanitized) {
			printf("%s: left out in a sanitizer build\n", cases[i].name);
			continue;
		}
#endif
		int st = tl_run_child(cases[i].fn, cases[i].arg, out, sizeof(out));
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s\n%s", cases[i].name, tl_status_str(st), out);
		printf("%s: ok\n", cases[i].name);
	}
	return TL_PASS;
}
