/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_memlock - at the memory-lock limit: a child without CAP_IPC_LOCK
 * under RLIMIT_MEMLOCK 64 KiB allocates 32-byte, 4 KiB and 64 KiB blocks
 * (separately) until NULL: errno ENOMEM, no SIGBUS, every block allocated
 * before is intact, a freed slot can be allocated again, and the child exits
 * normally.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include "secretmem.h"
#include "tlib.h"

#define LIMIT (64 << 10)
#define CAP 200000

static int limited(void *arg)
{
	size_t n = *(size_t *)arg;
	static unsigned char *b[CAP];
	int count = 0;

	tl_signal_default(SIGBUS);
	tl_no_core();
	if (tl_drop_cap_ipc_lock() || tl_set_memlock(LIMIT)) {
		printf("cannot drop CAP_IPC_LOCK or set RLIMIT_MEMLOCK\n");
		return 2;
	}
	for (;;) {
		if (count == CAP) {
			printf("%d blocks of %zu bytes under a %d-byte limit: never refused\n", count, n, LIMIT);
			return 4;
		}
		errno = 0;
		unsigned char *p = secretmem_malloc(n);
		if (!p)
			break;
		tl_fill(p, n, (uint64_t)count + 1);
		b[count++] = p;
	}
	int e = errno;
	if (e != ENOMEM) {
		printf("after %d blocks of %zu bytes: NULL with errno %d (%s), expected ENOMEM\n", count, n, e,
		       strerror(e));
		return 5;
	}
	/* refused again, cleanly */
	errno = 0;
	if (secretmem_malloc(n) || errno != ENOMEM) {
		printf("second attempt at the limit: errno %d\n", errno);
		return 5;
	}
	struct secretmem_stats st;
	if (secretmem_stats(&st) || st.memlock_unlimited || st.live_allocations != (size_t)count) {
		printf("stats at the limit: unlimited %d, live %zu (expected %d)\n", st.memlock_unlimited,
		       st.live_allocations, count);
		return 6;
	}
	for (int i = 0; i < count; i++)
		if (!tl_check(b[i], n, (uint64_t)i + 1)) {
			printf("block %d of %zu bytes changed at the limit\n", i, n);
			return 7;
		}
	printf("%zu-byte blocks: %d allocated under %d bytes (%.0f%% of the limit as user data), then ENOMEM; "
	       "%zu pages mapped\n",
	       n, count, LIMIT, 100.0 * (double)count * (double)n / LIMIT, st.pages_mapped);
	if (count > 0) {
		/* a freed slot is reused without new locked memory */
		secretmem_free(b[count - 1]);
		unsigned char *again = secretmem_malloc(n);
		if (!again) {
			printf("after freeing one %zu-byte block, malloc(%zu) failed: %s\n", n, n, strerror(errno));
			return 8;
		}
		b[count - 1] = again;
	}
	for (int i = 0; i < count; i++)
		secretmem_free(b[i]);
	if (secretmem_stats(&st) || st.live_allocations || st.bytes_in_use) {
		printf("after freeing all: %zu live\n", st.live_allocations);
		return 9;
	}
	return 0;
}

int main(void)
{
	tl_need_root("drops CAP_IPC_LOCK and sets RLIMIT_MEMLOCK in children");
	static const size_t sizes[] = { 32, 4096, 65536 };
	static char out[8192];

	tl_need_secretmem();
	/* this process never allocates: each child starts with an empty heap */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		int st = tl_run_child(limited, &n, out, sizeof(out));
		fputs(out, stdout);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%zu-byte blocks at the memory-lock limit: child %s",
			 n, tl_status_str(st));
		if (n < LIMIT / 2)
			TL_CHECK(strstr(out, ": 0 allocated") == NULL,
				 "not a single %zu-byte block fits under a %d-byte memory-lock limit", n, LIMIT);
	}
	printf("ok: ENOMEM at the memory-lock limit, blocks intact, normal exit\n");
	return TL_PASS;
}
