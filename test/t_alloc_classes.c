/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_classes - size classes: every class boundary, the large-block
 * rule, alignment, worst internal waste, malloc(0), zero-filled blocks.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

static const size_t classes[] = {
	16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256,
	320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048, 2560, 3072,
	3584, 4096, 5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384,
};
#define NCLASSES (sizeof(classes) / sizeof(classes[0]))
#define LARGEST 16384

/* The usable size the contract promises for a request. */
static size_t expected_usable(size_t req)
{
	if (req == 0)
		return 16;
	for (size_t i = 0; i < NCLASSES; i++)
		if (req <= classes[i])
			return classes[i];
	return (req + 15) & ~(size_t)15;
}

/* Largest power of two dividing the class, capped at 16. */
static size_t expected_align(size_t usable)
{
	size_t a = usable & -usable;
	return a > 16 ? 16 : a;
}

static int all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* Allocate req bytes and check usable size, alignment, zero fill. */
static unsigned char *check_alloc(size_t req)
{
	unsigned char *p = secretmem_malloc(req);

	TL_CHECK(p != NULL, "malloc(%zu) = NULL: %s", req, strerror(errno));
	size_t u = secretmem_usable_size(p), want = expected_usable(req);
	TL_CHECK(u == want, "malloc(%zu): usable_size %zu, expected %zu", req, u, want);
	size_t al = expected_align(u);
	TL_CHECK((uintptr_t)p % al == 0, "malloc(%zu) = %p: not aligned to %zu", req, (void *)p, al);
	TL_CHECK(secretmem_owns(p) == 1, "owns(malloc(%zu)) != 1", req);
	TL_CHECK(all_zero(p, u), "malloc(%zu): block not zero-filled", req);
	return p;
}

struct touch {
	unsigned char *p;
	long off;
};

static int touch_child(void *arg)
{
	struct touch *t = arg;
	volatile unsigned char *q = t->p + t->off;

	tl_no_core();
	tl_signal_default(SIGSEGV);
	tl_signal_default(SIGBUS);
	*q = 1;
	return 3; /* reached only if the access did not fault */
}

static void expect_segv(unsigned char *p, long off, const char *what)
{
	struct touch t = { p, off };
	int st = tl_run_child(touch_child, &t, NULL, 0);

	TL_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "%s: write at %p%+ld: expected SIGSEGV, got %s",
		 what, (void *)p, off, tl_status_str(st));
}

int main(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);

	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));

	/* every class boundary: c fits exactly, c + 1 goes to the next class */
	for (size_t i = 0; i < NCLASSES; i++) {
		size_t c = classes[i];
		unsigned char *p = check_alloc(c);
		unsigned char *q = check_alloc(c + 1);
		size_t want = i + 1 < NCLASSES ? classes[i + 1] : ((c + 1 + 15) & ~(size_t)15);
		TL_CHECK(secretmem_usable_size(q) == want, "malloc(%zu): usable %zu, expected %zu", c + 1,
			 secretmem_usable_size(q), want);
		TL_CHECK(p != q, "two live blocks at the same address");
		/* the two blocks do not overlap: fill both, check both */
		tl_fill(p, c, c);
		tl_fill(q, c + 1, c + 1);
		TL_CHECK(tl_check(p, c, c) && tl_check(q, c + 1, c + 1), "class %zu: blocks overlap", c);
		secretmem_free(p);
		secretmem_free(q);
		/* the freed (dirty) block was zeroed: the next block of the class
		 * (LIFO reuse: most likely the same slot) is all zero */
		unsigned char *r = check_alloc(c);
		secretmem_free(r);
	}
	printf("ok: %zu class boundaries\n", NCLASSES);

	/* worst internal waste <= 25 % for every request 16..32768 */
	size_t worst_req = 0;
	double worst = 0;
	for (size_t req = 16; req <= 2 * LARGEST; req++) {
		void *p = secretmem_malloc(req);
		TL_CHECK(p != NULL, "malloc(%zu) = NULL: %s", req, strerror(errno));
		size_t u = secretmem_usable_size(p);
		TL_CHECK(u >= req, "malloc(%zu): usable %zu < request", req, u);
		TL_CHECK(u == expected_usable(req), "malloc(%zu): usable %zu, expected %zu", req, u,
			 expected_usable(req));
		TL_CHECK(4 * (u - req) <= u, "malloc(%zu): usable %zu wastes more than 25%%", req, u);
		double w = (double)(u - req) / (double)u;
		if (w > worst) {
			worst = w;
			worst_req = req;
		}
		secretmem_free(p);
	}
	printf("ok: worst internal waste %.1f%% (request %zu)\n", 100 * worst, worst_req);

	/* malloc(0): unique, non-NULL, minimal */
	void *z1 = secretmem_malloc(0), *z2 = secretmem_malloc(0);
	TL_CHECK(z1 && z2, "malloc(0) = NULL: %s", strerror(errno));
	TL_CHECK(z1 != z2, "malloc(0) twice gave the same block %p", z1);
	TL_CHECK(secretmem_usable_size(z1) == 16 && secretmem_usable_size(z2) == 16,
		 "malloc(0): usable %zu, expected 16", secretmem_usable_size(z1));
	TL_CHECK(secretmem_owns(z1) && secretmem_owns(z2), "malloc(0) block not owned");
	secretmem_free(z1);
	secretmem_free(z2);
	printf("ok: malloc(0)\n");

	/* large blocks: usable = round_up(size, 16), the end touches the
	 * upper guard page, page-multiple sizes also touch the lower one */
	static const size_t large[] = { 16385, 20000, 65536, 100001, 1 << 20 };
	for (size_t i = 0; i < sizeof(large) / sizeof(large[0]); i++) {
		size_t n = large[i];
		unsigned char *p = check_alloc(n);
		size_t u = secretmem_usable_size(p);
		TL_CHECK(((uintptr_t)p + u) % ps == 0, "large %zu at %p: end %p is not at a page boundary", n,
			 (void *)p, (void *)(p + u));
		memset(p, 0xa5, u);
		expect_segv(p, (long)u, "large block, one past the end");
		if (n % ps == 0)
			expect_segv(p, -1, "page-multiple large block, one before the start");
		secretmem_free(p);
		/* a freed run (cached for reuse) comes back zeroed */
		p = check_alloc(n);
		secretmem_free(p);
	}
	printf("ok: large blocks end at the guard page\n");

	/* many live blocks of mixed classes never overlap */
	enum { N = 3000 };
	static unsigned char *blk[N];
	static size_t len[N];
	for (size_t i = 0; i < N; i++) {
		len[i] = 1 + (i * 7919) % (i % 50 == 0 ? 30000 : 600);
		blk[i] = check_alloc(len[i]);
		tl_fill(blk[i], len[i], i);
	}
	for (size_t i = 0; i < N; i++)
		TL_CHECK(tl_check(blk[i], len[i], i), "block %zu (%zu bytes at %p) was overwritten", i, len[i],
			 (void *)blk[i]);
	for (size_t i = 0; i < N; i++)
		secretmem_free(blk[i]);
	printf("ok: %d mixed live blocks intact\n", N);
	return TL_PASS;
}
