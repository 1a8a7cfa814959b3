/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * annotate.h - tell AddressSanitizer and valgrind which secret bytes are
 * allocated, so that a use after free or a leak of a secret is reported
 * like any other heap bug.  Every macro is a no-op in a normal build (and
 * the valgrind ones cost a few instructions when not under valgrind).
 */
#ifndef SECRETMEM_ANNOTATE_H
#define SECRETMEM_ANNOTATE_H

#if defined(__SANITIZE_ADDRESS__)
#define SM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SM_ASAN 1
#endif
#endif

#ifdef SM_ASAN
#include <stdint.h>
#include <sanitizer/asan_interface.h>
#define SM_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define SM_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
/*
 * A small slot, in whole shadow granules (8 bytes).  A slot of the 20- and
 * 28-byte classes shares a granule with its neighbour, which another thread
 * may own, and ASan's calls read and rewrite a partly covered granule: two
 * threads annotating neighbours at once could leave a live block's first
 * bytes poisoned (a false use-after-poison: t_rel_asan_granule).  So a slot
 * is unpoisoned rounded out and poisoned rounded in; each call then only
 * stores to whole granules, and a shared granule is only ever unpoisoned.
 * What is lost: a 4-byte overrun from such a slot into a free neighbour.
 */
static inline void sm_slot_poison(void *p, size_t n)
{
	uintptr_t a = ((uintptr_t)p + 7) & ~(uintptr_t)7, e = ((uintptr_t)p + n) & ~(uintptr_t)7;

	if (e > a)
		ASAN_POISON_MEMORY_REGION((void *)a, e - a);
}
static inline void sm_slot_unpoison(void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)7, e = ((uintptr_t)p + n + 7) & ~(uintptr_t)7;

	ASAN_UNPOISON_MEMORY_REGION((void *)a, e - a);
}
#define SM_SLOT_POISON(p, n) sm_slot_poison((p), (n))
#define SM_SLOT_UNPOISON(p, n) sm_slot_unpoison((p), (n))
#else
#define SM_POISON(p, n) ((void)(p), (void)(n))
#define SM_UNPOISON(p, n) ((void)(p), (void)(n))
#define SM_SLOT_POISON(p, n) ((void)(p), (void)(n))
#define SM_SLOT_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>) && !defined(SM_NO_VALGRIND)
#define SM_VALGRIND 1
#endif
#endif

#ifdef SM_VALGRIND
#include <valgrind/memcheck.h>
/* allocated: a heap block of n bytes, already zeroed */
#define SM_VG_MALLOC(p, n) VALGRIND_MALLOCLIKE_BLOCK((p), (n), 0, 1)
#define SM_VG_FREE(p) VALGRIND_FREELIKE_BLOCK((p), 0)
#define SM_VG_DEFINED(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))
#define SM_VG_NOACCESS(p, n) VALGRIND_MAKE_MEM_NOACCESS((p), (n))
#else
#define SM_VG_MALLOC(p, n) ((void)(p), (void)(n))
#define SM_VG_FREE(p) ((void)(p))
#define SM_VG_DEFINED(p, n) ((void)(p), (void)(n))
#define SM_VG_NOACCESS(p, n) ((void)(p), (void)(n))
#endif

/* Unused-slot memory: invisible to the program, whichever tool is active. */
#define SM_HIDE(p, n) do { SM_POISON((p), (n)); SM_VG_NOACCESS((p), (n)); } while (0)
/* Let the allocator itself read or write it (zero checks, zeroing). */
#define SM_SHOW(p, n) do { SM_UNPOISON((p), (n)); SM_VG_DEFINED((p), (n)); } while (0)

#endif
