/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_lazy - in the mmap-time memory-lock regime, heap mode touches no
 * page of a large block that the program has not touched: each faults at
 * its first touch, as glibc's do.  Run as root and as uid 65534 under
 * `ulimit -l 8192`, with a plain run as the control of the first case.
 *
 *  one:    malloc(1 MiB), one byte written: at most 3 page faults, at most 2
 *          of the block's pages hold memory (mincore), and it is secret.
 *  reuse:  3 pages of a 1 MiB block written, freed, allocated again: the
 *          block is all zero, its 3 pages were zeroed and the other 253 were
 *          not faulted in by the free or by the reuse check; calloc the same.
 *  fork:   3 pages of a 1 MiB block written and a 4th written and cleared
 *          again, fork(): the child reads the 3 and zeros elsewhere, and
 *          holds 3 pages of it (the copy skips untouched and all-zero
 *          pages); the parent's untouched pages are still not faulted in.
 *          A 256 KiB block written whole and freed before the fork: the
 *          child's free of its pages (the fork handler zeroes free runs)
 *          faults none of them in.
 *  slabs:  1,024 blocks of 3,000 bytes written, 3 of every 4 freed (their
 *          pages zeroed, so half of the pages are all zero), fork(): the
 *          child holds no more pages of them than the live blocks cover,
 *          and reads every live block back.
 *  shrink: realloc of a 1 MiB block to 600 KiB in place keeps the bytes and
 *          faults in none of the tail it zeroes.
 *  grow:   realloc of a 600 KiB block with one byte written to 700 KiB moves
 *          it: the new block holds at most 2 pages, the byte kept.
 *  big:    a 512 KiB block aligned to 64 KiB (a region of its own, not a
 *          run): the same as reuse.
 *  uaf:    a write after free into a page the free left untouched is found
 *          when the block is handed out again (abort, fixed message).
 *  limit:  with SECRETMEM_REQUIRE=1, 256 KiB blocks, every byte written,
 *          until malloc returns NULL: ENOMEM, never SIGBUS (the mmap took
 *          the memory-lock charge of every page it may fault later).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heaprig.h"
#include "internal.h"
#include "tlib.h"

#define LIMIT ((size_t)8 << 20)
#define MIB ((size_t)1 << 20)

static size_t ps;

static long faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt + ru.ru_majflt;
}

/* Pages of [p, p+len) that hold memory. */
static size_t resident(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(ps - 1), e = (uintptr_t)p + len;
	size_t n = (e - a + ps - 1) / ps, count = 0;
	unsigned char *vec = malloc(n);

	TL_CHECK(vec, "malloc");
	TL_CHECK(mincore((void *)a, n * ps, vec) == 0, "mincore: %s", strerror(errno));
	for (size_t i = 0; i < n; i++)
		count += vec[i] & 1;
	free(vec);
	return count;
}

/* The three pages a case writes: the first, one in the middle, the last
 * (volatile: stores into a block about to be freed are not dead here). */
static void write3(volatile unsigned char *p, size_t len, unsigned char v)
{
	p[0] = v;
	p[len / 2] = v;
	p[len - 1] = v;
}

