/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_drop - fork policy "drop": the child has no secret mappings
 * (touching an old secret is SIGSEGV), its allocator starts empty (malloc
 * works), and freeing or reallocating an old pointer is fatal with the exact
 * message.  The parent's secrets are untouched.  Set through the API, and
 * through SECRETMEM_FORK=drop in a fresh process.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define FOREIGN "secretmem: fatal: invalid pointer (not allocated by secretmem)"

static unsigned char *s, *big;

static int touch(void *arg)
{
	volatile unsigned char *p = arg;

	tl_no_core();
	tl_signal_default(SIGSEGV);
	tl_signal_default(SIGBUS);
	unsigned char v = *p;
	printf("read %#x from a dropped secret at %p\n", v, arg);
	return 3;
}

static void expect_segv(unsigned char *p, const char *what)
{
	static char out[4096];
	int st = tl_run_child(touch, p, out, sizeof(out));

	TL_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "drop: touching %s in the child: expected SIGSEGV, got %s\n%s",
		 what, tl_status_str(st), out);
}

/* The child's heap starts empty and works; then free(old) is fatal. */
static int fresh_heap_then_free_old(void *arg)
{
	struct secretmem_stats st;
	(void)arg;

	if (secretmem_owns(s) || secretmem_owns(big)) {
		printf("owns(old secret) = 1 in the child\n");
		return 4;
	}
	if (secretmem_stats(&st) || st.live_allocations || st.bytes_in_use) {
		printf("child heap not empty: %zu live, %zu bytes\n", st.live_allocations, st.bytes_in_use);
		return 5;
	}
	unsigned char *q = secretmem_malloc(32), *r = secretmem_malloc(70000);
	if (!q || !r) {
		printf("malloc in the child: %s\n", strerror(errno));
		return 6;
	}
	for (int i = 0; i < 32; i++)
		if (q[i]) {
			printf("new block not zero\n");
			return 7;
		}
	tl_fill(q, 32, 9);
	tl_fill(r, 70000, 10);
	if (!tl_check(q, 32, 9) || !tl_check(r, 70000, 10) || secretmem_owns(q) != 1 || secretmem_stats(&st) ||
	    st.live_allocations != 2) {
		printf("child heap does not work\n");
		return 8;
	}
	secretmem_free(q);
	secretmem_free(r);
	secretmem_free(arg ? (void *)big : (void *)s); /* fatal */
	printf("free(old secret) returned\n");
	return 9;
}

static int realloc_old(void *arg)
{
	(void)arg;
	void *q = secretmem_realloc(s, 64); /* fatal */
	printf("realloc(old secret) returned %p\n", q);
	return 9;
}

static void drop_checks(const char *label)
{
	s = secretmem_malloc(32);
	big = secretmem_malloc(50000);
	TL_CHECK(s && big, "malloc: %s", strerror(errno));
	tl_fill(s, 32, 1);
	tl_fill(big, 50000, 2);

	expect_segv(s, "a 32-byte secret");
	expect_segv(big, "a large secret");
	expect_segv(big + 49999, "the end of a large secret");
	tl_expect_fatal("drop: free(old small secret) in the child", fresh_heap_then_free_old, NULL, FOREIGN);
	tl_expect_fatal("drop: free(old large secret) in the child", fresh_heap_then_free_old, &big, FOREIGN);
	tl_expect_fatal("drop: realloc(old secret) in the child", realloc_old, NULL, FOREIGN);

	TL_CHECK(tl_check(s, 32, 1) && tl_check(big, 50000, 2), "%s: parent's secrets changed", label);
	void *more = secretmem_malloc(32);
	TL_CHECK(more && secretmem_owns(s) && secretmem_owns(big), "%s: parent heap after the children", label);
	secretmem_free(more);
	secretmem_free(s);
	secretmem_free(big);
	printf("ok: %s\n", label);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "env") == 0) {
		TL_CHECK(secretmem_get_option(SECRETMEM_OPT_FORK) == SECRETMEM_FORK_DROP,
			 "SECRETMEM_FORK=drop: policy %ld", secretmem_get_option(SECRETMEM_OPT_FORK));
		drop_checks("drop through SECRETMEM_FORK=drop");
		return 0;
	}
	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_FORK, SECRETMEM_FORK_DROP) == 0, "set_option(FORK, drop)");
	drop_checks("drop through the API");

	static char out[16384];
	const char *env[] = { "SECRETMEM_FORK=drop", NULL };
	int st = tl_run_self(argv[0], "env", env, out, sizeof(out));
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "SECRETMEM_FORK=drop run: %s\n%s", tl_status_str(st), out);
	fputs(out, stdout);
	return TL_PASS;
}
