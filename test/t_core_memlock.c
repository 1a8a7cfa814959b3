/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_memlock - at the memory-lock limit, creation fails cleanly.
 *
 * Root bypasses RLIMIT_MEMLOCK, so a child drops CAP_IPC_LOCK and sets the
 * limit to 64 KiB, then creates 16 KiB regions, each filled with its own
 * pattern, until creation fails.  It must get NULL with errno ENOMEM (never
 * SIGBUS or another crash), after at least one region; the earlier regions
 * keep their contents; after one is destroyed its budget is usable again;
 * the child exits normally.  Run with the secret backend and with the
 * fallback backend (memfd_secret filtered to ENOSYS: mlock hits the limit).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

#define LIMIT (64 * 1024)
#define REGION (16 * 1024)
#define MAXN 64

static int child(void *arg)
{
	int fallback = *(const int *)arg;
	int want = fallback ? SECRETMEM_BACKEND_FALLBACK : SECRETMEM_BACKEND_SECRET;
	struct secretmem_region *r[MAXN];
	int n = 0, rc, err = 0;

	if (fallback && tl_seccomp_block(SYS_memfd_secret, ENOSYS) != 0)
		TL_FAIL("seccomp filter: %s", strerror(errno));
	rc = tl_drop_cap_ipc_lock();
	TL_CHECK(rc == 0, "drop CAP_IPC_LOCK: %s", strerror(-rc));
	rc = tl_set_memlock(LIMIT);
	TL_CHECK(rc == 0, "RLIMIT_MEMLOCK: %s", strerror(-rc));
	for (; n < MAXN; n++) {
		errno = 0;
		r[n] = secretmem_region_create(REGION, 0);
		if (!r[n]) {
			err = errno;
			break;
		}
		TL_CHECK(secretmem_region_backend(r[n]) == want, "backend %d, want %d",
			 secretmem_region_backend(r[n]), want);
		tl_fill(secretmem_region_data(r[n]), REGION, 1000 + (uint64_t)n);
	}
	printf("%s backend: %d regions of 16 KiB under a 64 KiB limit, then %s\n",
	       fallback ? "fallback" : "secret", n, n < MAXN ? strerror(err) : "no failure");
	TL_CHECK(n < MAXN, "the limit was never hit (%d regions)", n);
	TL_CHECK(err == ENOMEM, "creation failed with errno %d (%s), want ENOMEM", err, strerror(err));
	TL_CHECK(n >= 1, "not even one region fit under the limit");
	for (int i = 0; i < n; i++)
		TL_CHECK(tl_check(secretmem_region_data(r[i]), REGION, 1000 + (uint64_t)i),
			 "region %d lost its contents", i);

	/* a refusal is repeatable and a freed region gives its budget back */
	errno = 0;
	TL_CHECK(secretmem_region_create(REGION, 0) == NULL && errno == ENOMEM, "second refusal: errno %d", errno);
	rc = secretmem_region_destroy(r[n - 1]);
	TL_CHECK(rc == 0, "destroy: %s", strerror(-rc));
	r[n - 1] = secretmem_region_create(REGION, 0);
	TL_CHECK(r[n - 1] != NULL, "no region after freeing one: %s", strerror(errno));
	tl_fill(secretmem_region_data(r[n - 1]), REGION, 1000 + (uint64_t)(n - 1));
	for (int i = 0; i < n; i++) {
		TL_CHECK(tl_check(secretmem_region_data(r[i]), REGION, 1000 + (uint64_t)i),
			 "region %d lost its contents", i);
		rc = secretmem_region_destroy(r[i]);
		TL_CHECK(rc == 0, "destroy: %s", strerror(-rc));
	}
	return 0;
}

int main(void)
{
	tl_need_root("drops CAP_IPC_LOCK and sets RLIMIT_MEMLOCK in children");
	tl_need_secretmem();
	for (int fallback = 0; fallback < 2; fallback++) {
		int st = tl_run_child(child, &fallback, NULL, 0);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s backend: child %s (want a normal exit 0)",
			 fallback ? "fallback" : "secret", tl_status_str(st));
	}
	return TL_PASS;
}