static int zero_all(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

static int case_one(void)
{
	unsigned char *warm = malloc(64); /* the allocator's start-up */
	free(warm);
	long f0 = faults();
	unsigned char *p = malloc(MIB);
	TL_CHECK(p, "malloc: %s", strerror(errno));
	p[0] = 1;
	long f1 = faults();
	size_t res = resident(p, MIB);
	printf("one: malloc(1 MiB) + 1 byte: %ld faults, %zu pages resident, %s\n", f1 - f0, res,
	       hr_where(p) == 's' ? "secret" : "not secret");
	TL_CHECK(f1 - f0 <= 3, "%ld page faults for malloc(1 MiB) and one byte", f1 - f0);
	TL_CHECK(res <= 2, "%zu pages of the block hold memory", res);
	if (hr_active())
		TL_CHECK(hr_where(p) == 's', "the block is not in secret memory");
	free(p);
	return 0;
}

static int case_reuse(void)
{
	unsigned char *p = malloc(MIB);
	TL_CHECK(p, "malloc: %s", strerror(errno));
	volatile uintptr_t pa = (uintptr_t)p;
	write3(p, MIB, 0xa5);
	free(p);
	size_t after_free = resident((void *)pa, MIB);
	unsigned char *q = malloc(MIB);
	TL_CHECK(q, "malloc: %s", strerror(errno));
	size_t after_reuse = resident(q, MIB);
	int same = (uintptr_t)q == pa, zero = zero_all(q, MIB);
	printf("reuse: same block %d, pages resident after free %zu, after reuse %zu, all zero %d\n", same,
	       after_free, after_reuse, zero);
	TL_CHECK(same, "the freed block was not handed out again");
	TL_CHECK(after_free == 3 && after_reuse == 3, "free/reuse faulted pages in: %zu, %zu", after_free,
		 after_reuse);
	TL_CHECK(zero, "a reused block is not all zero");
	write3(q, MIB, 0x5a);
	free(q);
	unsigned char *c = calloc(1, MIB);
	TL_CHECK(c, "calloc: %s", strerror(errno));
	printf("reuse: calloc after free: same block %d, all zero %d\n", c == q, zero_all(c, MIB));
	TL_CHECK(zero_all(c, MIB), "calloc returned a non-zero byte");
	free(c);
	return 0;
}

static int case_fork(void)
{
	unsigned char *p = malloc(MIB);
	TL_CHECK(p, "malloc: %s", strerror(errno));
	write3(p, MIB, 0x3c);
	volatile unsigned char *z = p + MIB / 4;
	*z = 1;
	*z = 0; /* a page that holds memory, all zero */
	unsigned char *f = malloc(256 << 10);
	TL_CHECK(f, "malloc: %s", strerror(errno));
	for (size_t o = 0; o < (256 << 10); o += 512)
		((volatile unsigned char *)f)[o] = 0x5d; /* volatile: not dead before free */
	volatile uintptr_t fa = (uintptr_t)f;
	free(f);
	fflush(stdout);
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		size_t freed = resident((void *)fa, 256 << 10);
		size_t res = resident(p, MIB);
		int ok = p[0] == 0x3c && p[MIB / 2] == 0x3c && p[MIB - 1] == 0x3c;
		p[0] = p[MIB / 2] = p[MIB - 1] = 0;
		int rest = zero_all(p, MIB);
		printf("fork: child holds %zu pages of the block, written bytes kept %d, zero elsewhere %d; "
		       "%zu pages of the freed block\n", res, ok, rest, freed);
		fflush(stdout);
		_exit(res == 3 && ok && rest && freed == 0 ? 0 : 1);
	}
	int st;
	TL_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	size_t res = resident(p, MIB);
	printf("fork: child %s; the parent holds %zu pages of the block\n", tl_status_str(st), res);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %s", tl_status_str(st));
	TL_CHECK(res == 4, "fork faulted in %zu pages of the parent's block (4 were)", res);
	free(p);
	return 0;
}

static int cmp_page(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return (x > y) - (x < y);
}

/* The distinct pages blocks b[0], b[step], ... of sz bytes cover, into pg
 * (sorted); their number. */
static size_t pages_of(unsigned char *const *b, int n, int step, size_t sz, uintptr_t *pg)
{
	size_t k = 0;

	for (int i = 0; i < n; i += step)
		for (uintptr_t a = (uintptr_t)b[i] & ~(uintptr_t)(ps - 1); a < (uintptr_t)b[i] + sz; a += ps)
			pg[k++] = a;
	qsort(pg, k, sizeof(*pg), cmp_page);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (!u || pg[u - 1] != pg[i])
			pg[u++] = pg[i];
	return u;
}

static size_t resident_pages(const uintptr_t *pg, size_t n)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++)
		count += resident((const void *)pg[i], 1);
	return count;
}

