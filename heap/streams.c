/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * streams.c - fork and the program's open streams.
 *
 * A FILE that fopen(3) (fdopen, popen, open_memstream, fmemopen,
 * fopencookie...) makes is a heap block, so in heap mode it lives in secret
 * memory, which a child does not inherit (MADV_DONTFORK): the library's
 * child handler maps the child's copy of the heap (fork.c).  But glibc's
 * fork() (posix/fork.c since 2.34; 2.36 here), in a process that has had a
 * second thread, resets the lock of every stream on its list (_IO_list_all
 * through _chain) in the child right after the system call, before any
 * pthread_atfork child handler runs: it would read and write the heap
 * before the child has one, and the child would die of SIGSEGV.
 *
 * So, around glibc's own walk, the streams in the allocator's memory
 * (sm_in_our_memory) are taken off the list, and the child resets their
 * locks itself once its heap is in place, the way glibc does: a stream with
 * _IO_USER_LOCK (__fsetlocking) is left alone, and the list lock is not
 * touched (glibc's child resets it).  The other streams (stdin, stdout,
 * stderr live in glibc's data) stay on the list in their order, and glibc
 * resets them at its usual time.
 *
 * Where: three pthread_atfork handlers registered right after the
 * library's (heap.c's start-up), so that
 *  - prepare runs after the prepare handlers of the program and of every
 *    library that registered later (they see every stream, may open,
 *    flush and close them, and may take locks of their own that another
 *    thread holds while it opens a stream: glibc takes the list lock after
 *    them too, for that reason) and before the library's, which takes the
 *    allocator's locks: the list lock comes first, as in glibc's fork();
 *  - the child handler runs after the library's (the heap is the child's)
 *    and before the program's, which see every stream, unlocked;
 *  - the parent handler runs whether or not the child got its heap: when
 *    it did not, the library's handler ended it and fork() fails with
 *    ENOMEM (hfork.c), with the list as it was.
 * (Around the real fork in hfork.c would have held the list lock across
 * the program's prepare handlers, and left its child handlers with the
 * streams off the list and their locks as the parent's threads held them.)
 *
 * prepare takes the list lock (_IO_list_lock, recursive: glibc's fork takes
 * it again on the same thread), and only then reads and changes the list;
 * the parent's handler puts every changed link back as it was and unlocks.
 * Meanwhile other threads that open or close a stream, flush them all or
 * exit wait for the lock; reading and writing a stream takes only that
 * stream's lock and goes on.  A signal handler that runs on the forking
 * thread in between sees the list without the heap's streams; it may not
 * open or close one (fopen and fclose are not async-signal-safe).  No
 * cancellation point lies between the lock and the unlock (the library's
 * prepare handler turns cancellation off until its parent or child
 * handler, and nothing runs between those and these), so a deferred
 * cancellation cannot leave the lock held.
 *
 * Only a link from an ordinary stream (or _IO_list_all) ever changes, and
 * each at most once: LINKS of them are remembered in static memory.  A
 * list that would need more (more than LINKS - 1 runs of the heap's
 * streams between ordinary ones: a program that opened streams while
 * secret memory was refused) is cut after the last ordinary stream that
 * fits: from there on every stream, ordinary or not, is off glibc's list,
 * and the child resets their locks itself too, a little later than glibc
 * would (after the library's child handler).
 *
 * Nothing is done while the process has had no second thread: glibc then
 * resets nothing.  Its flag (__libc_single_threaded) and its list are read
 * where glibc's own code reads them, at their addresses in libc.so.6
 * (dlsym(RTLD_NEXT): the objects after this module, not the program):
 * a program that names either has a copy of it
 * in its own data (a copy relocation), which libc's code never reads
 * again.  glibc's fork() reads the flag before the prepare handlers, this
 * file in its prepare handler; they differ only for a prepare handler that creates
 * the process's first thread.  Without either symbol (not glibc, or glibc
 * before 2.32) the handlers are not registered.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include "internal.h"
#include "hp.h"

/* glibc's (GLIBC_2.2.5): the list lock. */
extern void _IO_list_lock(void);
extern void _IO_list_unlock(void);

/* libc's own _IO_list_all (the list of open streams) and
 * __libc_single_threaded (GLIBC_2.32). */
static FILE **list_all;
static const volatile char *single_threaded;

/* glibc's stream lock (libio's _IO_lock_t: what fp->_lock points to),
 * reset to all zero; and the flag of a stream that does its own locking. */
struct stream_lock {
	int lock;
	int cnt;
	void *owner;
};
#define STREAM_USER_LOCK 0x8000

#define LINKS 64

/* The state of one fork, written with the list lock held. */
static struct {
	FILE **at; /* _IO_list_all or an ordinary stream's _chain */
	FILE *was;
} links[LINKS];
static unsigned nlinks;
static FILE *cut;   /* the first stream of a list cut at LINKS, or NULL */
static int active;  /* the streams are off the list for this fork */

static int in_heap(const FILE *fp)
{
	return sm_in_our_memory(fp);
}

static void set_link(FILE **at, FILE *to)
{
	links[nlinks].at = at;
	links[nlinks].was = *at;
	nlinks++;
	*at = to;
}

static void streams_prepare(void)
{
	active = !*single_threaded;
	if (!active)
		return;
	_IO_list_lock();
	nlinks = 0;
	cut = NULL;
	/* at: the link to the next stream glibc's walk will see */
	FILE **at = list_all;
	for (FILE *fp = *list_all; fp; fp = fp->_chain) {
		if (in_heap(fp))
			continue;
		if (*at != fp) {
			if (nlinks == LINKS - 1) {
				cut = *at;
				break;
			}
			set_link(at, fp);
		}
		at = &fp->_chain;
	}
	if (*at)
		set_link(at, NULL);
}

static void restore(void)
{
	while (nlinks) {
		nlinks--;
		*links[nlinks].at = links[nlinks].was;
	}
}

static void streams_parent(void)
{
	if (!active)
		return;
	restore();
	_IO_list_unlock();
}

static void streams_child(void)
{
	if (!active)
		return;
	restore();
	int past = 0;
	for (FILE *fp = *list_all; fp; fp = fp->_chain) {
		past |= fp == cut;
		if (!past && !in_heap(fp))
			continue; /* glibc reset it */
		if ((fp->_flags & STREAM_USER_LOCK) || !fp->_lock)
			continue;
		*(struct stream_lock *)fp->_lock = (struct stream_lock){ 0, 0, NULL };
	}
	/* the list lock: glibc's child reset it (held twice, by this thread
	 * and by glibc's fork) */
}

void hp_streams_install(void)
{
	/* RTLD_NEXT: the next definitions after this module, libc's own (a
	 * dlopen of libc would allocate, here in the module's start, from
	 * its early arena) */
	list_all = dlsym(RTLD_NEXT, "_IO_list_all");
	single_threaded = dlsym(RTLD_NEXT, "__libc_single_threaded");
	if (list_all && single_threaded)
		pthread_atfork(streams_prepare, streams_parent, streams_child);
}
