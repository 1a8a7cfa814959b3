/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * heapstats.h - the figures libsecretmem-heap.so keeps for `secretmem status`.
 *
 * The module maps one page of a memfd named SM_HEAP_STATS_NAME privately
 * (MAP_PRIVATE: a fork child gets its own copy-on-write page), so that the
 * page shows as "/memfd:secretmem-heap-stats (deleted)" in /proc/PID/maps of
 * every process the module runs in, and status reads it through
 * /proc/PID/mem.  The module writes it only on slow paths (a region created
 * or destroyed, a block in ordinary memory); every field is a 64-bit word
 * written with relaxed atomic stores, except reason, written once before
 * state becomes SM_HEAP_INACTIVE.
 */
#ifndef SECRETMEM_HEAPSTATS_H
#define SECRETMEM_HEAPSTATS_H

#include <stdint.h>

#define SM_HEAP_STATS_NAME "secretmem-heap-stats"
#define SM_HEAP_STATS_MAGIC 0x3130504145484d53ull /* "SMHEAP01" */

enum sm_heap_state {
	SM_HEAP_ACTIVE = 1,     /* blocks go to secret memory                 */
	SM_HEAP_STOOD_DOWN = 2, /* the OpenSSL preload module is loaded too:  *
				 * this module serves everything from glibc    */
	SM_HEAP_INACTIVE = 3,   /* another allocator holds malloc (reason):   *
				 * every block goes to it (heap/winner.c)      */
};

struct sm_heap_stats {
	uint64_t magic;           /* SM_HEAP_STATS_MAGIC                          */
	uint64_t size;            /* sizeof(struct sm_heap_stats)                 */
	uint64_t state;           /* enum sm_heap_state                           */
	uint64_t require;         /* SECRETMEM_REQUIRE: NULL instead of plain      */
	uint64_t huge_threshold;  /* blocks above it are plain (0: none)           */
	uint64_t secret_bytes;    /* mapped secret memory of the allocator         */
	uint64_t fallback_bytes;  /* mapped locked fallback memory                 */
	uint64_t plain_bytes;     /* live blocks in ordinary memory (glibc), bytes */
	uint64_t plain_blocks;    /* ... and how many                              */
	uint64_t huge_allocs;     /* blocks sent to plain for their size (count)   */
	uint64_t early_bytes;     /* served from the static arena (.bss), bytes    */
	uint64_t early_blocks;
	uint64_t refusals;        /* blocks sent to plain because secret memory
				     was refused (count)                          */
	uint64_t warn_limit;      /* RLIMIT_MEMLOCK at the first refusal (or ~0)   */
	uint64_t warn_secret;     /* secret bytes in use at the first refusal      */
	/* from here on: present when size covers it (older modules: zeros) */
	uint64_t deferred_frees;  /* free()s of a signal handler that interrupted
				     the allocator on its thread, done later     */
	char reason[256];         /* SM_HEAP_INACTIVE: why, one line, NUL-ended    */
	/* from here on: modules of 1.3 on (present when size covers them) */
	uint64_t adopted_ranges;  /* ranges the program locked, made secret      */
	uint64_t adopted_bytes;   /* ... their bytes (not in secret_bytes)       */
	/* from here on: modules of 1.4 on */
	uint64_t python;          /* bits: 1 Python's arenas come from the
				     module, 2 PYTHONMALLOC=malloc at start
				     (set by the module or given)            */
	/* from here on: modules of 1.1 on */
	uint64_t stacks;          /* 1: dead stack frames cleared before waits,
				     2: that, and a seccomp filter seen (only
				     pages seen before are cleared), 0: not
				     (SECRETMEM_HEAP_STACKS=0); no stack is
				     ever secret memory                       */
	uint64_t stack_clearings; /* clearings made, all threads              */
};

#endif
