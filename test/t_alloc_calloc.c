/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_calloc - calloc overflow and zeroing, impossible sizes,
 * strdup/strndup.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

static int all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static void expect_enomem(void *p, const char *what)
{
	int e = errno;

	TL_CHECK(p == NULL, "%s returned %p, expected NULL", what, p);
	TL_CHECK(e == ENOMEM, "%s: errno %d (%s), expected ENOMEM", what, e, strerror(e));
}

static int impossible(void *arg)
{
	(void)arg;
	tl_signal_default(SIGALRM);
	alarm(10);
	errno = 0;
	expect_enomem(secretmem_malloc(SIZE_MAX), "malloc(SIZE_MAX)");
	errno = 0;
	expect_enomem(secretmem_malloc(SIZE_MAX - 4096), "malloc(SIZE_MAX - 4096)");
	errno = 0;
	expect_enomem(secretmem_malloc(SIZE_MAX / 2 + 1), "malloc(SIZE_MAX/2 + 1)");
	errno = 0;
	expect_enomem(secretmem_malloc((size_t)1 << 46), "malloc(64 TiB)");
	return 0;
}

int main(void)
{
	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));

	/* calloc overflow */
	errno = 0;
	expect_enomem(secretmem_calloc(SIZE_MAX / 2 + 1, 2), "calloc(SIZE_MAX/2+1, 2)");
	errno = 0;
	expect_enomem(secretmem_calloc(2, SIZE_MAX / 2 + 1), "calloc(2, SIZE_MAX/2+1)");
	errno = 0;
	expect_enomem(secretmem_calloc(SIZE_MAX, SIZE_MAX), "calloc(SIZE_MAX, SIZE_MAX)");
	errno = 0;
	expect_enomem(secretmem_calloc((SIZE_MAX >> 16) + 1, 1 << 16), "calloc((SIZE_MAX>>16)+1, 65536)");
	printf("ok: calloc overflow -> NULL/ENOMEM\n");

	/* impossible sizes, in a child with a deadline: an allocator that
	 * tries to fault in 64 TiB would otherwise run until the test timeout */
	int st = tl_run_child(impossible, NULL, NULL, 0);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "impossible sizes: %s%s", tl_status_str(st),
		 WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? " (did not return within 10 s)" : "");
	printf("ok: impossible sizes -> NULL/ENOMEM\n");

	/* calloc zeroes, also when it reuses a dirty freed slot */
	for (size_t sz = 1; sz <= 40000; sz = sz * 3 + 1) {
		unsigned char *d = secretmem_malloc(sz * 4);
		TL_CHECK(d, "malloc(%zu): %s", sz * 4, strerror(errno));
		memset(d, 0xff, sz * 4);
		secretmem_free(d);
		unsigned char *c = secretmem_calloc(4, sz);
		TL_CHECK(c, "calloc(4, %zu): %s", sz, strerror(errno));
		TL_CHECK(secretmem_usable_size(c) >= 4 * sz, "calloc(4, %zu): usable %zu", sz,
			 secretmem_usable_size(c));
		TL_CHECK(all_zero(c, secretmem_usable_size(c)), "calloc(4, %zu) not zeroed", sz);
		secretmem_free(c);
	}
	void *c0 = secretmem_calloc(0, 8), *c1 = secretmem_calloc(8, 0);
	TL_CHECK(c0 && c1 && c0 != c1, "calloc with a zero count: %p %p (expected unique minimal blocks)", c0,
		 c1);
	secretmem_free(c0);
	secretmem_free(c1);
	printf("ok: calloc zeroes\n");

	/* strdup */
	const char *pw = "correct horse battery staple";
	char *s = secretmem_strdup(pw);
	TL_CHECK(s && strcmp(s, pw) == 0, "strdup: %s", s ? s : strerror(errno));
	TL_CHECK(s != pw && secretmem_owns(s) == 1, "strdup result not a secretmem block");
	TL_CHECK(secretmem_usable_size(s) >= strlen(pw) + 1, "strdup: block too small");
	secretmem_free(s);
	s = secretmem_strdup("");
	TL_CHECK(s && s[0] == '\0' && secretmem_owns(s), "strdup(\"\")");
	secretmem_free(s);
	/* a long one (large block) */
	static char longs[70001];
	memset(longs, 'k', sizeof(longs) - 1);
	s = secretmem_strdup(longs);
	TL_CHECK(s && strlen(s) == sizeof(longs) - 1 && memcmp(s, longs, sizeof(longs)) == 0, "strdup(70000 chars)");
	secretmem_free(s);

	/* strndup: truncation, shorter source, zero length */
	s = secretmem_strndup(pw, 7);
	TL_CHECK(s && strcmp(s, "correct") == 0, "strndup(pw, 7) = \"%s\"", s ? s : "(null)");
	TL_CHECK(secretmem_owns(s) && secretmem_usable_size(s) >= 8, "strndup block");
	secretmem_free(s);
	s = secretmem_strndup(pw, 1000);
	TL_CHECK(s && strcmp(s, pw) == 0, "strndup(pw, 1000)");
	TL_CHECK(secretmem_usable_size(s) < 1000, "strndup(pw, 1000) allocated %zu bytes for %zu",
		 secretmem_usable_size(s), strlen(pw) + 1);
	secretmem_free(s);
	s = secretmem_strndup(pw, 0);
	TL_CHECK(s && s[0] == '\0', "strndup(pw, 0)");
	secretmem_free(s);

	/* strndup reads at most n bytes: an unterminated source ending at an
	 * inaccessible page must not fault */
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *m = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	TL_CHECK(m != MAP_FAILED, "mmap: %s", strerror(errno));
	TL_CHECK(mprotect(m + ps, ps, PROT_NONE) == 0, "mprotect: %s", strerror(errno));
	char *edge = (char *)m + ps - 8;
	memcpy(edge, "ABCDEFGH", 8);
	s = secretmem_strndup(edge, 8);
	TL_CHECK(s && strcmp(s, "ABCDEFGH") == 0, "strndup(unterminated, 8)");
	secretmem_free(s);
	munmap(m, 2 * ps);
	printf("ok: strdup/strndup\n");
	return TL_PASS;
}
