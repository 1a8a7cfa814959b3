/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_stats_regions - secretmem_stats() counts everything the process
 * holds (issue 10, item 10): regions of secretmem_region_create() in
 * api_regions/api_region_bytes, and every byte by backend, so that
 * secret_bytes + fallback_bytes = bytes_mapped + api_region_bytes; the
 * allocator's own fields (regions = chunks and large blocks) keep their
 * meaning.  Checked with secret memory and, in a child under a seccomp
 * filter, with the fallback backend.
 */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "secretmem.h"
#include "tlib.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

static void check(const char *name, int backend)
{
	struct secretmem_stats st, st0;
	struct secretmem_region *r[3];
	static const size_t sizes[3] = { 4096, 8192, 3 * 4096 - 1 };

	TL_CHECK(secretmem_stats(&st0) == 0, "stats");
	for (int i = 0; i < 3; i++) {
		r[i] = secretmem_region_create(sizes[i], 0);
		TL_CHECK(r[i], "%s: region %d: %s", name, i, strerror(errno));
		TL_CHECK(secretmem_region_backend(r[i]) == backend, "%s: region %d backend %s", name, i,
			 secretmem_backend_name(secretmem_region_backend(r[i])));
	}
	void *small = secretmem_malloc(32), *large = secretmem_malloc(100000);
	TL_CHECK(small && large, "%s: malloc: %s", name, strerror(errno));
	TL_CHECK(secretmem_stats(&st) == 0, "stats");
	TL_CHECK(st.api_regions == st0.api_regions + 3, "%s: api_regions %zu, want %zu", name, st.api_regions,
		 st0.api_regions + 3);
	TL_CHECK(st.api_region_bytes == st0.api_region_bytes + 4096 + 8192 + 3 * 4096,
		 "%s: api_region_bytes %zu", name, st.api_region_bytes);
	TL_CHECK(st.regions >= 2, "%s: allocator mappings %zu (a chunk and a large block)", name, st.regions);
	TL_CHECK(st.secret_bytes + st.fallback_bytes == st.bytes_mapped + st.api_region_bytes,
		 "%s: secret %zu + fallback %zu != allocator %zu + regions %zu", name, st.secret_bytes,
		 st.fallback_bytes, st.bytes_mapped, st.api_region_bytes);
	size_t mine = backend == SECRETMEM_BACKEND_SECRET ? st.secret_bytes : st.fallback_bytes;
	size_t other = backend == SECRETMEM_BACKEND_SECRET ? st.fallback_bytes : st.secret_bytes;
	TL_CHECK(mine == st.bytes_mapped + st.api_region_bytes && other == 0,
		 "%s: %s bytes %zu, other backend %zu", name, secretmem_backend_name(backend), mine, other);
	printf("%s: %zu regions (%zu bytes) and %zu allocator mappings (%zu bytes): %zu secret, %zu fallback\n",
	       name, st.api_regions, st.api_region_bytes, st.regions, st.bytes_mapped, st.secret_bytes,
	       st.fallback_bytes);
	secretmem_region_destroy(r[1]);
	TL_CHECK(secretmem_stats(&st) == 0, "stats");
	TL_CHECK(st.api_regions == st0.api_regions + 2 && st.api_region_bytes == st0.api_region_bytes + 4 * 4096,
		 "%s: after destroying one: %zu regions, %zu bytes", name, st.api_regions, st.api_region_bytes);
	secretmem_region_destroy(r[0]);
	secretmem_region_destroy(r[2]);
	secretmem_free(small);
	secretmem_free(large);
	secretmem_trim();
	TL_CHECK(secretmem_stats(&st) == 0, "stats");
	TL_CHECK(st.api_regions == st0.api_regions && st.secret_bytes + st.fallback_bytes == st.bytes_mapped +
			st.api_region_bytes, "%s: after destroying all: %zu regions", name, st.api_regions);
}

static int fallback_case(void *arg)
{
	(void)arg;
	if (tl_seccomp_block(SYS_memfd_secret, EPERM) != 0)
		TL_FAIL("seccomp filter: %s", strerror(errno));
	check("fallback (filter EPERM)", SECRETMEM_BACKEND_FALLBACK);
	struct secretmem_stats st;
	TL_CHECK(secretmem_stats(&st) == 0 && st.last_failure == SECRETMEM_FAILURE_SANDBOX,
		 "last_failure %zu, want SANDBOX", st.last_failure);
	return 0;
}

int main(void)
{
	static char out[8192];

	if (!tl_under_valgrind()) {
		int st = tl_run_child(fallback_case, NULL, out, sizeof(out));
		fputs(out, stdout);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fallback case: %s", tl_status_str(st));
	}
	tl_need_secretmem();
	check("secret", SECRETMEM_BACKEND_SECRET);
	return TL_PASS;
}
