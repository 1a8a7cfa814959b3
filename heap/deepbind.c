/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * deepbind.c - the heap module's dlopen(): a library opened with
 * RTLD_DEEPBIND gets the module's malloc too (secretmem-heap(7),
 * RTLD_DEEPBIND).
 *
 * RTLD_DEEPBIND makes the dynamic linker look a new library's symbols up in
 * the library and its own dependencies first, before the global scope: its
 * calls of malloc and free bind to glibc's, its blocks are ordinary memory,
 * and a block that crosses between it and the program meets the other
 * allocator's free or realloc (glibc aborts: "realloc(): invalid next
 * size", "free(): invalid pointer").  Clearing the flag would undo what
 * the library asked for everywhere else (its own copies of symbols the
 * program also defines); so the flag is kept, and after the real dlopen()
 * returns, the relocations of every object it loaded that refer to a
 * function of the malloc API (and to dlopen, so that what the library opens
 * in turn comes here too) are bound to the module's own definitions, as
 * they would have been without the flag (dynobj.c; read-only pages are
 * opened for the write and closed again).  One line says so.  Blocks the
 * library's constructors allocated inside dlopen() are glibc's; they are
 * freed correctly (the module hands foreign blocks to glibc).
 *
 * Where rebinding is not implemented (RELA relocations of x86-64 and
 * AArch64 are), the flag is cleared instead, with a warning.
 *
 * Every other dlopen() only keeps the caller's search path (dlfrom.c).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "hp.h"
#include "../preload/dlfrom.h"
#include "../preload/dynobj.h"

#define HP_EXPORT __attribute__((visibility("default")))

static const char *const api[] = { "malloc", "free", "calloc", "realloc", "reallocarray", "aligned_alloc",
				   "memalign", "posix_memalign", "valloc", "pvalloc", "malloc_usable_size",
				   "malloc_trim", "mallopt", "mallinfo", "mallinfo2", "dlopen" };
#define NAPI (sizeof(api) / sizeof(api[0]))

static void *(*real_dlopen)(const char *file, int flags);

static void *real(const char *file, int flags)
{
	void *(*fn)(const char *, int) = __atomic_load_n(&real_dlopen, __ATOMIC_ACQUIRE);

	if (!fn) {
		*(void **)&fn = dlsym(RTLD_NEXT, "dlopen");
		if (!fn)
			return NULL;
		__atomic_store_n(&real_dlopen, fn, __ATOMIC_RELEASE);
	}
	return fn(file, flags);
}

HP_EXPORT void *dlopen(const char *file, int flags);

__attribute__((noinline)) void *dlopen(const char *file, int flags)
{
	const void *caller = __builtin_return_address(0);
	struct sm_dyn_set before;
	char msg[600];
	void *own[NAPI];
	int objects = 0;

	if (!(flags & RTLD_DEEPBIND) || (flags & RTLD_NOLOAD) || !hp_serving()) {
		void *h = sm_dlopen_from(caller, file, flags, real);
		if (h && hp_serving())
			hp_python_arenas(0); /* libpython, or a library that needs it */
		return h;
	}
	if (!sm_dyn_can_rebind() || sm_dyn_snapshot(&before) != 0) {
		snprintf(msg, sizeof(msg), "%s: RTLD_DEEPBIND cleared, so that the library's malloc is the module's "
			 "(its blocks secret memory, and a block passed across does not abort)", file ? file : "(null)");
		hp_say(msg);
		return sm_dlopen_from(caller, file, flags & ~RTLD_DEEPBIND, real);
	}
	void *h = sm_dlopen_from(caller, file, flags, real);
	if (h) {
		sm_dyn_own((const void *)dlopen, api, own, NAPI);
		int slots = sm_dyn_rebind_new(&before, (const void *)dlopen, api, own, NAPI, &objects);
		if (slots < 0)
			snprintf(msg, sizeof(msg), "%s was opened with RTLD_DEEPBIND and its malloc could not be bound to "
				 "the module (%s): its blocks are ordinary memory, and one passed to the program's free() "
				 "or realloc() goes to glibc", file ? file : "(null)", strerror(errno));
		else
			snprintf(msg, sizeof(msg), "%s was opened with RTLD_DEEPBIND: its malloc API calls are bound to "
				 "the module (%d slot%s in %d object%s), so its blocks are secret memory too",
				 file ? file : "(null)", slots, slots == 1 ? "" : "s", objects, objects == 1 ? "" : "s");
		if (slots != 0)
			hp_say(msg);
	}
	sm_dyn_set_free(&before);
	if (h)
		hp_python_arenas(0);
	return h;
}
