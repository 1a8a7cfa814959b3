/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * meta.c - metadata memory: ordinary anonymous memory for the allocator's
 * own records (chunks, slabs, runs, large blocks, region handles), never
 * next to a secret and never from malloc.
 *
 * Power-of-two pools from 64 bytes to 128 KiB, carved from 256 KiB blocks
 * and kept on free lists; nothing goes back to the system.  Lock: sm_meta_lock,
 * the innermost of the allocator's locks (see slab.c).
 */
#define _GNU_SOURCE
#include <string.h>
#include "slabint.h"

#define META_BLOCK ((size_t)256 << 10)
#define META_MIN_SHIFT 6 /* 64 bytes */
#define META_NPOOLS 12   /* up to 128 KiB */

pthread_mutex_t sm_meta_lock = PTHREAD_MUTEX_INITIALIZER;
static void *meta_free[META_NPOOLS];
static unsigned char *meta_cur;
static size_t meta_left;

static unsigned meta_pool(size_t size)
{
	unsigned k = 0;

	while (((size_t)1 << (k + META_MIN_SHIFT)) < size)
		k++;
	return k;
}

void *sm_meta_alloc(size_t size)
{
	unsigned k = meta_pool(size);
	size_t sz = (size_t)1 << (k + META_MIN_SHIFT);
	void *p = NULL;
	int fresh = 0;

	if (k >= META_NPOOLS)
		return NULL;
	pthread_mutex_lock(&sm_meta_lock);
	if (meta_free[k]) {
		p = meta_free[k];
		meta_free[k] = *(void **)p;
	} else {
		fresh = 1;
		if (meta_left < sz) {
			void *blk;
			if (os_map_anon(META_BLOCK, &blk) == 0) {
				meta_cur = blk;
				meta_left = META_BLOCK;
			}
		}
		if (meta_left >= sz) {
			p = meta_cur;
			meta_cur += sz;
			meta_left -= sz;
		}
	}
	pthread_mutex_unlock(&sm_meta_lock);
	/* fresh memory is zero from the mmap: clearing it would fault in
	 * pages nobody touches (a chunk's page_slab array for 16 pages) */
	if (p && !fresh)
		memset(p, 0, sz);
	return p;
}

void sm_meta_put(void *p, size_t size)
{
	unsigned k = meta_pool(size);

	*(void **)p = meta_free[k];
	meta_free[k] = p;
}

void sm_meta_free(void *p, size_t size)
{
	if (!p)
		return;
	pthread_mutex_lock(&sm_meta_lock);
	sm_meta_put(p, size);
	pthread_mutex_unlock(&sm_meta_lock);
}
