/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_require_late - secretmem_set_require(1) at run time places no new
 * block in fallback memory that already exists (issue 10, item 7).
 *
 *  - mixed: fallback memory made by a simulated refusal of memfd_secret
 *    (fault injection) - a chunk with free slots in the thread cache and a
 *    freed large run in the cache - while secret memory works; after
 *    set_require(1) every new small and large block lies in secret memory
 *    (/proc/self/maps names the mapping /secretmem), the old blocks stay;
 *  - all fallback (a seccomp filter refuses memfd_secret before first use):
 *    after set_require(1) malloc fails with EPERM instead of handing out a
 *    slot of the fallback chunk or the cached large run; set_require(0)
 *    allows it again.
 */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "internal.h"
#include "secretmem.h"
#include "tlib.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

static int in_secret(const void *p)
{
	char line[512];

	TL_CHECK(tl_maps_line(p, line, sizeof(line)) == 0, "no mapping at %p", p);
	return strstr(line, "secretmem") != NULL;
}

static int mixed(void *arg)
{
	(void)arg;
	tl_need_secretmem();
	/* every memfd_secret call fails as if refused, until disarmed */
	sm_inject_fault(OS_OP_MEMFD, 1, EPERM, 1);
	unsigned char *old = secretmem_malloc(32);
	unsigned char *big = secretmem_malloc(64 << 10);
	TL_CHECK(old && big, "fallback blocks: %s", strerror(errno));
	TL_CHECK(!in_secret(old) && !in_secret(big), "the injected refusal did not make fallback memory");
	secretmem_free(big); /* a fallback run in the large cache */
	sm_inject_fault(OS_OP_MEMFD, 0, 0, 0);
	old[0] = 0x5a;

	TL_CHECK(secretmem_set_require(1) == 0, "set_require(1)");
	void *blocks[300];
	for (int i = 0; i < 300; i++) {
		blocks[i] = secretmem_malloc(32);
		TL_CHECK(blocks[i], "block %d under REQUIRE: %s", i, strerror(errno));
		TL_CHECK(in_secret(blocks[i]), "block %d at %p is in fallback memory after set_require(1)", i,
			 blocks[i]);
	}
	void *big2 = secretmem_malloc(64 << 10);
	TL_CHECK(big2, "large block under REQUIRE: %s", strerror(errno));
	TL_CHECK(in_secret(big2), "large block %p reuses a fallback run after set_require(1)", big2);
	TL_CHECK(old[0] == 0x5a && secretmem_owns(old), "the old fallback block changed");
	for (int i = 0; i < 300; i++)
		secretmem_free(blocks[i]);
	secretmem_free(big2);
	secretmem_free(old);
	printf("mixed: 300 small and 1 large block in secret memory after set_require(1)\n");
	return 0;
}

static int all_fallback(void *arg)
{
	(void)arg;
	if (tl_seccomp_block(SYS_memfd_secret, EPERM) != 0)
		TL_FAIL("seccomp filter: %s", strerror(errno));
	void *old = secretmem_malloc(32), *big = secretmem_malloc(64 << 10);
	TL_CHECK(old && big, "fallback blocks: %s", strerror(errno));
	secretmem_free(big);
	TL_CHECK(secretmem_set_require(1) == 0, "set_require(1)");
	errno = 0;
	void *p = secretmem_malloc(32);
	TL_CHECK(!p && errno == EPERM, "small block under REQUIRE: %p (%s), want NULL/EPERM", p, strerror(errno));
	errno = 0;
	p = secretmem_malloc(64 << 10);
	TL_CHECK(!p && errno == EPERM, "large block under REQUIRE: %p (%s), want NULL/EPERM", p, strerror(errno));
	TL_CHECK(secretmem_set_require(0) == 0, "set_require(0)");
	p = secretmem_malloc(32);
	TL_CHECK(p, "small block after set_require(0): %s", strerror(errno));
	secretmem_free(p);
	secretmem_free(old);
	printf("all fallback: REQUIRE refuses with EPERM, nothing from the fallback chunk or cache\n");
	return 0;
}

int main(void)
{
	static char out[16384];
	int st = tl_run_child(mixed, NULL, out, sizeof(out));

	fputs(out, stdout);
	if (WIFEXITED(st) && WEXITSTATUS(st) == TL_SKIP)
		tl_skip_kernel("no memfd_secret here");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "mixed: %s", tl_status_str(st));
	if (tl_under_valgrind())
		tl_skip("valgrind answers memfd_secret(2) itself (the filter case needs the real call)");
	st = tl_run_child(all_fallback, NULL, out, sizeof(out));
	fputs(out, stdout);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "all fallback: %s", tl_status_str(st));
	return TL_PASS;
}
