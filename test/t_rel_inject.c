/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_rel_inject.c - fault injection sweep over the allocator and regions.
 *
 * For each OS operation the library depends on (mmap, memfd_secret,
 * ftruncate, faulting pages in) and each error the kernel can give there,
 * make the nth call fail (n = 1 .. number of calls in a clean run + 1), once
 * or from then on, while a fixed workload runs: allocations of mixed sizes
 * (slab classes, large page runs, a block larger than a chunk), calloc,
 * realloc across the small/large boundary, strdup, frees, trim, secret
 * regions.  Every run is a fresh child process.  Each run must show:
 *  - every failed call is NULL with errno ENOMEM, or - memfd_secret refused
 *    with ENOSYS/EPERM - the documented fallback: the call succeeds (or,
 *    with fallback forbidden, fails with that errno);
 *  - no crash, and every block or region handed out keeps its contents;
 *  - statistics agree with the blocks the workload holds;
 *  - after the injection is disarmed the allocator works again;
 *  - with everything freed and trimmed: no file descriptor left open, no
 *    secret mapping left, no more mapped memory than a clean run keeps.
 * OS_OP_FAULT_IN with EFAULT and persist is the memory-lock regime of newer
 * kernels (the charge is refused when a page is faulted in); a last case
 * hits the real limit of this kernel's regime without CAP_IPC_LOCK.
 *
 * SECRETMEM_INJECT_STRIDE=k tests every kth n only (default: every n for
 * the first error of each op, every 4th for the others; 4 and 8 under
 * valgrind).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "secretmem.h"
#include "tlib.h"

#define MAX_BLOCKS 96
#define MAX_REGIONS 8

struct result {
	long calls[OS_OP_COUNT]; /* calls of each op in the run */
	long map_bytes;          /* mapped bytes kept at the end (delta) */
	long nulls;              /* allocations refused */
	long fallbacks;          /* regions that got the fallback backend */
};

struct plan {
	int op, err, persist, require;
	long nth;
	long map_budget; /* mapped bytes a clean run keeps at the end */
	int check_leaks;
	int quiet; /* no messages (after a few failures of the same kind) */
	struct result *res; /* shared with the parent */
};

static const char *op_name(int op)
{
	static const char *const names[] = { "mmap", "memfd_secret", "ftruncate", "fault-in" };
	return op >= 0 && op < OS_OP_COUNT ? names[op] : "?";
}

/* ---- the child's view -------------------------------------------------- */

struct blk {
	unsigned char *p;
	size_t req, usable;
	uint64_t seed;
};

static struct blk blocks[MAX_BLOCKS];
static struct secretmem_region *regions[MAX_REGIONS];
static uint64_t region_seed[MAX_REGIONS];
static size_t nlive, live_bytes;
static uint64_t next_seed = 1;
static const struct plan *cur;
static int step;

#define CFAIL(...)                                                                   \
	do {                                                                         \
		fprintf(stderr, "[%s err=%s n=%ld persist=%d require=%d step %d] ",  \
			op_name(cur->op), strerrorname_np(cur->err), cur->nth,       \
			cur->persist, cur->require, step);                           \
		fprintf(stderr, __VA_ARGS__);                                        \
		fputc('\n', stderr);                                                 \
		fflush(stderr);                                                      \
		_exit(1);                                                            \
	} while (0)

/* Long-lived: some mapped memory of the process outside heap and stack. */
static long mapped_bytes(int *secret_lines)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	long total = 0;

	*secret_lines = 0;
	if (!f)
		TL_FAIL("open /proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx", &a, &b) != 2)
			continue;
		if (strstr(line, "secretmem"))
			(*secret_lines)++;
		if (strstr(line, "[heap]") || strstr(line, "[stack]") || strstr(line, "[v"))
			continue;
		total += (long)(b - a);
	}
	fclose(f);
	return total;
}

static int fallback_ok(void)
{
	/* the documented fallback: memfd_secret refused by a filter */
	return cur->op == OS_OP_MEMFD && (cur->err == ENOSYS || cur->err == EPERM) && !cur->require;
}

static void check_errno(const char *what, size_t n, int e)
{
	if (fallback_ok())
		CFAIL("%s(%zu) failed (errno %s) although fallback is allowed", what, n, strerrorname_np(e));
	if (e == ENOMEM)
		return;
	/* out of file descriptors: secretmem_region_create passes it on
	 * (region.c documents -EMFILE); the allocator says ENOMEM */
	if (cur->err == EMFILE && e == EMFILE && strcmp(what, "region_create") == 0)
		return;
	if (cur->require && (cur->err == ENOSYS || cur->err == EPERM) && e == cur->err)
		return; /* secret memory unavailable, fallback forbidden */
	CFAIL("%s(%zu) = NULL with errno %s, expected ENOMEM", what, n, strerrorname_np(e));
}

