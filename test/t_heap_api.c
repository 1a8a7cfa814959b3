/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_api - the malloc API of libsecretmem-heap.so, run in a copy of this
 * program under the module: every block in secret memory and 16-byte
 * aligned (sizes 0..20000, every class), calloc zeroed and its overflow,
 * realloc in place and moving (contents kept; a doubling buffer moves at
 * every second step: room to grow), realloc(p, 0), reallocarray
 * overflow, aligned_alloc / posix_memalign / memalign / valloc / pvalloc for
 * alignments 16 B .. 2 MiB and their EINVAL cases, pvalloc(0) one page,
 * usable size >= request, free of every aligned start, strdup in secret
 * memory, mallopt / malloc_trim / mallinfo2 answers, and the huge threshold
 * (a 2 MiB block is ordinary memory by default, secret with
 * SECRETMEM_HEAP_HUGE=0; an invalid value warns and keeps 1 MiB) counted in
 * the figures page; mallinfo; stdio's buffer in secret memory and zeroed
 * when fclose() frees it; errno zero when main() starts.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heaprig.h"
#include "tlib.h"

#define SECRET(p, what) TL_CHECK(hr_where(p) == 's', "%s: %p not in secret memory (%c)", what, (void *)(p), hr_where(p))
/* The same, but an ordinary user (no CAP_IPC_LOCK, a finite RLIMIT_MEMLOCK)
 * may have reached the limit with the large aligned blocks: then the block
 * is in ordinary memory and the module counted the refusal
 * (secretmem-heap(7): after one warning, blocks go to glibc). */
#define SECRET_OR_REFUSED(p, what)                                                                          \
	TL_CHECK(hr_where(p) == 's' || (limited() && hr_where(p) == 'o' && refusals() > 0),                    \
		 "%s: %p not in secret memory (%c)", what, (void *)(p), hr_where(p))
#define ALIGNED(p, a) TL_CHECK(((uintptr_t)(p) & ((a) - 1)) == 0, "%p not %zu-aligned", (void *)(p), (size_t)(a))

static volatile size_t big = SIZE_MAX; /* hidden from the compiler's size checks */

static int limited(void)
{
	struct rlimit rl;

	return geteuid() != 0 && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY;
}

static uint64_t refusals(void)
{
	struct sm_heap_stats st;

	return hr_stats(0, &st) == 0 ? st.refusals : 0;
}

static const char *argv0;

static int errno_at_main; /* C11 7.5: zero at program start, module or not */

