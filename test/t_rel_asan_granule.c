/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_rel_asan_granule.c - under AddressSanitizer, two threads that free and
 * allocate neighbouring slots at once never leave a live block poisoned.
 *
 * AddressSanitizer keeps one shadow byte per 8 bytes.  A slot of the 20-
 * and 28-byte classes shares its 8-byte granule with its neighbour, and
 * ASan's own poison and unpoison calls read and rewrite a partly covered
 * granule: two threads annotating the two neighbours at once could leave
 * the live one's first bytes poisoned, and the program's next read of its
 * own block was reported as a use-after-poison (t_rel_stress, 1 run in 40
 * under load).  Here the main thread and a second thread each own one slot
 * of such a pair and free and allocate it in a loop (a thread's cache gives
 * the same slot back), reading the block's first 8 bytes each time.  The
 * pair is made by handing every other block of a run of consecutive slots
 * to the second thread to free.  It also checks that the rounding this
 * needs keeps what the annotations are for: a live block is addressable
 * whole, and a free slot's own granules are poisoned.  In a normal build
 * there are no annotations: the test skips.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "secretmem.h"
#include "tlib.h"

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#include <sanitizer/asan_interface.h>
#else
#define UNDER_ASAN 0
#endif

#define NBLK 64
#define ROUNDS 2000000L

static atomic_int go, stop;

struct owner {
	size_t size;
	unsigned char *want; /* the slot this thread must keep getting back */
	long rounds;
	int wrong_slot;
};

/* Free and allocate o->want in a loop, reading its first 8 bytes (through
 * memcpy: an instrumented access) while it is live. */
static void churn(struct owner *o)
{
	unsigned char *p = o->want;
	uint64_t v = 0;

	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	for (long i = 0; i < ROUNDS && !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		memcpy(p, &i, sizeof(i));
		memcpy(&v, p, sizeof(v));
		if (v != (uint64_t)i)
			o->wrong_slot = 1;
		secretmem_free(p);
		p = secretmem_malloc(o->size);
		if (p != o->want) {
			o->wrong_slot = 1;
			break;
		}
		o->rounds++;
	}
	atomic_store(&stop, 1);
	secretmem_free(p);
}

static void *second(void *arg)
{
	struct owner *o = arg;

	/* this thread's cache takes the block, and gives it back */
	secretmem_free(o->want);
	if (secretmem_malloc(o->size) != o->want)
		o->wrong_slot = 1;
	churn(o);
	return NULL;
}

/* Live p: addressable whole; once free, its granules that no neighbour
 * shares are poisoned.  p is allocated again before the return (the
 * thread's cache gives the same slot back). */
static void check_marks(unsigned char *p, size_t size)
{
#if UNDER_ASAN
	if (__asan_region_is_poisoned(p, size))
		TL_FAIL("class %zu: a live block is poisoned", size);
	secretmem_free(p);
	uintptr_t a = ((uintptr_t)p + 7) & ~(uintptr_t)7, e = ((uintptr_t)p + size) & ~(uintptr_t)7;
	for (uintptr_t q = a; q < e; q++)
		if (!__asan_address_is_poisoned((void *)q))
			TL_FAIL("class %zu: byte %zu of a free slot is not poisoned", size, (size_t)(q - (uintptr_t)p));
	if (secretmem_malloc(size) != p)
		TL_FAIL("class %zu: the thread's cache did not give the slot back", size);
#else
	(void)p, (void)size;
#endif
}

/* Two neighbours of class `size` whose boundary lies inside a granule,
 * owned by two threads that churn them at once. */
static void pair(size_t size)
{
	unsigned char *b[NBLK];
	int first = -1, second_at = -1;

	for (int i = 0; i < NBLK; i++)
		if (!(b[i] = secretmem_malloc(size)))
			TL_FAIL("secretmem_malloc(%zu)", size);
	for (int i = 0; i < NBLK && first < 0; i++)
		for (int j = 0; j < NBLK; j++)
			if (b[j] == b[i] + size && ((uintptr_t)b[j] & 7)) {
				first = i;
				second_at = j;
				break;
			}
	if (first < 0)
		TL_FAIL("class %zu: no two neighbouring slots share a granule among %d blocks", size, NBLK);
	check_marks(b[first], size);
	struct owner mine = { size, b[first], 0, 0 }, theirs = { size, b[second_at], 0, 0 };
	b[first] = b[second_at] = NULL; /* churn frees them */
	pthread_t th;
	atomic_store(&go, 0);
	atomic_store(&stop, 0);
	if (pthread_create(&th, NULL, second, &theirs))
		TL_FAIL("pthread_create");
	atomic_store_explicit(&go, 1, memory_order_release);
	churn(&mine);
	pthread_join(th, NULL);
	if (mine.wrong_slot || theirs.wrong_slot)
		TL_FAIL("class %zu: a block changed, or a thread's cache did not give its slot back", size);
	printf("class %zu: slots %p and %p, %ld and %ld rounds, no false report\n",
	       size, (void *)mine.want, (void *)theirs.want, mine.rounds, theirs.rounds);
	for (int i = 0; i < NBLK; i++)
		secretmem_free(b[i]);
}

int main(void)
{
	if (!UNDER_ASAN)
		tl_skip("checks the AddressSanitizer annotations; a normal build has none");
	tl_need_secretmem();
	pair(20);
	pair(28);
	return 0;
}