/* A fast pattern: word k of a block with seed s is s * K1 + k * K2. */
static void pat_fill(void *p, size_t n, uint64_t seed)
{
	unsigned char *b = p;
	size_t k;

	for (k = 0; k + 8 <= n; k += 8) {
		uint64_t w = seed * 0x9e3779b97f4a7c15ull + k * 0xbf58476d1ce4e5b9ull;
		memcpy(b + k, &w, 8);
	}
	for (; k < n; k++)
		b[k] = (unsigned char)(seed + k);
}

static int pat_word_ok(const unsigned char *b, size_t k, size_t n, uint64_t seed)
{
	if (k + 8 <= n) {
		uint64_t w = seed * 0x9e3779b97f4a7c15ull + k * 0xbf58476d1ce4e5b9ull, v;
		memcpy(&v, b + k, 8);
		return v == w;
	}
	for (; k < n; k++)
		if (b[k] != (unsigned char)(seed + k))
			return 0;
	return 1;
}

/* full: every word; else the first and last 4 KiB and one word per 512
 * bytes between (a lost or remapped page cannot hide from that) */
static int pat_check(const void *p, size_t n, uint64_t seed, int full)
{
	const unsigned char *b = p;

	for (size_t k = 0; k < n; k += 8) {
		if (!full && k >= 4096 && k + 4096 < n && k % 512)
			continue;
		if (!pat_word_ok(b, k, n, seed))
			return 0;
	}
	return 1;
}

static void check_everything(void)
{
	struct secretmem_stats st;

	for (int i = 0; i < MAX_BLOCKS; i++)
		if (blocks[i].p && !pat_check(blocks[i].p, blocks[i].usable, blocks[i].seed, 0))
			CFAIL("block %d (%zu bytes at %p) changed", i, blocks[i].req, (void *)blocks[i].p);
	for (int i = 0; i < MAX_REGIONS; i++)
		if (regions[i] && !pat_check(secretmem_region_data(regions[i]), secretmem_region_size(regions[i]),
					     region_seed[i], 0))
			CFAIL("region %d changed", i);
	if (secretmem_stats(&st))
		CFAIL("secretmem_stats failed");
	if (st.live_allocations != nlive || st.bytes_in_use != live_bytes)
		CFAIL("stats: %zu live / %zu bytes, expected %zu / %zu", st.live_allocations, st.bytes_in_use,
		      nlive, live_bytes);
}

static void adopt(int i, void *p, size_t req, int zero)
{
	size_t u = secretmem_usable_size(p);

	if (u < req)
		CFAIL("usable size %zu < %zu", u, req);
	if (zero)
		for (size_t k = 0; k < u; k++)
			if (((unsigned char *)p)[k])
				CFAIL("new block of %zu not zero at %zu", req, k);
	blocks[i].p = p;
	blocks[i].req = req;
	blocks[i].usable = u;
	blocks[i].seed = next_seed++;
	pat_fill(p, u, blocks[i].seed);
	nlive++;
	live_bytes += u;
}

static void forget(int i)
{
	nlive--;
	live_bytes -= blocks[i].usable;
	memset(&blocks[i], 0, sizeof(blocks[i]));
}

static void w_free(int i)
{
	if (!blocks[i].p)
		return;
	if (!pat_check(blocks[i].p, blocks[i].usable, blocks[i].seed, 1))
		CFAIL("block %d (%zu bytes) changed before free", i, blocks[i].req);
	secretmem_free(blocks[i].p);
	forget(i);
}

static void w_malloc(int i, size_t n)
{
	w_free(i);
	errno = 0;
	void *p = secretmem_malloc(n);
	if (!p) {
		cur->res->nulls++;
		check_errno("malloc", n, errno);
		return;
	}
	adopt(i, p, n, 1);
}

static void w_calloc(int i, size_t nmemb, size_t size)
{
	w_free(i);
	errno = 0;
	void *p = secretmem_calloc(nmemb, size);
	if (!p) {
		cur->res->nulls++;
		check_errno("calloc", nmemb * size, errno);
		return;
	}
	adopt(i, p, nmemb * size, 1);
}

