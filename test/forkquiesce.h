/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * forkquiesce.h - fork while two threads replace published blocks (for
 * t_alloc_fork_quiesce and t_heap_fork_edges): does a child find each
 * published block with the contents it was published with?
 */
#ifndef SECRETMEM_FORKQUIESCE_H
#define SECRETMEM_FORKQUIESCE_H

#include <stddef.h>

/*
 * Start two threads that replace 64 published 48-byte blocks all the time
 * (alloc, tag, publish, release the old one) with alloc/release, under a
 * mutex of the program's.  Call after the allocator's first call: the
 * pthread_atfork(3) handlers it registers (take that mutex in prepare,
 * give it back after) then run their prepare part before the allocator's.
 */
void fq_start(void *(*alloc)(size_t), void (*release)(void *));
/* Fork `forks` times, the threads held by the handlers (held 1, as they
 * start) or not (held 0; their mutex is then not taken at all): how many
 * children found a published block with other contents.  Hold first,
 * then not: a switch to held can meet a thread in a step it began
 * unheld. */
int fq_torn_children(int held, int forks);
/* Stop and join the threads. */
void fq_stop(void);

#endif
