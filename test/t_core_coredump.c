/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_coredump - a real core dump holds no byte of a region.
 *
 * A child with RLIMIT_CORE unlimited and every mapping type enabled in its
 * coredump_filter fills a region and an ordinary buffer with distinct
 * patterns and abort()s, with core_pattern pointed at a temporary directory
 * (restored afterwards).  The core must not contain the region's pattern and
 * must contain the ordinary one (so the test can tell).  Run twice: with the
 * secret backend, and with the fallback backend (memfd_secret filtered to
 * ENOSYS in the child), which relies on MADV_DONTDUMP.
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

#define PAGES 4
#define NEEDLE 64

struct job {
	int fallback;
	size_t len;
	uint64_t seed_secret, seed_plain;
};

static int child(void *arg)
{
	const struct job *j = arg;

	if (j->fallback && tl_seccomp_block(SYS_memfd_secret, ENOSYS) != 0)
		return 10;
	struct secretmem_region *r = secretmem_region_create(j->len, 0);
	if (!r)
		return 11;
	int want = j->fallback ? SECRETMEM_BACKEND_FALLBACK : SECRETMEM_BACKEND_SECRET;
	if (secretmem_region_backend(r) != want)
		return 12;
	unsigned char *plain = malloc(j->len);
	if (!plain)
		return 13;
	tl_fill(secretmem_region_data(r), j->len, j->seed_secret);
	tl_fill(plain, j->len, j->seed_plain);
	abort();
}

static char core_path[4096];

/* the core is removed on failure too (TL_FAIL exits) */
static void remove_core(void)
{
	if (core_path[0])
		tl_core_remove(core_path);
	core_path[0] = '\0';
}

static void run(int fallback)
{
	const char *name = fallback ? "fallback" : "secret";
	struct job j = { fallback, (size_t)PAGES * 4096, 0x5ec7e7c0de0001ull + (uint64_t)fallback,
			 0x0bd1a7c0de0002ull + (uint64_t)fallback };
	char *path = core_path, why[512];
	int status;

	int rc = tl_core_dump(child, &j, path, sizeof(core_path), &status, why, sizeof(why));
	if (rc == -ENOENT)
		TL_FAIL("%s backend: %s", name, why);
	if (rc)
		tl_skip(why);
	TL_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && WCOREDUMP(status),
		 "%s backend: child %s, want SIGABRT with core", name, tl_status_str(status));

	/* the patterns exist only now, after the child is gone */
	unsigned char *secret = malloc(j.len), *plain = malloc(j.len);
	if (!secret || !plain)
		TL_FAIL("out of memory");
	tl_fill(secret, j.len, j.seed_secret);
	tl_fill(plain, j.len, j.seed_plain);

	rc = tl_file_contains(path, plain, NEEDLE);
	TL_CHECK(rc == 1, "%s backend: the ordinary buffer's pattern is not in the core %s (%d)", name, path, rc);
	for (size_t off = 0; off < j.len; off += 4096) {
		rc = tl_file_contains(path, secret + off, NEEDLE);
		TL_CHECK(rc == 0, "%s backend: the region's pattern (page %zu) is in the core %s (%d)",
			 name, off / 4096, path, rc);
	}
	remove_core();
	free(secret);
	free(plain);
	printf("%s backend: core dump has the ordinary pattern, not the region's\n", name);
}

int main(void)
{
	tl_need_root("rewrites /proc/sys/kernel/core_pattern");
	tl_need_secretmem();
	atexit(remove_core);
	run(0);
	run(1);
	return TL_PASS;
}
