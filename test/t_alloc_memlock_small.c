/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_memlock_small - a small memory-lock limit (issue 14, item 6).
 *
 * In a child without CAP_IPC_LOCK under RLIMIT_MEMLOCK 64 KiB (ulimit -l 64):
 *  - three 32-byte secrets followed by an 8 KiB region work (the first chunk
 *    grows from what the limit allows instead of taking 64 KiB at once);
 *  - regions then fail at the limit with ENOMEM, and the cause is
 *    explained: stats.last_failure is SECRETMEM_FAILURE_MEMLOCK with the
 *    refused size and the locked bytes, and exactly one hint line with the
 *    figures is printed on stderr, however many requests fail.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include "secretmem.h"
#include "tlib.h"

#define LIMIT (64 << 10)

static int limited(void *arg)
{
	(void)arg;
	tl_signal_default(SIGBUS);
	tl_no_core();
	if (tl_drop_cap_ipc_lock() || tl_set_memlock(LIMIT)) {
		printf("cannot drop CAP_IPC_LOCK or set RLIMIT_MEMLOCK\n");
		return 2;
	}
	void *k[3];
	for (int i = 0; i < 3; i++) {
		k[i] = secretmem_malloc(32);
		TL_CHECK(k[i], "32-byte secret %d under ulimit -l 64: %s", i, strerror(errno));
	}
	struct secretmem_region *r = secretmem_region_create(8192, 0);
	TL_CHECK(r, "8 KiB region after three 32-byte secrets under ulimit -l 64: %s", strerror(errno));
	struct secretmem_stats st;
	TL_CHECK(secretmem_stats(&st) == 0, "stats");
	printf("three secrets and an 8 KiB region: %zu bytes mapped by the allocator, %zu locked of %zu\n",
	       st.bytes_mapped, st.memlock_locked, st.memlock_limit);
	TL_CHECK(st.last_failure == SECRETMEM_FAILURE_NONE, "a failure recorded already: %zu", st.last_failure);

	/* regions until the limit refuses, twice */
	struct secretmem_region *more[64];
	int n = 0, refused = 0;
	while (n < 64 && refused < 2) {
		errno = 0;
		more[n] = secretmem_region_create(8192, 0);
		if (more[n]) {
			n++;
			continue;
		}
		TL_CHECK(errno == ENOMEM, "region at the limit: errno %s, want ENOMEM", strerror(errno));
		refused++;
	}
	TL_CHECK(refused == 2, "64 regions of 8 KiB under a 64 KiB limit: never refused");
	errno = 0;
	TL_CHECK(!secretmem_malloc(1 << 20) && errno == ENOMEM, "1 MiB block at the limit: errno %s",
		 strerror(errno));
	TL_CHECK(secretmem_stats(&st) == 0, "stats");
	TL_CHECK(st.last_failure == SECRETMEM_FAILURE_MEMLOCK, "stats.last_failure %zu, want MEMLOCK (%d)",
		 st.last_failure, SECRETMEM_FAILURE_MEMLOCK);
	TL_CHECK(st.last_failure_bytes >= 8192, "stats.last_failure_bytes %zu", st.last_failure_bytes);
	TL_CHECK(!st.memlock_unlimited && st.memlock_limit == LIMIT, "stats: limit %zu", st.memlock_limit);
	TL_CHECK(st.memlock_locked > 0 && st.memlock_locked <= LIMIT, "stats.memlock_locked %zu",
		 st.memlock_locked);
	printf("%d more regions, then ENOMEM: last_failure MEMLOCK, %zu bytes refused, %zu of %zu locked\n", n,
	       st.last_failure_bytes, st.memlock_locked, st.memlock_limit);
	for (int i = 0; i < n; i++)
		secretmem_region_destroy(more[i]);
	secretmem_region_destroy(r);
	for (int i = 0; i < 3; i++)
		secretmem_free(k[i]);
	return 0;
}

int main(void)
{
	static char out[16384];

	tl_need_secretmem();
	if (tl_under_valgrind())
		tl_skip("valgrind: no secret memory to limit");
	int st = tl_run_child(limited, NULL, out, sizeof(out));
	fputs(out, stdout);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
		tl_skip("needs root: drops CAP_IPC_LOCK and sets RLIMIT_MEMLOCK in a child");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "limited child: %s", tl_status_str(st));
	/* one hint, with the figures */
	const char *hint = "secretmem: warning: the memory-lock limit refused ";
	int hints = 0;
	for (const char *p = out; (p = strstr(p, hint)); p += strlen(hint))
		hints++;
	TL_CHECK(hints == 1, "%d memory-lock hints, want exactly one", hints);
	TL_CHECK(strstr(out, "(RLIMIT_MEMLOCK 65536 bytes, ") && strstr(out, " bytes locked by this process)"),
		 "the hint lacks the figures");
	return TL_PASS;
}