static void w_realloc(int i, size_t n)
{
	struct blk old = blocks[i];

	if (!old.p) {
		w_malloc(i, n);
		return;
	}
	errno = 0;
	unsigned char *p = secretmem_realloc(old.p, n);
	if (!p) {
		cur->res->nulls++;
		check_errno("realloc", n, errno);
		/* ptr untouched: checked by check_everything() */
		return;
	}
	size_t keep = old.req < n ? old.req : n;
	unsigned char *want = malloc(old.usable);
	if (!want)
		CFAIL("out of ordinary memory");
	pat_fill(want, old.usable, old.seed);
	if (memcmp(p, want, keep) != 0)
		CFAIL("realloc(%zu -> %zu) lost the contents", old.req, n);
	free(want);
	forget(i);
	adopt(i, p, n, 0);
}

static void w_strdup(int i, size_t len)
{
	char *s = malloc(len + 1);

	if (!s)
		CFAIL("out of ordinary memory");
	for (size_t k = 0; k < len; k++)
		s[k] = (char)('a' + k % 26);
	s[len] = '\0';
	w_free(i);
	errno = 0;
	char *d = secretmem_strdup(s);
	if (!d) {
		cur->res->nulls++;
		check_errno("strdup", len + 1, errno);
	} else {
		if (strcmp(d, s) != 0)
			CFAIL("strdup copy differs");
		adopt(i, d, len + 1, 0);
	}
	free(s);
}

static void w_region(int i, size_t n)
{
	if (regions[i]) {
		if (secretmem_region_destroy(regions[i]))
			CFAIL("region_destroy failed");
		regions[i] = NULL;
	}
	errno = 0;
	struct secretmem_region *r = secretmem_region_create(n, 0);
	if (!r) {
		cur->res->nulls++;
		check_errno("region_create", n, errno);
		return;
	}
	unsigned char *d = secretmem_region_data(r);
	for (size_t k = 0; k < secretmem_region_size(r); k++)
		if (d[k])
			CFAIL("new region not zero");
	if (secretmem_region_backend(r) == SECRETMEM_BACKEND_FALLBACK)
		cur->res->fallbacks++;
	regions[i] = r;
	region_seed[i] = next_seed++;
	pat_fill(d, secretmem_region_size(r), region_seed[i]);
}

static void w_trim(void)
{
	long r = secretmem_trim();

	if (r < 0)
		CFAIL("secretmem_trim() = %ld", r);
}

/* The workload: a fixed program; every call is checked as it returns. */
static void workload(void)
{
	static const size_t sizes[] = { 1, 16, 20, 100, 1000, 3000, 4096, 8000, 16384,
					16385, 20000, 65536, 100000, 200000 };
	int nsizes = (int)(sizeof(sizes) / sizeof(sizes[0]));

#define STEP(x)                     \
	do {                        \
		step++;             \
		x;                  \
		check_everything(); \
	} while (0)

	STEP(w_region(0, 4096));
	for (int i = 0; i < nsizes; i++)
		STEP(w_malloc(i, sizes[i]));
	STEP(w_region(1, 3 * 4096 + 1));
	STEP(w_calloc(20, 10, 100));
	STEP(w_calloc(21, 3, 10000));
	STEP(w_strdup(22, 300));
	/* many blocks of two classes: more slabs */
	for (int i = 30; i < 70; i++)
		STEP(w_malloc(i, i % 2 ? 700 : 5000));
	/* realloc: grow inside a class, across classes, into a large run, back */
	STEP(w_realloc(3, 110));
	STEP(w_realloc(3, 2000));
	STEP(w_realloc(3, 30000));
	STEP(w_realloc(3, 90000));
	STEP(w_realloc(3, 500));
	STEP(w_realloc(23, 40)); /* realloc(NULL) */
	for (int i = 30; i < 70; i += 2)
		STEP(w_free(i));
	STEP(w_free(10));
	STEP(w_free(12));
	STEP(w_trim());
	/* after trim: new chunks and large runs again */
	for (int i = 70; i < 80; i++)
		STEP(w_malloc(i, i % 2 ? 24 : 12000));
	STEP(w_malloc(10, 50000));
	STEP(w_malloc(12, 120000));
	STEP(w_region(2, 5 * 4096));
	STEP(w_region(0, 8192)); /* destroy and create */
	for (int i = 0; i < MAX_BLOCKS; i += 3)
		STEP(w_free(i));
	STEP(w_trim());
	for (int i = 0; i < 6; i++)
		STEP(w_malloc(i, sizes[i + 8]));
#undef STEP
}

static void release_all(void)
{
	for (int i = 0; i < MAX_BLOCKS; i++)
		w_free(i);
	for (int i = 0; i < MAX_REGIONS; i++)
		if (regions[i]) {
			if (secretmem_region_destroy(regions[i]))
				CFAIL("region_destroy failed");
			regions[i] = NULL;
		}
	w_trim();
}

