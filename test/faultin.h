/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * faultin.h - steps shared by the fault-in tests (t_alloc_fault_touch,
 * t_alloc_fault_read): each runs a step and reports what the allocator
 * faulted meanwhile; the tests assert what their regime must show.
 */
#ifndef SECRETMEM_FAULTIN_H
#define SECRETMEM_FAULTIN_H

#include <stddef.h>
#include "secretmem.h"

/* Pages faulted in by os_fault_in_secret during a step. */
struct fi_counts {
	size_t touched, read; /* by user-space touch, from the kernel side */
	long calls;           /* os_fault_in_secret calls (fi_refuse_once:
			       * since its injection) */
};

/* One 32-byte secret, then freed; *faulted: the allocator's pages_faulted
 * after it (the process had none before). */
void fi_one_secret(size_t *faulted, struct fi_counts *c);
/* n 32-byte secrets, each written, into blk; *st: the statistics after. */
void fi_grow(void **blk, int n, struct secretmem_stats *st, struct fi_counts *c);
/* malloc(big) with the next fault-in refused (injected EFAULT): fails the
 * test unless NULL with ENOMEM; *calls_refused: the injection counter then.
 * Then malloc(big) must succeed; freed. */
void fi_refuse_once(size_t big, long *calls_refused, struct fi_counts *c);

#endif
