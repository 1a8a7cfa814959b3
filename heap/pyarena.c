/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * pyarena.c - Python keeps its own small-object allocator (pymalloc), its
 * arenas in secret memory (secretmem-heap(7), PYTHON).
 *
 * pymalloc serves every object of up to 512 bytes (ints, short str and
 * bytes, dicts' keys) from arenas of 1 MiB (256 KiB on 32-bit builds) that
 * it maps itself: without the module's help they are ordinary memory.
 * CPython lets a program replace the arena allocator
 * (PyObject_SetArenaAllocator, a public API since 3.4, callable before the
 * interpreter starts).  The module does so when it starts, if the program
 * has Python in it (python3, or a program linked with libpython), and after
 * every dlopen() that brings libpython in (deepbind.c): an arena is then a
 * block of the module's heap (a lazy run: its pages fault when pymalloc
 * touches them, and fork copies it like any block).  Where secret memory
 * is refused, an arena comes from Python's own allocator instead, after the
 * module's one warning (plain), or not at all with SECRETMEM_REQUIRE=1
 * (pymalloc then takes each object from malloc, which gives NULL too, and
 * Python raises MemoryError); Python's allocator also frees every arena
 * that is not the module's.  One allocator per process: the first Python
 * found keeps it.
 *
 * An arena is charged to RLIMIT_MEMLOCK whole when it is mapped (1 MiB,
 * touched or not: `python3 -c pass` holds two), where malloc'ed objects
 * take only the pages they fill.  So at start-up, under a memory-lock limit
 * below ARENA_ROOM (8 MiB for ordinary users on Debian), the module sets
 * PYTHONMALLOC=malloc instead (before Python reads it; inherited by the
 * programs it runs), and every object comes from its malloc; and it leaves
 * a PYTHONMALLOC the program was given alone: "malloc" or "malloc_debug"
 * turn pymalloc off (nothing to do), any other value keeps it (the hook).
 * A libpython that a dlopen() brings in later always gets the hook:
 * setenv() is not safe once threads may run.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "hp.h"
#include "internal.h"

#define ARENA_ROOM ((size_t)32 << 20)

/* CPython's PyObjectArenaAllocator (Include/cpython/objimpl.h), stable
 * since 3.4. */
struct py_arena_allocator {
	void *ctx;
	void *(*alloc)(void *ctx, size_t size);
	void (*free)(void *ctx, void *ptr, size_t size);
};

static struct py_arena_allocator python_own;
static int installed;

static void *arena_alloc(void *ctx, size_t size)
{
	int plain;
	void *p = hp_arena_alloc(size, &plain);

	(void)ctx;
	if (!p && plain)
		p = python_own.alloc(python_own.ctx, size);
	return p;
}

static void arena_free(void *ctx, void *p, size_t size)
{
	(void)ctx;
	if (!hp_arena_free(p))
		python_own.free(python_own.ctx, p, size);
}

/* At start-up: 1 to give Python its arenas, 0 when pymalloc is off (set
 * off here under a small memory-lock limit). */
static int arenas_at_start(void)
{
	const char *pm = getenv("PYTHONMALLOC");
	int unlimited;
	size_t limit, locked;

	if (pm && *pm)
		return strcmp(pm, "malloc") != 0 && strcmp(pm, "malloc_debug") != 0;
	sm_memlock_figures(&unlimited, &limit, &locked);
	if (unlimited || limit >= ARENA_ROOM)
		return 1;
	if (setenv("PYTHONMALLOC", "malloc", 0) == 0)
		hp_python_mode(HP_PYTHON_MALLOC);
	return 0;
}

void hp_python_arenas(void *handle, int at_start)
{
	static struct py_arena_allocator ours = { NULL, arena_alloc, arena_free };
	void (*get)(struct py_arena_allocator *);
	void (*set)(struct py_arena_allocator *);

	if (__atomic_load_n(&installed, __ATOMIC_ACQUIRE))
		return;
	*(void **)&get = dlsym(handle, "PyObject_GetArenaAllocator");
	*(void **)&set = dlsym(handle, "PyObject_SetArenaAllocator");
	if (!get || !set || (at_start && !arenas_at_start()))
		return;
	/* one installer: two threads' dlopen() of libpython at once */
	if (__atomic_exchange_n(&installed, 1, __ATOMIC_ACQ_REL))
		return;
	get(&python_own);
	set(&ours);
	hp_python_mode(HP_PYTHON_ARENAS);
}