static int child(const char *what)
{
	TL_CHECK(hr_active(), "the heap module is not active in the child");
	TL_CHECK(errno_at_main == 0, "errno is %d when main() starts", errno_at_main);
	for (size_t n = 0; n <= 20000; n += n < 300 ? 1 : 37) {
		unsigned char *p = malloc(n);
		TL_CHECK(p, "malloc(%zu)", n);
		ALIGNED(p, 16);
		TL_CHECK(malloc_usable_size(p) >= n, "usable %zu < %zu", malloc_usable_size(p), n);
		if (n % 97 == 0)
			SECRET(p, "malloc");
		memset(p, 0xa5, n);
		free(p);
	}
	/* calloc */
	unsigned char *c = calloc(1000, 3);
	TL_CHECK(c, "calloc");
	for (size_t i = 0; i < 3000; i++)
		TL_CHECK(c[i] == 0, "calloc not zeroed at %zu", i);
	SECRET(c, "calloc");
	free(c);
	errno = 0;
	TL_CHECK(!calloc(big / 2, 3) && errno == ENOMEM, "calloc overflow");
	/* realloc: in place when it fits, contents kept when it moves */
	char *r = malloc(100);
	tl_fill(r, 100, 7);
	char *r2 = realloc(r, 110);
	TL_CHECK(r2 == r, "realloc(100 -> 110) moved (same 16-aligned class)");
	for (size_t n = 200; n < 300000; n = n * 3) {
		r2 = realloc(r, n);
		TL_CHECK(r2 && tl_check(r2, 100, 7), "realloc to %zu lost the contents", n);
		ALIGNED(r2, 16);
		SECRET(r2, "realloc");
		r = r2;
	}
	r2 = realloc(r, 50);
	TL_CHECK(r2 && tl_check(r2, 50, 7), "realloc shrink");
	/* a buffer doubling from 16 B to 64 KiB moves at every second step
	 * only: a block that moves to grow gets room (secretmem_realloc(3)) */
	int moves = 0;
	char *d = malloc(16);
	TL_CHECK(d, "malloc(16)");
	memset(d, 1, 16);
	for (size_t n = 16; n < 65536; n *= 2) {
		char *e = realloc(d, 2 * n);
		TL_CHECK(e && e[0] == 1 && e[n - 1] == 1, "realloc(%zu) of a doubling buffer", 2 * n);
		TL_CHECK(malloc_usable_size(e) >= 2 * n, "usable %zu after realloc(%zu)", malloc_usable_size(e), 2 * n);
		moves += e != d;
		memset(e + n, 1, n);
		d = e;
	}
	SECRET(d, "doubled buffer");
	free(d);
	TL_CHECK(moves == 6, "a buffer doubling 16 B -> 64 KiB moved %d times in 12 steps, not 6", moves);
	errno = 0;
	TL_CHECK(realloc(r2, 0) == NULL, "realloc(p, 0) returns NULL (glibc)");
	r = realloc(NULL, 10);
	TL_CHECK(r && hr_where(r) == 's', "realloc(NULL)");
	errno = 0;
	TL_CHECK(!reallocarray(r, big / 2, 3) && errno == ENOMEM, "reallocarray overflow");
	free(r);
	/* alignment family; sticky_clear: a secret block whose free after the loop
	 * sends new blocks back to secret memory if the limit refused some
	 * (secretmem-heap(7)) */
	char *sticky_clear = malloc(32);
	TL_CHECK(sticky_clear, "malloc(32)");
	SECRET(sticky_clear, "malloc(32)");
	for (size_t a = 16; a <= ((size_t)2 << 20); a <<= 1) {
		size_t sizes[] = { 1, a / 2 + 1, a, 3 * a + 5, 20000 };
		for (size_t k = 0; k < 5; k++) {
			void *p = aligned_alloc(a, sizes[k]), *q = memalign(a, sizes[k]), *v = NULL;
			TL_CHECK(p && q, "aligned_alloc/memalign(%zu, %zu)", a, sizes[k]);
			TL_CHECK(posix_memalign(&v, a, sizes[k]) == 0 && v, "posix_memalign(%zu)", a);
			ALIGNED(p, a);
			ALIGNED(q, a);
			ALIGNED(v, a);
			if (sizes[k] <= (1u << 20) || strcmp(what, "huge-none") == 0) {
				SECRET_OR_REFUSED(p, "aligned_alloc");
				SECRET_OR_REFUSED(v, "posix_memalign");
			}
			TL_CHECK(malloc_usable_size(p) >= sizes[k] && malloc_usable_size(v) >= sizes[k], "usable");
			memset(p, 1, sizes[k]);
			memset(q, 2, sizes[k]);
			memset(v, 3, sizes[k]);
			free(p);
			free(q);
			free(v);
		}
	}
	free(sticky_clear);
	void *v = (void *)1;
	TL_CHECK(posix_memalign(&v, 0, 10) == EINVAL && v == (void *)1, "posix_memalign align 0");
	TL_CHECK(posix_memalign(&v, 24, 10) == EINVAL, "posix_memalign align 24");
	TL_CHECK(posix_memalign(&v, 4, 10) == EINVAL, "posix_memalign align 4 (< sizeof(void *))");
	errno = 0;
	TL_CHECK(!aligned_alloc(0, 10) && errno == EINVAL, "aligned_alloc align 0");
	errno = 0;
	TL_CHECK(!aligned_alloc(48, 10) && errno == EINVAL, "aligned_alloc align 48");
	errno = 0;
	TL_CHECK(!memalign(big, 10) && errno == EINVAL, "memalign(SIZE_MAX)");
	void *m = memalign(48, 10); /* rounded up to 64, as glibc does */
	TL_CHECK(m, "memalign(48)");
	ALIGNED(m, 64);
	free(m);
	long ps = sysconf(_SC_PAGESIZE);
	void *pv = pvalloc(0);
	TL_CHECK(pv && malloc_usable_size(pv) >= (size_t)ps, "pvalloc(0) is one page");
	ALIGNED(pv, (size_t)ps);
	free(pv);
	pv = pvalloc((size_t)ps + 1);
	TL_CHECK(pv && malloc_usable_size(pv) >= 2 * (size_t)ps, "pvalloc rounds to pages");
	free(pv);
	errno = 0;
	TL_CHECK(!pvalloc(big) && errno == ENOMEM, "pvalloc(big)");
	void *va = valloc(100);
	TL_CHECK(va, "valloc");
	ALIGNED(va, (size_t)ps);
	SECRET(va, "valloc");
	free(va);
	/* libc's own allocations come here too */
	char *s = strdup("a string in secret memory");
	SECRET(s, "strdup");
	free(s);
	errno = 0;
	TL_CHECK(!malloc(big) && errno == ENOMEM, "malloc(big)");
	TL_CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL)");
	TL_CHECK(mallopt(M_ARENA_MAX, 2) == 1, "mallopt accepted");
	TL_CHECK(malloc_trim(0) >= 0, "malloc_trim");
	void *volatile keep = malloc(1000); /* volatile: not elided */
	TL_CHECK(keep, "malloc");
	struct mallinfo2 mi = mallinfo2();
	TL_CHECK(mi.uordblks >= 1000 && mi.arena >= mi.uordblks, "mallinfo2: %zu in use of %zu", mi.uordblks, mi.arena);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	struct mallinfo mi1 = mallinfo(); /* deprecated, still exported and replaced */
