/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * api.c - the public region and backend API: handles in ordinary memory
 * around the region layer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "internal.h"

struct secretmem_region {
	struct region r;
};

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
	struct secretmem_region *h = malloc(sizeof(*h));
	if (!h)
		return NULL; /* errno ENOMEM from malloc */
	int rc = region_create(&h->r, size, 0, 1, (flags & SECRETMEM_REGION_REQUIRE_SECRET) != 0);
	if (rc) {
		free(h);
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
	free(h);
	return rc;
}
