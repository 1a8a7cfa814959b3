/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_fds - no fd stays open per region.
 *
 * Create and destroy 10,000 one-page regions (and hold 100 at once): the
 * number of open file descriptors is the same before and after, and no
 * region mapping is left in /proc/self/maps.
 */
#include <errno.h>
#include <string.h>
#include "secretmem.h"
#include "tlib.h"

#define ROUNDS 10000
#define HELD 100

int main(void)
{
	struct secretmem_region *held[HELD];

	tl_need_secretmem();
	/* warm-up: stdio, malloc arenas, the fork handlers */
	struct secretmem_region *w = secretmem_region_create(1, 0);
	TL_CHECK(w != NULL, "create: %s", strerror(errno));
	TL_CHECK(secretmem_region_destroy(w) == 0, "destroy");
	int fds0 = tl_count_fds(), maps0 = tl_maps_count();

	for (int i = 0; i < ROUNDS; i++) {
		struct secretmem_region *r = secretmem_region_create(4096, 0);
		TL_CHECK(r != NULL, "round %d: create: %s", i, strerror(errno));
		TL_CHECK(secretmem_region_backend(r) == SECRETMEM_BACKEND_SECRET, "round %d: backend %d", i,
			 secretmem_region_backend(r));
		((volatile unsigned char *)secretmem_region_data(r))[i % 4096] = (unsigned char)i;
		int rc = secretmem_region_destroy(r);
		TL_CHECK(rc == 0, "round %d: destroy: %s", i, strerror(-rc));
		if (i % 1000 == 0) {
			int fds = tl_count_fds();
			TL_CHECK(fds == fds0, "round %d: %d fds open, %d before", i, fds, fds0);
		}
	}
	for (int i = 0; i < HELD; i++) {
		held[i] = secretmem_region_create(4096, 0);
		TL_CHECK(held[i] != NULL, "held %d: create: %s", i, strerror(errno));
	}
	int fds = tl_count_fds();
	TL_CHECK(fds == fds0, "%d regions alive: %d fds open, %d before", HELD, fds, fds0);
	for (int i = 0; i < HELD; i++)
		TL_CHECK(secretmem_region_destroy(held[i]) == 0, "destroy held %d", i);

	fds = tl_count_fds();
	int maps = tl_maps_count();
	TL_CHECK(fds == fds0, "after %d regions: %d fds open, %d before", ROUNDS, fds, fds0);
	TL_CHECK(maps == maps0, "after %d regions: %d mappings, %d before", ROUNDS, maps, maps0);
	printf("%d regions created and destroyed: %d fds and %d mappings, as before\n", ROUNDS, fds, maps);
	return TL_PASS;
}
