/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * class.c - size classes and the page geometry they rest on.
 *
 * Owns: the page size and shift; the small classes (sizes, the size ->
 * class tables, each class's slab of 1..8 pages); the run classes (page
 * counts of large blocks carved from chunk pages, four per doubling); and
 * the room a growing realloc asks for (sm_grow_room).  All of it is written
 * once, by sm_class_init at the allocator's first use, and read without a
 * lock after that.
 */
#define _GNU_SOURCE
#include <errno.h>
#include "slabint.h"

size_t sm_page_shift, sm_page_size;

/*
 * Exact steps of 4 bytes up to 32 and then four classes per power of two:
 * the worst internal waste for a request of 16 bytes or more is under 25 %
 * (17 -> 20 wastes 15 %, 33 -> 40 17.5 %, 129 -> 160 19.4 %).
 */
const uint32_t sm_class_size[SM_NCLASS] = {
	16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128,
	160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024,
	1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096,
	5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384,
};
_Static_assert(sizeof(sm_class_size) / sizeof(sm_class_size[0]) == SM_NCLASS, "class table");

/* size -> class: by 4-byte steps up to 1024, 256-byte steps to 16 KiB */
uint8_t sm_class_by4[1024 / 4 + 1];
uint8_t sm_class_by256[SM_SMALL_MAX / 256 + 1];
uint16_t sm_slab_pages[SM_NCLASS], sm_slab_slots[SM_NCLASS];

static void init_small(size_t ps)
{
	unsigned c = 0;

	for (size_t i = 0; i <= 1024 / 4; i++) {
		while (sm_class_size[c] < i * 4)
			c++;
		sm_class_by4[i] = (uint8_t)c;
	}
	c = 0;
	for (size_t i = 0; i <= SM_SMALL_MAX / 256; i++) {
		while (sm_class_size[c] < i * 256)
			c++;
		sm_class_by256[i] = (uint8_t)c;
	}
	/* the fewest pages (1..8) whose tail waste is at most 1/8 of the slab,
	 * else the least wasteful of them */
	for (c = 0; c < SM_NCLASS; c++) {
		size_t best = 1, best_waste = SIZE_MAX;
		for (size_t n = 1; n <= 8; n++) {
			size_t bytes = n * ps, slots = bytes / sm_class_size[c];
			if (slots == 0 || slots > UINT16_MAX)
				continue;
			size_t waste = bytes - slots * sm_class_size[c];
			if (waste * 8 <= bytes) {
				best = n;
				break;
			}
			if (waste * 1000 / bytes < best_waste) {
				best_waste = waste * 1000 / bytes;
				best = n;
			}
		}
		sm_slab_pages[c] = (uint16_t)best;
		sm_slab_slots[c] = (uint16_t)(best * ps / sm_class_size[c]);
	}
}

/* ---- run classes ---------------------------------------------------------- */

/* Page counts of runs (run.c): from the smallest that holds a block just
 * above SM_SMALL_MAX up to RUN_MAX_BYTES (or what fits in a chunk between
 * two guard pages), four per doubling: 5, 6, 7, 8, 10, 12, 14, 16, 20, ...
 * pages with 4 KiB pages, at most 25 % more pages than needed. */
#define RUN_MAX_BYTES ((size_t)1 << 20)

unsigned sm_run_nclass;
uint16_t sm_run_class_pages[SM_RUN_NCLASS_MAX];
uint8_t sm_run_class_of[SM_CHUNK_MAX_PAGES + 1];
size_t sm_run_max_pages;

static void init_runs(size_t ps)
{
	size_t minp = (SM_SMALL_MAX + 16 + ps - 1) / ps, cap = RUN_MAX_BYTES / ps;
	size_t room = sm_chunk_max_pages() - 2;

	if (cap > room)
		cap = room;
	sm_run_nclass = 0;
	for (size_t p = minp; p <= cap && sm_run_nclass < SM_RUN_NCLASS_MAX; p++) {
		unsigned bits = 64u - (unsigned)__builtin_clzll(p), k = bits > 3 ? bits - 3 : 0;
		if ((p & (((size_t)1 << k) - 1)) == 0)
			sm_run_class_pages[sm_run_nclass++] = (uint16_t)p;
	}
	sm_run_max_pages = sm_run_nclass ? sm_run_class_pages[sm_run_nclass - 1] : 0;
	for (size_t p = 0, c = 0; p <= sm_run_max_pages; p++) {
		while (sm_run_class_pages[c] < p)
			c++;
		sm_run_class_of[p] = (uint8_t)c;
	}
}

size_t sm_grow_room(size_t size)
{
	size_t cap = sm_run_max_pages << sm_page_shift;

	if (size >= cap)
		return size;
	size_t want = 2 * ((size + 15) & ~(size_t)15);
	if (want <= SM_SMALL_MAX)
		return sm_class_size[sm_size_class(want)];
	/* a small block stays small: room in a run would be lost, since a
	 * block over SM_SMALL_MAX never becomes a small one in place */
	if (size <= SM_SMALL_MAX)
		return SM_SMALL_MAX;
	if (want >= cap)
		return cap;
	return (size_t)sm_run_class_pages[sm_run_class_of[(want + sm_page_size - 1) >> sm_page_shift]] << sm_page_shift;
}

int sm_class_init(size_t ps)
{
	sm_page_size = ps;
	sm_page_shift = (size_t)__builtin_ctzl(ps);
	if (SM_GRANULE < 8 * ps)
		return -ENOSYS; /* pages too large for 2 MiB chunks */
	init_small(ps);
	init_runs(ps);
	return 0;
}
