/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_quiesce - the copy policy copies secret memory in fork()'s
 * prepare handler while the parent's other threads run (secretmem(7),
 * FORK): a block written after the copy can reach the child with its
 * contents from before, although the pointer to it, in ordinary memory,
 * is the one of fork()'s moment.  The remedy secretmem(7) gives: a
 * pthread_atfork(3) prepare handler of the program, registered after the
 * library's first call (so run before the library's), that keeps its
 * threads from writing secrets until fork() returns.
 *
 * Two threads replace published secretmem_malloc() blocks all the time
 * (forkquiesce.c); the program's handlers hold them during each of 200
 * forks: every child must find each published block as it was published.
 * Then, for the record, 200 forks without holding them: how many children
 * found a block with other contents (printed, not checked: it depends on
 * the timing).  t_heap_fork_edges does the same in heap mode.
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include "forkquiesce.h"
#include "secretmem.h"
#include "tlib.h"

#define FORKS 200

int main(void)
{
	tl_signal_default(SIGALRM);
	alarm(120); /* handlers registered in the wrong order deadlock */
	secretmem_free(secretmem_malloc(1)); /* the library's handlers first */
	fq_start(secretmem_malloc, secretmem_free);
	int torn = fq_torn_children(1, FORKS);
	printf("writers held by the program's prepare handler: %d of %d children found a block with other contents\n",
	       torn, FORKS);
	TL_CHECK(torn == 0, "a child found a block written after the copy, with the writers held");
	torn = fq_torn_children(0, FORKS);
	printf("writers not held: %d of %d (for the record: it depends on the timing)\n", torn, FORKS);
	fq_stop();
	return 0;
}
