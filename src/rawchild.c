/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * rawchild.c - children made without the library's fork handlers (a raw
 * clone(2) without CLONE_VM, glibc's _Fork(), a raw fork made by another
 * thread while fork() runs the handlers): telling them apart, and giving
 * them an empty, working heap.
 *
 * Such a child inherits the allocator's metadata (ordinary memory) but not
 * its secret pages (MADV_DONTFORK), and possibly locks held by threads it
 * does not have.  The gate tells it apart: one word pair in a page marked
 * MADV_WIPEONFORK, which the kernel hands to every child zeroed.  The
 * process that started the allocator sets it, and so does the library's
 * child handler; a child that never ran the handler reads zero.  malloc's
 * fast path reads gate.open (one load, in place of the count of fallback
 * regions it read before: open is 0 as well while fallback memory exists),
 * and the slow paths then read gate.setup: zero there in a child that is
 * not inside fork()'s own handlers means a raw child, whose heap is reset
 * at that first call - every lock initialized again, every region dropped
 * as under the drop policy (its address stays reserved and inaccessible),
 * the descriptor of a copy in progress closed - before the call goes on.
 * Blocks inherited from the parent are then inaccessible, as under drop.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include "internal.h"

/* The gate until the page exists (and where MADV_WIPEONFORK is missing). */
static struct sm_gate gate_static = { 1, 1 };
struct sm_gate *_Atomic sm_gate = &gate_static;
static struct sm_gate *gate_page;

/* In fork(): between the prepare handler and the parent's or child's
 * handler, the thread that forks. */
static _Atomic int in_fork;
static pthread_t fork_thread;

void sm_gate_init(void)
{
	void *p;

	if (gate_page || os_map_anon(os_page_size(), &p))
		return;
	if (os_advise(p, os_page_size(), MADV_WIPEONFORK)) {
		os_unmap(p, os_page_size()); /* a kernel before 4.14 */
		return;
	}
	gate_page = p;
	region_fork_lock(); /* the count of fallback regions holds still */
	atomic_store(&gate_page->setup, 1);
	atomic_store_explicit(&sm_gate, gate_page, memory_order_release);
	sm_gate_update();
	region_fork_unlock();
}

void sm_gate_update(void)
{
	int open = atomic_load(&sm_gate_get()->setup) && !atomic_load(&sm_fallback_regions);

	atomic_store_explicit(&sm_gate_get()->open, open, memory_order_relaxed);
}

void sm_gate_fork_begin(void)
{
	fork_thread = pthread_self();
	atomic_store(&in_fork, 1);
}

void sm_gate_fork_end(void)
{
	atomic_store(&in_fork, 0);
	atomic_store(&sm_gate_get()->setup, 1);
	sm_gate_update();
}

int sm_gate_raw_child(void)
{
	if (SM_LIKELY(atomic_load_explicit(&sm_gate_get()->setup, memory_order_relaxed)))
		return 0;
	/* fork()'s own child before the library's handler ran (another
	 * atfork child handler allocating): not a raw child */
	if (atomic_load(&in_fork) && pthread_equal(pthread_self(), fork_thread))
		return 0;
	return 1;
}

void sm_gate_check(void)
{
	/* the reset ends in the child handler, which sets the gate again
	 * (sm_gate_fork_end) */
	if (SM_UNLIKELY(sm_gate_raw_child()))
		sm_fork_raw_child_reset();
}
