/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * stats.c - secretmem_stats(): the thread caches' live blocks (tcache.c),
 * the slab layer's counters, the region layer's backend totals and the
 * memory-lock figures, gathered into the public struct.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "tcache.h"

/* The 1.0 layout: the fields added in 1.1 took reserved[] words. */
_Static_assert(sizeof(struct secretmem_stats) ==
		       offsetof(struct secretmem_stats, memlock_left) + 9 * sizeof(size_t),
	       "struct secretmem_stats changed size");

SM_API int secretmem_stats(struct secretmem_stats *st)
{
	struct sm_counters c;
	int saved = errno;

	if (!st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	sm_alloc_start();
	long live, bytes;
	sm_tcache_totals(&live, &bytes);
	sm_counters_get(&c);
	st->live_allocations = (size_t)(live > 0 ? live : 0) + c.large_live;
	st->bytes_in_use = (size_t)(bytes > 0 ? bytes : 0) + c.large_bytes;
	st->bytes_mapped = c.mapped_bytes;
	st->pages_mapped = c.mapped_bytes / os_page_size();
	st->pages_faulted = c.pages_faulted;
	st->pages_released = c.pages_released;
	st->regions = c.regions;
	st->regions_created = c.regions_created;
	region_backend_totals(&st->secret_bytes, &st->fallback_bytes);
	sm_api_region_totals(&st->api_regions, &st->api_region_bytes);
	st->last_failure = (size_t)sm_failure_last(&st->last_failure_bytes);
	if (sm_secret_new_is_off()) {
		/* heap mode under a seccomp filter that would stop the calls
		 * behind these figures: nothing new can be made, none is read */
		st->backend = SECRETMEM_BACKEND_NONE;
		errno = saved;
		return 0;
	}
	st->backend = region_default_backend();

	size_t locked;
	sm_memlock_figures(&st->memlock_unlimited, &st->memlock_limit, &locked);
	if (st->memlock_unlimited) {
		st->memlock_left = SIZE_MAX;
	} else {
		st->memlock_locked = locked;
		st->memlock_left = st->memlock_limit > locked ? st->memlock_limit - locked : 0;
	}
	errno = saved;
	return 0;
}
