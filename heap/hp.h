/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * hp.h - what the files of libsecretmem-heap.so share (heap.c is the
 * allocator; see its opening comment):
 *   winner.c    which malloc the process binds: when another allocator
 *               holds it, the module hands every call to that allocator
 *   deepbind.c  dlopen(): a library opened with RTLD_DEEPBIND gets the
 *               module's malloc too
 *   mmcalls.c   mlock, mmap and the other memory calls: memory the
 *               program locks becomes secret memory (adopt.c)
 *   pyarena.c   Python's small-object allocator gets its arenas from the
 *               module
 *   stackclear.c a thread's dead stack frames and its vector registers are
 *               zeroed (before it waits, when it ends)
 *   waits.c     the calls that wait: when the stack is cleared
 *   sandbox.c   seccomp filters: the clearing then makes no system call
 *   streams.c   fork and the program's open streams
 *   filtercheck.c  a seccomp filter read before it is installed
 */
#ifndef SECRETMEM_HP_H
#define SECRETMEM_HP_H

#include <signal.h>
#include <stddef.h>

/* Write "secretmem-heap: warning: <msg>\n" to stderr with one write(2). */
void hp_say(const char *msg);

/* 1 when the module is active: it serves the process's malloc. */
int hp_serving(void);

/* Start the module if it has not (the first call of the process may be a
 * memory call: mmcalls.c); nothing while the thread is inside it. */
void hp_start(void);
/* The adopted ranges' figures (mmcalls.c) to the figures page. */
void hp_adopt_figures(void);
/* mmcalls.c: the warning about locked ranges not made secret is said
 * already (heap.c's, when the heap starts in the fallback). */
void hp_lock_refusal_said(void);
/* mmcalls.c: lock [addr, addr+len) again as the program's mlock would
 * (made secret, or locked by the kernel, or the one warning), for the
 * object by that locked it first: a locked block of glibc's that realloc
 * moved.  0 or -errno. */
int hp_lock_again(const void *addr, size_t len, const char *by);

/* Python's arenas (pyarena.c): a secret block of size bytes, or NULL; then
 * *plain is 1 when the arena may be ordinary memory instead (the module's
 * warning was given; 0 with SECRETMEM_REQUIRE=1, errno ENOMEM). */
void *hp_arena_alloc(size_t size, int *plain);
/* Free p if it is a block of the module's secret heap: 1, else 0. */
int hp_arena_free(void *p);
/* The figures page: how Python's small objects reach the module (bits:
 * its arenas come from the module; PYTHONMALLOC=malloc at start). */
enum { HP_PYTHON_ARENAS = 1, HP_PYTHON_MALLOC = 2 };
void hp_python_mode(int mode);
/* secretmem status: whether stacks are cleared (heapstats.h's stacks: 0
 * no, 1 yes, 2 yes under a seccomp filter), a filter seen, one more
 * clearing. */
void hp_stack_mode(int mode);
void hp_stack_sandboxed(void);
void hp_stack_cleared(void);

/* ---- stackclear.c --------------------------------------------------------- */

/* 1 when stacks are cleared (the module serves, SECRETMEM_HEAP_STACKS is
 * not 0). */
int hp_stack_on(void);
/* The calling thread is about to wait: zero its stack below the caller
 * (the pages that hold memory) and its vector registers; errno is kept. */
void hp_stack_clear(void);

/* ---- waits.c ---------------------------------------------------------------- */

/* Find glibc's functions behind the waits (at the module's start). */
void hp_waits_resolve(void);

/* ---- streams.c ------------------------------------------------------------ */

/* Register the fork handlers that keep glibc's fork() off the streams in
 * the heap (right after the library's own handlers). */
void hp_streams_install(void);

/* ---- sandbox.c ------------------------------------------------------------ */

/* 1 once the process has (or may have) a seccomp filter. */
int hp_sandboxed(void);
/* A filter is (or may be) in place. */
void hp_sandbox_seen(void);
/* Around the program's call that may install seccomp mode `mode` (prctl's
 * PR_SET_SECCOMP argument; SYS_seccomp's operation as that mode), prog its
 * filter: before it, and after it with its result (0: installed).  The
 * library's call gate (src/callgate.c) is closed in between: nothing may
 * allocate or take a lock there. */
void hp_sandbox_before(unsigned long mode, const void *prog);
void hp_sandbox_after(long result, unsigned long mode, const void *prog);
/* filtercheck.c: 1 when the filter lets the library make new secret
 * memory (kills or traps none of its calls), else 0. */
int hp_filter_check(const void *prog);
/* Read the process's seccomp state (/proc/self/status), find glibc's
 * prctl. */
void hp_sandbox_check(void);

/* A sigaltstack(2) call of the program's succeeded with ss (also one made
 * through syscall(2): mmcalls.c). */
void hp_stack_altstack(const stack_t *ss);

/* The definition of name that this module's stands in front of (glibc's),
 * found at the first call: real_name, set by resolve_name(). */
#define HP_REAL(name)                                                              \
	static __typeof__(name) *real_##name;                                      \
	static void resolve_##name(void)                                           \
	{                                                                          \
		if (__builtin_expect(!__atomic_load_n(&real_##name, __ATOMIC_RELAXED), 0)) \
			__atomic_store_n(&real_##name,                             \
					 (__typeof__(name) *)dlsym(RTLD_NEXT, #name), \
					 __ATOMIC_RELAXED);                        \
	}

/* ---- pyarena.c ------------------------------------------------------------ */

/* If a loaded object has CPython's arena allocator API, make the module
 * its arena allocator, once per process; at_start: the module's start-up
 * (its constructor), where a small memory-lock limit sets
 * PYTHONMALLOC=malloc instead (pyarena.c). */
void hp_python_arenas(int at_start);

/* ---- winner.c ------------------------------------------------------------- */

/* 1 when LD_PRELOAD or /etc/ld.so.preload names libsecretmem-heap.so: the
 * module was asked for, not dlopen()ed by someone. */
int hp_requested(void);
/* 1 if LD_PRELOAD or /etc/ld.so.preload (the two ways a module gets in
 * before main()) names a file called name. */
int hp_preloads(const char *name);

enum hp_win {
	HP_WIN_US = 0,    /* the module's malloc is the process's, glibc's is next */
	HP_WIN_OTHER = 1, /* another allocator: every call goes to it            */
	HP_WIN_TWIN = 2,  /* another copy of this module wins: say nothing       */
};

/*
 * Which malloc the process binds, at start-up.  HP_WIN_OTHER fills reason (one line, for the warning and the figures
 * page), points *advice at what the user can do (take it out of
 * LD_PRELOAD, or nothing: the program links it or is it) and sets up
 * hp_other_*: the other allocator's own functions.  Call only while
 * re-entry is routed to the early arena (dlsym may allocate).
 */
int hp_winner_check(char *reason, size_t len, const char **advice);

/* The other allocator's functions (after HP_WIN_OTHER).  align: a power of
 * two; zero: clear the block.  NULL with errno ENOMEM when it has no
 * function for the request. */
void *hp_other_alloc(size_t align, size_t size, int zero);
void hp_other_free(void *p);
void *hp_other_realloc(void *p, size_t size);
/* Its malloc_usable_size, or 0 when it has none. */
size_t hp_other_usable(void *p);

#endif