static int case_slabs(void)
{
	enum { N = 1024, SZ = 3000 };
	static unsigned char *b[N];
	static uintptr_t all[2 * N + 2], live[2 * N + 2];

	for (int i = 0; i < N; i++) {
		b[i] = malloc(SZ);
		TL_CHECK(b[i], "malloc: %s", strerror(errno));
		for (int k = 0; k < SZ; k += 64)
			((volatile unsigned char *)b[i])[k] = (unsigned char)(i | 1);
	}
	size_t nall = pages_of(b, N, 1, SZ, all), nlive = pages_of(b, N, 4, SZ, live);
	for (int i = 0; i < N; i++)
		if (i % 4)
			free(b[i]);
	size_t parent = resident_pages(all, nall);
	fflush(stdout);
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		size_t child = resident_pages(all, nall);
		int ok = 1;
		for (int i = 0; i < N; i += 4)
			for (int k = 0; k < SZ; k += 64)
				ok &= b[i][k] == (unsigned char)(i | 1);
		printf("slabs: parent holds %zu of their %zu pages, the child %zu, the live blocks cover %zu; live "
		       "blocks read back %d\n", parent, nall, child, nlive, ok);
		fflush(stdout);
		_exit(ok && child <= nlive && child < parent ? 0 : 1);
	}
	int st;
	TL_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %s", tl_status_str(st));
	return 0;
}

static int case_shrink(void)
{
	unsigned char *p = malloc(MIB);
	TL_CHECK(p, "malloc: %s", strerror(errno));
	volatile uintptr_t pa = (uintptr_t)p;
	write3(p, 600 << 10, 0x77);
	unsigned char *q = realloc(p, 600 << 10);
	TL_CHECK(q, "realloc: %s", strerror(errno));
	size_t res = resident(q, MIB);
	printf("shrink: in place %d, bytes kept %d, pages resident %zu\n", (uintptr_t)q == pa,
	       q[0] == 0x77 && q[300 << 10] == 0x77 && q[(600 << 10) - 1] == 0x77, res);
	TL_CHECK((uintptr_t)q == pa, "realloc to 600 KiB moved the block");
	TL_CHECK(q[0] == 0x77 && q[300 << 10] == 0x77 && q[(600 << 10) - 1] == 0x77, "bytes lost");
	TL_CHECK(res <= 4, "%zu pages resident after the shrink", res);
	free(q);
	return 0;
}

static int case_grow(void)
{
	unsigned char *p = malloc(600 << 10);
	TL_CHECK(p, "malloc: %s", strerror(errno));
	p[1000] = 0x42;
	volatile uintptr_t pa = (uintptr_t)p;
	unsigned char *q = realloc(p, 700 << 10);
	TL_CHECK(q, "realloc: %s", strerror(errno));
	size_t res = resident(q, 700 << 10);
	printf("grow: moved %d, byte kept %d, pages resident %zu\n", (uintptr_t)q != pa, q[1000] == 0x42, res);
	TL_CHECK((uintptr_t)q != pa && q[1000] == 0x42, "realloc lost the byte or did not move");
	TL_CHECK(res <= 2, "the moved block holds %zu pages", res);
	free(q);
	return 0;
}

static int case_big(void)
{
	size_t len = 512 << 10, align = 64 << 10;
	unsigned char *p = aligned_alloc(align, len);
	TL_CHECK(p, "aligned_alloc: %s", strerror(errno));
	volatile uintptr_t pa = (uintptr_t)p;
	write3(p, len, 0x11);
	size_t res = resident(p, len);
	free(p);
	size_t after_free = resident((void *)pa, len);
	unsigned char *q = aligned_alloc(align, len);
	TL_CHECK(q, "aligned_alloc: %s", strerror(errno));
	size_t after_reuse = resident(q, len);
	int zero = zero_all(q, len);
	printf("big: 512 KiB block aligned to 64 KiB %s, 3 pages written: %zu resident, after free %zu, after reuse %zu "
	       "(same block %d), all zero %d\n",
	       hr_where(q) == 's' ? "secret" : "not secret", res, after_free, after_reuse, (uintptr_t)q == pa, zero);
	if (hr_active())
		TL_CHECK(hr_where(q) == 's', "the block is not in secret memory");
	TL_CHECK(res == 3 && after_free == 3, "pages resident: %zu, after free %zu", res, after_free);
	TL_CHECK((uintptr_t)q != pa || after_reuse == 3, "the reuse faulted pages in: %zu", after_reuse);
	TL_CHECK(zero, "a reused block is not all zero");
	free(q);
	return 0;
}

