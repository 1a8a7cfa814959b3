/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * plstats.h - what libsecretmem-preload.so publishes for `secretmem status`
 * when part of the process is out of its reach (secretmem-preload(7),
 * OUT OF REACH).
 *
 * As the heap module's figures (heap/heapstats.h): one private page of a
 * memfd named SM_PRELOAD_STATS_NAME, seen as
 * "/memfd:secretmem-preload-stats (deleted)" in /proc/PID/maps and read by
 * status through /proc/PID/mem.  The module maps it only when it has
 * something to say (a process it serves in full has none); the strings are
 * written before the count or state that makes them visible.
 */
#ifndef SECRETMEM_PLSTATS_H
#define SECRETMEM_PLSTATS_H

#include <stdint.h>

#define SM_PRELOAD_STATS_NAME "secretmem-preload-stats"
#define SM_PRELOAD_STATS_MAGIC 0x31304c5250504d53ull /* "SMPPRL01" */
#define SM_PRELOAD_UNREACHED_MAX 4

enum sm_preload_state {
	SM_PRELOAD_ACTIVE = 1,   /* the module serves OpenSSL                  */
	SM_PRELOAD_INACTIVE = 2, /* another object holds OpenSSL's secure heap *
				  * functions (reason): the module stays out    */
};

struct sm_preload_stats {
	uint64_t magic;     /* SM_PRELOAD_STATS_MAGIC                         */
	uint64_t size;      /* sizeof(struct sm_preload_stats)                */
	uint64_t state;     /* enum sm_preload_state                          */
	uint64_t unreached; /* objects with their own OpenSSL out of reach    */
	char reason[256];   /* SM_PRELOAD_INACTIVE: why, one line             */
	char unreached_name[SM_PRELOAD_UNREACHED_MAX][200]; /* the first ones */
};

#endif
