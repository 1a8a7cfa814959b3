/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * api.c - the public region and backend API: handles in ordinary memory
 * around the region layer.  The handles come from the allocator's metadata
 * memory, not malloc: a malloc built on this library may create regions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include "slab.h"

struct secretmem_region {
	struct region r;
};

static atomic_size_t api_count, api_bytes;

void sm_api_region_totals(size_t *count, size_t *bytes)
{
	*count = atomic_load(&api_count);
	*bytes = atomic_load(&api_bytes);
}

SM_API const char *secretmem_backend_name(int backend)
{
	switch (backend) {
	case SECRETMEM_BACKEND_NONE: return "none";
	case SECRETMEM_BACKEND_SECRET: return "secret";
	case SECRETMEM_BACKEND_FALLBACK: return "fallback";
	default: return "unknown";
	}
}

SM_API int secretmem_default_backend(void)
{
	return region_default_backend();
}

SM_API struct secretmem_region *secretmem_region_create(size_t size, unsigned int flags)
{
	if (flags & ~SECRETMEM_REGION_REQUIRE_SECRET || size == 0) {
		errno = EINVAL;
		return NULL;
	}
	sm_fork_handlers_install();
	sm_gate_check(); /* a raw child's regions start empty */
	struct secretmem_region *h = sm_meta_alloc(sizeof(*h));
	if (!h) {
		sm_failure_note(SECRETMEM_FAILURE_NOMEM, sizeof(*h));
		errno = ENOMEM;
		return NULL;
	}
	static const struct region_tally tally = { &api_count, &api_bytes };
	int rc = region_create(&h->r, size, 0, REGION_NOW, (flags & SECRETMEM_REGION_REQUIRE_SECRET) != 0, &tally);
	if (rc) {
		sm_meta_free(h, sizeof(*h));
		sm_failure_hint(); /* once, at the memory-lock limit */
		errno = -rc;
		return NULL;
	}
	return h;
}

SM_API void *secretmem_region_data(const struct secretmem_region *h)
{
	return h ? h->r.data : NULL;
}

SM_API size_t secretmem_region_size(const struct secretmem_region *h)
{
	return h ? h->r.size : 0;
}

SM_API int secretmem_region_backend(const struct secretmem_region *h)
{
	return h ? h->r.backend : SECRETMEM_BACKEND_NONE;
}

SM_API int secretmem_region_protect(struct secretmem_region *h, int access)
{
	if (!h)
		return -EINVAL;
	return region_protect(&h->r, access);
}

SM_API int secretmem_region_destroy(struct secretmem_region *h)
{
	if (!h)
		return 0;
	int rc = region_destroy(&h->r);
	sm_meta_free(h, sizeof(*h));
	return rc;
}