static int case_uaf(void)
{
	unsigned char *p = malloc(MIB);
	TL_CHECK(p, "malloc: %s", strerror(errno));
	p[0] = 1;
	volatile uintptr_t pa = (uintptr_t)p;
	free(p);
	((unsigned char *)pa)[MIB / 2] = 0x42; /* a page the free never touched */
	unsigned char *q = malloc(MIB);
	printf("uaf: not found, same block %d\n", (uintptr_t)q == pa);
	return 0;
}

static int case_limit(void)
{
	size_t blk = 256 << 10;
	int n = 0;
	void *last;

	tl_signal_default(SIGBUS);
	tl_no_core();
	for (;;) {
		errno = 0;
		last = malloc(blk);
		if (!last)
			break;
		memset(last, 0x6b, blk);
		n++;
	}
	int err = errno;
	printf("limit: %d blocks of 256 KiB written, then NULL with %s\n", n, strerror(err));
	TL_CHECK(err == ENOMEM && n >= 8, "%d blocks, errno %d", n, err);
	return 0;
}

static int run_case(const char *name)
{
	if (!strcmp(name, "one"))
		return case_one();
	if (!strcmp(name, "reuse"))
		return case_reuse();
	if (!strcmp(name, "fork"))
		return case_fork();
	if (!strcmp(name, "shrink"))
		return case_shrink();
	if (!strcmp(name, "big"))
		return case_big();
	if (!strcmp(name, "grow"))
		return case_grow();
	if (!strcmp(name, "slabs"))
		return case_slabs();
	if (!strcmp(name, "uaf"))
		return case_uaf();
	if (!strcmp(name, "limit"))
		return case_limit();
	return 2;
}

int main(int argc, char **argv)
{
	ps = (size_t)sysconf(_SC_PAGESIZE);
	if (argc > 1)
		return run_case(argv[1]);
	tl_need_secretmem();
	hr_module();
	if (sm_fault_regime() != SM_REGIME_MMAP)
		tl_skip("the kernel does not charge secret memory at mmap time (or the probe gave no answer): "
			"new pages are faulted in by the library here, from the kernel side");
	static const char *const cases[] = { "one", "reuse", "fork", "slabs", "shrink", "grow", "big", "uaf", "limit" };
	static const char *const require[] = { "SECRETMEM_REQUIRE=1", NULL };
	static char out[1 << 14];

	int st = hr_run(argv[0], "one", 0, NULL, out, sizeof(out));
	printf("== one, plain (glibc): %s\n%s", tl_status_str(st), out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "plain: the control fails");
	for (int user = 0; user < 2; user++) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			const char *c = cases[i];
			int limit = !strcmp(c, "limit");
			if (limit && !user)
				continue; /* root is exempt from the limit */
			st = hr_run_user(argv[0], c, 1, limit ? require : NULL, user ? LIMIT : 0, out, sizeof(out));
			if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
				printf("%s", out);
				tl_skip("an ordinary user cannot run the tests here");
			}
			printf("== %s, heap mode, %s: %s\n%s", c, user ? "uid 65534 (ulimit -l 8192)" : "root",
			       tl_status_str(st), out);
			if (!strcmp(c, "uaf")) {
				TL_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT &&
						 strstr(out, "freed block was modified (write after free)"),
					 "uaf: the write after free was not found");
				continue;
			}
			TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s (%s)", c, user ? "user" : "root");
		}
	}
	printf("ok: large blocks fault at the program's first touch; free, reuse, realloc and fork touch "
	       "no other page\n");
	return TL_PASS;
}