static int child(void *arg)
{
	struct plan *pl = arg;
	int secret0, secret1;

	cur = pl;
	int fds0 = tl_count_fds();
	long map0 = mapped_bytes(&secret0);

	if (secretmem_set_require(pl->require))
		CFAIL("secretmem_set_require");
	for (int op = 0; op < OS_OP_COUNT; op++)
		sm_inject_fault(op, op == pl->op ? pl->nth : 0, pl->err, pl->persist);
	workload();
	for (int op = 0; op < OS_OP_COUNT; op++)
		pl->res->calls[op] = sm_inject_count(op);
	sm_inject_fault(pl->op, 0, 0, 0);
	release_all();
	check_everything();

	/* recovery: the allocator works again once the kernel does */
	step = 1000;
	secretmem_set_require(0);
	w_malloc(0, 10);
	w_malloc(1, 3000);
	w_malloc(2, 40000);
	w_region(0, 4096);
	if (!blocks[0].p || !blocks[1].p || !blocks[2].p || !regions[0])
		CFAIL("no recovery after the injection was disarmed");
	check_everything();
	release_all();
	check_everything();

	/* leaks, with everything freed and trimmed */
	struct secretmem_stats st;
	secretmem_stats(&st);
	if (st.bytes_mapped || st.regions)
		CFAIL("after trim with nothing live: %zu bytes in %zu regions still mapped", st.bytes_mapped,
		      st.regions);
	int fds1 = tl_count_fds();
	if (fds1 != fds0)
		CFAIL("file descriptors: %d before, %d after", fds0, fds1);
	long map1 = mapped_bytes(&secret1);
	if (secret1 != secret0)
		CFAIL("secret mappings: %d before, %d after trim", secret0, secret1);
	pl->res->map_bytes = map1 - map0;
	if (pl->check_leaks && map1 - map0 > pl->map_budget)
		CFAIL("mapped memory grew by %ld bytes, a clean run keeps %ld", map1 - map0, pl->map_budget);
	return 0;
}

/* ---- the parent -------------------------------------------------------- */

static struct result *shared;
static int failures;

/* The first failures, repeated at the end where the test log's tail shows them. */
static char first_failures[4][512];

static int run(struct plan *pl)
{
	char out[512];

	memset(shared, 0, sizeof(*shared));
	pl->res = shared;
	int status = tl_run_child(child, pl, out, sizeof(out));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (!WIFEXITED(status))
		snprintf(out, sizeof(out), "[%s err=%s n=%ld persist=%d require=%d] child died: %s\n",
			 op_name(pl->op), strerrorname_np(pl->err), pl->nth, pl->persist, pl->require,
			 tl_status_str(status));
	if (!pl->quiet)
		fputs(out, stderr);
	if (failures < 4)
		snprintf(first_failures[failures], sizeof(first_failures[0]), "%s", out);
	failures++;
	return -1;
}

/* The real limit of this kernel's regime: no CAP_IPC_LOCK, small limit. */
static int limit_child(void *arg)
{
	(void)arg;
	if (tl_drop_cap_ipc_lock() || tl_set_memlock(256 * 1024)) {
		fprintf(stderr, "cannot drop CAP_IPC_LOCK / set the limit\n");
		return 2;
	}
	static unsigned char *ptrs[4096];
	int n = 0;
	for (; n < 4096; n++) {
		errno = 0;
		ptrs[n] = secretmem_malloc(n % 2 ? 3000 : 20000);
		if (!ptrs[n])
			break;
		tl_fill(ptrs[n], n % 2 ? 3000 : 20000, (uint64_t)n + 7);
	}
	if (n == 4096 || errno != ENOMEM) {
		fprintf(stderr, "at the limit: %d blocks, errno %d (expected NULL/ENOMEM)\n", n, errno);
		return 1;
	}
	for (int i = 0; i < n; i++)
		if (!tl_check(ptrs[i], i % 2 ? 3000 : 20000, (uint64_t)i + 7)) {
			fprintf(stderr, "block %d changed at the limit\n", i);
			return 1;
		}
	for (int i = 0; i < n; i++)
		secretmem_free(ptrs[i]);
	secretmem_trim();
	unsigned char *p = secretmem_malloc(20000);
	if (!p) {
		fprintf(stderr, "no memory after freeing everything at the limit\n");
		return 1;
	}
	secretmem_free(p);
	printf("real memory-lock limit (256 KiB, no CAP_IPC_LOCK): %d blocks, then NULL/ENOMEM\n", n);
	return 0;
}

