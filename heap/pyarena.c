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
 * interpreter starts).  The module does so in its constructor, before
 * main(), if the program has Python in it (python3, or a program linked
 * with libpython), and after every dlopen() that brings libpython in
 * (deepbind.c); the functions are found in the loaded objects' symbol
 * tables (dynobj.c), not with dlsym(), whose failure would leave a message
 * for the program's next dlerror().  An arena is then a block of the
 * module's heap (a large block of its own, aligned to pymalloc's 16 KiB
 * pools: its pages fault when pymalloc touches them, and fork copies it
 * like any block).  Where secret memory
 * is refused, an arena comes from Python's own allocator instead, after the
 * module's one warning (plain), or not at all with SECRETMEM_REQUIRE=1
 * (pymalloc then asks malloc for each object, which refuses too); Python's
 * allocator also frees every arena
 * that is not the module's.  One allocator per process: the first Python
 * found keeps it.
 *
 * An arena is charged to RLIMIT_MEMLOCK whole when it is mapped (1 MiB,
 * touched or not: `python3 -c pass` holds two), where malloc'ed objects
 * take only the pages they fill.  So at start-up, under a memory-lock limit
 * below ARENA_ROOM (ordinary users on Debian have 8 MiB), the module sets
 * PYTHONMALLOC=malloc instead (before Python reads it; inherited by the
 * programs it runs), and every object comes from its malloc; and it leaves
 * a PYTHONMALLOC the program was given alone.  The hook is installed all
 * the same: python3 -E or -I ignores PYTHONMALLOC and keeps pymalloc.  A
 * libpython that a dlopen() brings in later gets the hook alone: setenv()
 * is not safe once threads may run.  Not followed: an embedder that
 * finalizes Python and initializes it again (CPython 3.12 on resets its
 * allocators then); Python started by a library's constructor (glibc runs
 * those before the preloaded module's); a libpython linked in statically
 * without its symbols exported (nothing to find); PYTHONMALLOC=mimalloc and
 * free-threaded builds (no pymalloc arenas).
 */
#define _GNU_SOURCE
#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "hp.h"
#include "internal.h"
#include "../preload/dynobj.h"

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

static int malloc_family(const char *pm)
{
	return pm && (!strcmp(pm, "malloc") || !strcmp(pm, "malloc_debug"));
}

/* At start-up, PYTHONMALLOC unset (or empty, which Python ignores): malloc
 * under a small memory-lock limit.  CAP_IPC_LOCK counts as no limit only
 * where the kernel charges secret memory at mmap time (on the others root
 * is charged too).  The figures page says "on malloc" when PYTHONMALLOC
 * turns pymalloc off, set here or given. */
static void small_limit_malloc(void)
{
	const char *pm = getenv("PYTHONMALLOC");
	int unlimited;
	size_t limit, locked;

	if (pm && *pm) {
		if (malloc_family(pm))
			hp_python_mode(HP_PYTHON_MALLOC);
		return;
	}
	sm_memlock_figures(&unlimited, &limit, &locked);
	if (limit >= ARENA_ROOM || (unlimited && sm_fault_regime() == SM_REGIME_MMAP))
		return;
	if (setenv("PYTHONMALLOC", "malloc", 1) == 0 && malloc_family(getenv("PYTHONMALLOC")))
		hp_python_mode(HP_PYTHON_MALLOC);
}

/* dl_iterate_phdr: the first loaded object's definition of a function. */
struct lookup {
	const char *name;
	void *addr;
};

static int find_function(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct lookup *l = arg;
	struct sm_dynobj o;
	const ElfW(Sym) *s;

	(void)size;
	if (sm_dyn_open(info, &o) != 0 || !(s = sm_dyn_defines(&o, l->name)) ||
	    ELF32_ST_TYPE(s->st_info) != STT_FUNC) /* the same for 64-bit */
		return 0;
	l->addr = (void *)(o.base + s->st_value);
	return 1;
}

/* The address of a function some loaded object defines, or NULL. */
static void *function(const char *name)
{
	struct lookup l = { name, NULL };

	dl_iterate_phdr(find_function, &l);
	return l.addr;
}

void hp_python_arenas(int at_start)
{
	static struct py_arena_allocator ours = { NULL, arena_alloc, arena_free };
	void (*get)(struct py_arena_allocator *);
	void (*set)(struct py_arena_allocator *);

	if (__atomic_load_n(&installed, __ATOMIC_ACQUIRE))
		return;
	*(void **)&get = function("PyObject_GetArenaAllocator");
	*(void **)&set = function("PyObject_SetArenaAllocator");
	if (!get || !set)
		return;
	if (at_start)
		small_limit_malloc();
	/* one installer: two threads' dlopen() of libpython at once */
	if (__atomic_exchange_n(&installed, 1, __ATOMIC_ACQ_REL))
		return;
	get(&python_own);
	set(&ours);
	hp_python_mode(HP_PYTHON_ARENAS);
}
