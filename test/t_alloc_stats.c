/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_stats - secretmem_stats() adds up: bytes and blocks in use, pages
 * and regions, the backend, the memory-lock budget; trim gives pages back.
 */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

static struct secretmem_stats get(void)
{
	struct secretmem_stats st;

	memset(&st, 0xee, sizeof(st));
	TL_CHECK(secretmem_stats(&st) == 0, "secretmem_stats");
	for (size_t i = 0; i < sizeof(st.reserved) / sizeof(st.reserved[0]); i++)
		TL_CHECK(st.reserved[i] == 0, "stats.reserved[%zu] = %zu", i, st.reserved[i]);
	return st;
}

static void print(const char *when, const struct secretmem_stats *s)
{
	printf("%s: in_use %zu live %zu mapped %zu B / %zu pages, faulted %zu released %zu, regions %zu (created %zu), "
	       "backend %d, memlock unlimited %d limit %zu left %zu\n",
	       when, s->bytes_in_use, s->live_allocations, s->bytes_mapped, s->pages_mapped, s->pages_faulted,
	       s->pages_released, s->regions, s->regions_created, s->backend, s->memlock_unlimited,
	       s->memlock_limit, s->memlock_left);
}

/* In a child without CAP_IPC_LOCK under a 1 MiB limit: the budget shows. */
static int limited_child(void *arg)
{
	(void)arg;
	if (tl_drop_cap_ipc_lock() || tl_set_memlock(1 << 20)) {
		printf("cannot drop CAP_IPC_LOCK / set the limit\n");
		return 2;
	}
	void *p = secretmem_malloc(32);
	if (!p) {
		printf("malloc(32) under a 1 MiB limit: %s\n", strerror(errno));
		return 1;
	}
	struct secretmem_stats s = get();
	print("limited", &s);
	if (s.memlock_unlimited != 0 || s.memlock_limit != (1 << 20)) {
		printf("memlock_unlimited %d limit %zu, expected 0 and %d\n", s.memlock_unlimited, s.memlock_limit,
		       1 << 20);
		return 1;
	}
	/* what counts as locked depends on the backend and the kernel: the
	 * whole secret mapping where it is VM_LOCKED ("lo" in smaps, kernels
	 * with mmap-time accounting), the faulted (mlocked) pages of the
	 * fallback; newer kernels charge secret pages without VM_LOCKED */
	size_t locked = 0;
	if (tl_has_vmflag(p, "lo") == 1)
		locked = s.backend == SECRETMEM_BACKEND_SECRET ? s.bytes_mapped : (size_t)4096;
	if (s.memlock_left > s.memlock_limit || s.memlock_left + locked > s.memlock_limit) {
		printf("memlock_left %zu with %zu bytes locked under a limit of %zu\n", s.memlock_left, locked,
		       s.memlock_limit);
		return 1;
	}
	secretmem_free(p);
	return 0;
}