int main(void)
{
	tl_need_root("its memory-lock case drops CAP_IPC_LOCK and sets RLIMIT_MEMLOCK");
	/* per op, the errors the kernel can give there; the first is swept over
	 * every n, the others (the same paths, another errno to map) over
	 * every 4th n unless SECRETMEM_INJECT_STRIDE says otherwise */
	static const int mmap_errs[] = { ENOMEM, EAGAIN, EPERM, 0 };
	static const int memfd_errs[] = { ENOSYS, EPERM, ENOMEM, EMFILE, 0 };
	static const int trunc_errs[] = { ENOMEM, EPERM, 0 };
	static const int fault_errs[] = { EFAULT, ENOMEM, EAGAIN, EPERM, 0 };
	static const int *const errs[OS_OP_COUNT] = { mmap_errs, memfd_errs, trunc_errs, fault_errs };
	long stride = tl_under_valgrind() ? 4 : 1, stride2 = tl_under_valgrind() ? 8 : 4;
	const char *s = getenv("SECRETMEM_INJECT_STRIDE");

	/* valgrind 3.19 does not know memfd_secret (ENOSYS): there the library
	 * runs on the fallback backend, and so does this sweep (the ops that
	 * backend uses: mmap and locking pages in) */
	int fallback_only = tl_under_valgrind() && secretmem_supported() != 0;
	if (!fallback_only)
		tl_need_secretmem();
	else
		printf("memfd_secret unavailable under valgrind: sweeping the fallback backend\n");
	if (s && atol(s) > 0)
		stride = stride2 = atol(s);
	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		TL_FAIL("mmap: %s", strerror(errno));

	/* a clean run: how often each op is called, what stays mapped */
	struct plan clean = { OS_OP_MMAP, ENOMEM, 0, 0, 0, 0, 0, 0, NULL };
	if (run(&clean))
		TL_FAIL("the workload fails without any injection");
	struct result base = *shared;
	printf("clean run: %ld mmap, %ld memfd_secret, %ld ftruncate, %ld fault-in calls; %ld bytes stay mapped\n",
	       base.calls[OS_OP_MMAP], base.calls[OS_OP_MEMFD], base.calls[OS_OP_FTRUNCATE],
	       base.calls[OS_OP_FAULT_IN], base.map_bytes);
	for (int op = 0; op < OS_OP_COUNT; op++)
		TL_CHECK(base.calls[op] > 0 || (fallback_only && (op == OS_OP_MEMFD || op == OS_OP_FTRUNCATE)),
			 "the workload never calls %s", op_name(op));

	/* valgrind's own mappings in the process come and go: there, leaks are
	 * judged by the allocator's statistics and the secret mappings only */
	int map_check = !tl_under_valgrind();
	long runs = 0;
	for (int op = 0; op < OS_OP_COUNT; op++) {
		if (!base.calls[op])
			continue;
		for (const int *e = errs[op]; *e; e++) {
			for (int require = 0; require < 2; require++) {
				/* fallback forbidden: only meaningful for memfd_secret refusals */
				if (require && !(op == OS_OP_MEMFD && (*e == ENOSYS || *e == EPERM)))
					continue;
				for (int persist = 0; persist < 2; persist++) {
					long nulls = 0, fb = 0, nfail0 = failures;
					long step_n = e == errs[op] ? stride : stride2;
					for (long n = 1; n <= base.calls[op] + 1; n += step_n) {
						struct plan pl = { op, *e, persist, require, n, base.map_bytes, map_check,
								    failures - nfail0 >= 3, NULL };
						run(&pl);
						nulls += shared->nulls;
						fb += shared->fallbacks;
						runs++;
					}
					printf("%-12s %-6s %s%s: n=1..%ld step %ld: %s, %ld refused calls, %ld fallback regions\n",
					       op_name(op), strerrorname_np(*e), persist ? "persistent" : "once      ",
					       require ? " require" : "", base.calls[op] + 1, step_n,
					       failures > nfail0 ? "FAILED" : "ok", nulls, fb);
					if (failures > nfail0)
						printf("    %ld of these runs failed\n", failures - nfail0);
				}
			}
		}
	}
	printf("%ld injected runs, %d failed\n", runs, failures);

	int status = tl_run_child(limit_child, NULL, NULL, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "memory-lock limit case: %s\n", tl_status_str(status));
		failures++;
	}
	if (failures) {
		fprintf(stderr, "first failures:\n");
		for (int i = 0; i < 4 && i < failures; i++)
			fputs(first_failures[i], stderr);
		TL_FAIL("%d runs failed", failures);
	}
	return 0;
}