#pragma GCC diagnostic pop
	TL_CHECK(mi1.uordblks >= 1000, "mallinfo");
	free(keep);
	/* stdio's buffers are heap blocks: secret, and zeroed when fclose frees them */
	FILE *f = fopen("/proc/self/cmdline", "re");
	TL_CHECK(f && fgetc(f) != EOF, "fopen");
	unsigned char *buf = (unsigned char *)f->_IO_buf_base;
	size_t blen = (size_t)(f->_IO_buf_end - f->_IO_buf_base);
	TL_CHECK(buf && blen && hr_where(buf) == 's', "stdio buffer not in secret memory");
	TL_CHECK(tl_contains(buf, blen, argv0, strlen(argv0)), "stdio buffer holds the text read");
	fclose(f);
	TL_CHECK(!tl_contains(buf, blen, argv0, strlen(argv0)), "fclose left the text in its freed buffer");
	/* huge blocks */
	struct sm_heap_stats before, after;
	TL_CHECK(hr_stats(0, &before) == 0, "figures page");
	void *h = malloc((size_t)2 << 20);
	TL_CHECK(h, "malloc 2 MiB");
	TL_CHECK(hr_stats(0, &after) == 0, "figures page");
	if (strcmp(what, "huge-default") == 0) {
		TL_CHECK(hr_where(h) == 'o', "2 MiB block is not ordinary memory (threshold 1 MiB)");
		TL_CHECK(after.huge_allocs == before.huge_allocs + 1 && after.plain_blocks == before.plain_blocks + 1 &&
			 after.plain_bytes >= before.plain_bytes + ((size_t)2 << 20), "figures of the huge block");
		TL_CHECK(after.huge_threshold == 1 << 20, "threshold %llu", (unsigned long long)after.huge_threshold);
	} else {
		SECRET(h, "2 MiB with SECRETMEM_HEAP_HUGE=0");
		TL_CHECK(after.huge_allocs == before.huge_allocs && after.huge_threshold == 0, "no huge threshold");
	}
	free(h);
	TL_CHECK(hr_stats(0, &after) == 0 && after.plain_blocks == before.plain_blocks, "plain block counted out");
	printf("child ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	errno_at_main = errno;
	char out[8192];

	argv0 = argv[0];
	if (argc > 1)
		return child(argv[1]);
	tl_need_secretmem();
	hr_module();
	int st = hr_run(argv[0], "huge-default", 1, NULL, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok"), "child: %s", tl_status_str(st));
	const char *env[] = { "SECRETMEM_HEAP_HUGE=0", NULL };
	st = hr_run(argv[0], "huge-none", 1, env, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok"), "child: %s", tl_status_str(st));
	const char *junk[] = { "SECRETMEM_HEAP_HUGE=junk", NULL };
	st = hr_run(argv[0], "huge-default", 1, junk, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok"), "child: %s", tl_status_str(st));
	TL_CHECK(strstr(out, "secretmem-heap: warning: invalid SECRETMEM_HEAP_HUGE"), "no warning for an invalid value");
	/* without the module the same program fails: the test can tell */
	st = hr_run(argv[0], "huge-default", 0, NULL, out, sizeof(out));
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "control without the module did not fail");
	printf("pass\n");
	return 0;
}