int main(void)
{
	tl_need_root("drops CAP_IPC_LOCK and sets RLIMIT_MEMLOCK in a child");
	struct rlimit rl;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);

	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	TL_CHECK(secretmem_stats(NULL) == -EINVAL, "stats(NULL)");

	struct secretmem_stats s0 = get();
	print("start", &s0);
	TL_CHECK(s0.live_allocations == 0 && s0.bytes_in_use == 0, "fresh process has live blocks");

	enum { N = 1000 };
	static void *b[N];
	size_t sum = 0;
	for (int i = 0; i < N; i++) {
		size_t n = i % 100 == 0 ? 20000 + (size_t)i * 10 : (size_t)(i * 37) % 700 + 1;
		b[i] = secretmem_malloc(n);
		TL_CHECK(b[i], "malloc(%zu): %s", n, strerror(errno));
		sum += secretmem_usable_size(b[i]);
	}
	struct secretmem_stats s1 = get();
	print("1000 live", &s1);
	TL_CHECK(s1.bytes_in_use == sum, "bytes_in_use %zu, sum of usable sizes %zu", s1.bytes_in_use, sum);
	TL_CHECK(s1.live_allocations == N, "live_allocations %zu, expected %d", s1.live_allocations, N);
	TL_CHECK(s1.pages_mapped > 0 && s1.bytes_mapped > 0, "nothing mapped");
	TL_CHECK(s1.bytes_mapped == s1.pages_mapped * ps, "bytes_mapped %zu != pages_mapped %zu * %zu",
		 s1.bytes_mapped, s1.pages_mapped, ps);
	TL_CHECK(s1.bytes_mapped >= sum, "bytes_mapped %zu < bytes in use %zu", s1.bytes_mapped, sum);
	TL_CHECK(s1.pages_faulted * ps >= sum, "pages_faulted %zu cannot hold %zu bytes", s1.pages_faulted, sum);
	TL_CHECK(s1.backend == secretmem_default_backend(), "backend %d, expected %d", s1.backend,
		 secretmem_default_backend());
	if (secretmem_supported() == 0)
		TL_CHECK(s1.backend == SECRETMEM_BACKEND_SECRET, "backend %d, expected SECRET", s1.backend);
	TL_CHECK(s1.regions >= 1 && s1.regions_created >= s1.regions, "regions %zu created %zu", s1.regions,
		 s1.regions_created);
	TL_CHECK(getrlimit(RLIMIT_MEMLOCK, &rl) == 0, "getrlimit");
	size_t soft = rl.rlim_cur == RLIM_INFINITY ? SIZE_MAX : (size_t)rl.rlim_cur;
	TL_CHECK(s1.memlock_limit == soft, "memlock_limit %zu, RLIMIT_MEMLOCK soft %zu", s1.memlock_limit, soft);
	/* root: CAP_IPC_LOCK */
	if (geteuid() == 0) {
		TL_CHECK(s1.memlock_unlimited == 1, "root with CAP_IPC_LOCK: memlock_unlimited %d",
			 s1.memlock_unlimited);
		TL_CHECK(s1.memlock_left == SIZE_MAX, "unlimited: memlock_left %zu", s1.memlock_left);
	}

	/* free half: the counts follow */
	size_t freed = 0;
	for (int i = 0; i < N; i += 2) {
		freed += secretmem_usable_size(b[i]);
		secretmem_free(b[i]);
	}
	struct secretmem_stats s2 = get();
	TL_CHECK(s2.bytes_in_use == sum - freed && s2.live_allocations == N / 2,
		 "after freeing half: in_use %zu live %zu, expected %zu and %d", s2.bytes_in_use,
		 s2.live_allocations, sum - freed, N / 2);
	for (int i = 1; i < N; i += 2)
		secretmem_free(b[i]);
	struct secretmem_stats s3 = get();
	print("all freed", &s3);
	TL_CHECK(s3.live_allocations == 0 && s3.bytes_in_use == 0, "after freeing all: live %zu in_use %zu",
		 s3.live_allocations, s3.bytes_in_use);
	TL_CHECK(s3.pages_faulted >= s1.pages_faulted, "pages_faulted went down");

	long r = secretmem_trim();
	TL_CHECK(r >= 0, "trim: %ld (%s)", r, strerror((int)-r));
	struct secretmem_stats s4 = get();
	print("trimmed", &s4);
	TL_CHECK(s4.regions < s3.regions, "trim: regions %zu -> %zu", s3.regions, s4.regions);
	TL_CHECK(s4.pages_mapped < s3.pages_mapped, "trim: pages_mapped %zu -> %zu", s3.pages_mapped,
		 s4.pages_mapped);
	TL_CHECK(s4.pages_released > s3.pages_released, "trim: pages_released %zu -> %zu", s3.pages_released,
		 s4.pages_released);
	printf("trim returned %ld bytes; pages_mapped dropped by %zu pages\n", r, s3.pages_mapped - s4.pages_mapped);

	/* the budget of a process without CAP_IPC_LOCK */
	int st = tl_run_child(limited_child, NULL, NULL, 0);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "limited child: %s", tl_status_str(st));
	printf("ok: stats add up\n");
	return TL_PASS;
}
