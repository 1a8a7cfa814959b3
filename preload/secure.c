/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * secure.c - OpenSSL's secure heap, served from secret memory, with
 * OpenSSL's own semantics.
 *
 * OpenSSL keeps private keys in its "secure heap": BN_secure_new() for the
 * RSA, DSA, DH and EC private numbers (its limbs are allocated with
 * OPENSSL_secure_zalloc()), OPENSSL_secure_malloc() for the raw X25519 and
 * Ed25519 keys, and a few more.  Without CRYPTO_secure_malloc_init() - which
 * almost no program calls - those are ordinary malloc().  This module
 * exports the CRYPTO_secure_* family with OpenSSL's signatures; libcrypto
 * calls them through its PLT (R_X86_64_JUMP_SLOT relocations in Debian's
 * libcrypto.so.3) and the core dispatch table given to providers (absolute
 * relocations by symbol), so the dynamic linker binds those calls here.
 *
 * Every secure-heap block is secret memory, initialized or not.  On top of
 * that the functions keep OpenSSL's documented state machine, as its
 * test/secmemtest.c checks it: CRYPTO_secure_malloc_init() starts an
 * emulated arena (its size and minimum block are validated as OpenSSL
 * does; a second init returns 0), blocks allocated while it is initialized
 * have OpenSSL's sizes (a power of two, at least minsize) and are counted by
 * CRYPTO_secure_used() and _actual_size(); OPENSSL_secure_malloc(0) is a
 * minimum block; a request larger than the arena is NULL;
 * CRYPTO_secure_malloc_done() succeeds only when no counted block is live
 * and then ends the initialized state.  Deliberate differences, listed in
 * secretmem-preload(7): the arena grows instead of filling up, and
 * CRYPTO_secure_allocated() is 1 for every block in secret memory (a
 * program that reads 0 frees the block with free(), which would abort).
 *
 * Blocks this module did not hand out (the ordinary-memory fallback, a
 * secure heap OpenSSL had set up itself in `off` mode) go to the real
 * function (real.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "secretmem.h"
#include "preload.h"

typedef void *(*sec_malloc_fn)(size_t num, const char *file, int line);
typedef void (*sec_free_fn)(void *ptr, const char *file, int line);
typedef void (*sec_clear_free_fn)(void *ptr, size_t num, const char *file, int line);
typedef int (*sec_allocated_fn)(const void *ptr);
typedef size_t (*sec_actual_size_fn)(void *ptr);
typedef size_t (*sec_used_fn)(void);
typedef int (*sec_int_fn)(void);
typedef int (*sec_init_fn)(size_t size, size_t minsize);

#define CALLER __builtin_return_address(0)
#define REAL(type, fn) ((type)pl_real((fn), CALLER))

/* ---- the emulated arena: which blocks count, and their OpenSSL size ----- */

/* OpenSSL's smallest block: its free-list node, two pointers. */
#define SH_MIN ((size_t)2 * sizeof(void *))

struct slot {
	void *ptr;   /* NULL: empty; TOMB: deleted */
	size_t size; /* OpenSSL's size of the block */
};
#define TOMB ((void *)1)

static pthread_mutex_t sh_lock = PTHREAD_MUTEX_INITIALIZER;
static int sh_initialized;
static size_t sh_arena, sh_minsize, sh_used;
static struct slot *tab;
static size_t tab_cap, tab_fill, tab_live; /* fill counts tombstones too */

static size_t hash(const void *p, size_t cap)
{
	uintptr_t x = (uintptr_t)p;

	x ^= x >> 17;
	x *= 0x9e3779b97f4a7c15ull;
	return (size_t)(x >> 20) & (cap - 1);
}

static struct slot *find(const void *p)
{
	if (!tab)
		return NULL;
	for (size_t i = hash(p, tab_cap), n = 0; n < tab_cap; i = (i + 1) & (tab_cap - 1), n++) {
		if (tab[i].ptr == p)
			return &tab[i];
		if (!tab[i].ptr)
			return NULL;
	}
	return NULL;
}

/* 0, or -ENOMEM (the block is then simply not counted). */
static int track(void *p, size_t size)
{
	if (tab_fill + 1 > tab_cap / 2) {
		size_t cap = tab_cap ? tab_cap * 2 : 64;
		struct slot *old = tab, *nt = calloc(cap, sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		tab = nt;
		for (size_t i = 0; i < tab_cap; i++)
			if (old[i].ptr && old[i].ptr != TOMB) {
				size_t j = hash(old[i].ptr, cap);

				while (tab[j].ptr)
					j = (j + 1) & (cap - 1);
				tab[j] = old[i];
			}
		free(old);
		tab_cap = cap;
		tab_fill = tab_live;
	}
	size_t j = hash(p, tab_cap);

	while (tab[j].ptr && tab[j].ptr != TOMB)
		j = (j + 1) & (tab_cap - 1);
	if (!tab[j].ptr)
		tab_fill++;
	tab[j].ptr = p;
	tab[j].size = size;
	__atomic_store_n(&tab_live, tab_live + 1, __ATOMIC_RELAXED);
	return 0;
}

void pl_secure_untrack(void *ptr)
{
	struct slot *s;

	if (!__atomic_load_n(&tab_live, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&sh_lock);
	s = find(ptr);
	if (s) {
		sh_used -= s->size;
		s->ptr = TOMB;
		__atomic_store_n(&tab_live, tab_live - 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&sh_lock);
}

/* OpenSSL's block size for num: a power of two, at least minsize. */
static size_t sh_size(size_t num)
{
	size_t s = sh_minsize;

	while (s < num)
		s <<= 1;
	return s;
}

/*
 * While initialized: a counted block of OpenSSL's size, NULL for a request
 * larger than the arena.  *handled = 0 when not initialized.
 */
static void *arena_malloc(size_t num, int *handled)
{
	size_t size;
	void *p;

	*handled = 0;
	if (!__atomic_load_n(&sh_initialized, __ATOMIC_ACQUIRE))
		return NULL;
	pthread_mutex_lock(&sh_lock);
	if (!sh_initialized) {
		pthread_mutex_unlock(&sh_lock);
		return NULL;
	}
	*handled = 1;
	if (num > sh_arena) {
		pthread_mutex_unlock(&sh_lock);
		return NULL;
	}
	size = sh_size(num);
	pthread_mutex_unlock(&sh_lock);
	p = pl_secret_malloc(size, 1);
	if (!p)
		return NULL;
	pthread_mutex_lock(&sh_lock);
	if (track(p, size) == 0)
		sh_used += size;
	pthread_mutex_unlock(&sh_lock);
	return p;
}

static void free_secret(void *ptr)
{
	pl_secure_untrack(ptr);
	secretmem_free(ptr); /* zeroizes */
	pl_secret_freed();
}

/*
 * With no real function to call (libcrypto unreachable from here, which
 * only happens for blocks of our own fallback), OpenSSL's uninitialized
 * secure heap would have used malloc()/free(): do the same.
 */
static void *fallback_malloc(sec_malloc_fn real, size_t num, const char *file, int line)
{
	return real ? real(num, file, line) : malloc(num);
}

PL_EXPORT void *CRYPTO_secure_malloc(size_t num, const char *file, int line);
PL_EXPORT void *CRYPTO_secure_zalloc(size_t num, const char *file, int line);
PL_EXPORT void CRYPTO_secure_free(void *ptr, const char *file, int line);
PL_EXPORT void CRYPTO_secure_clear_free(void *ptr, size_t num, const char *file, int line);
PL_EXPORT int CRYPTO_secure_allocated(const void *ptr);
PL_EXPORT size_t CRYPTO_secure_actual_size(void *ptr);
PL_EXPORT size_t CRYPTO_secure_used(void);
PL_EXPORT int CRYPTO_secure_malloc_initialized(void);
PL_EXPORT int CRYPTO_secure_malloc_init(size_t size, size_t minsize);
PL_EXPORT int CRYPTO_secure_malloc_done(void);

__attribute__((noinline)) void *CRYPTO_secure_malloc(size_t num, const char *file, int line)
{
	void *p;
	int handled;

	pl_libs_check(CALLER);
	if (pl_mode() == PL_MODE_OFF)
		return fallback_malloc(REAL(sec_malloc_fn, PL_REAL_SECURE_MALLOC), num, file, line);
	p = arena_malloc(num, &handled);
	if (handled && (p || num > sh_arena))
		return p;
	if (!handled && num == 0) /* as OpenSSL's CRYPTO_malloc(0) */
		return NULL;
	if (!handled)
		p = pl_secret_malloc(num, 1);
	if (p)
		return p;
	if (num > PTRDIFF_MAX || !pl_ordinary_allowed(1))
		return NULL;
	return fallback_malloc(REAL(sec_malloc_fn, PL_REAL_SECURE_MALLOC), num ? num : 1, file, line);
}

__attribute__((noinline)) void *CRYPTO_secure_zalloc(size_t num, const char *file, int line)
{
	void *p;
	int handled;

	pl_libs_check(CALLER);
	if (pl_mode() == PL_MODE_OFF) {
		sec_malloc_fn real = REAL(sec_malloc_fn, PL_REAL_SECURE_ZALLOC);
		return real ? real(num, file, line) : calloc(1, num);
	}
	p = arena_malloc(num, &handled); /* secret blocks come zero filled */
	if (handled && (p || num > sh_arena))
		return p;
	if (!handled && num == 0)
		return NULL;
	if (!handled)
		p = pl_secret_malloc(num, 1);
	if (p)
		return p;
	if (num > PTRDIFF_MAX || !pl_ordinary_allowed(1))
		return NULL;
	p = fallback_malloc(REAL(sec_malloc_fn, PL_REAL_SECURE_MALLOC), num ? num : 1, file, line);
	if (p)
		memset(p, 0, num);
	return p;
}

__attribute__((noinline)) void CRYPTO_secure_free(void *ptr, const char *file, int line)
{
	sec_free_fn real;

	if (!ptr)
		return;
	if (pl_mode() != PL_MODE_OFF && secretmem_owns(ptr)) {
		free_secret(ptr);
		return;
	}
	real = REAL(sec_free_fn, PL_REAL_SECURE_FREE);
	if (real)
		real(ptr, file, line);
	else
		free(ptr);
}

__attribute__((noinline)) void CRYPTO_secure_clear_free(void *ptr, size_t num, const char *file, int line)
{
	sec_clear_free_fn real;

	if (!ptr)
		return;
	if (pl_mode() != PL_MODE_OFF && secretmem_owns(ptr)) {
		free_secret(ptr); /* zeroizes the whole block */
		return;
	}
	real = REAL(sec_clear_free_fn, PL_REAL_SECURE_CLEAR_FREE);
	if (real) {
		real(ptr, num, file, line);
	} else {
		explicit_bzero(ptr, num);
		free(ptr);
	}
}

/* 1 for every block in secret memory: see the comment at the top. */
__attribute__((noinline)) int CRYPTO_secure_allocated(const void *ptr)
{
	sec_allocated_fn real;

	if (pl_mode() != PL_MODE_OFF && secretmem_owns(ptr))
		return 1;
	real = REAL(sec_allocated_fn, PL_REAL_SECURE_ALLOCATED);
	return real ? real(ptr) : 0;
}

__attribute__((noinline)) size_t CRYPTO_secure_actual_size(void *ptr)
{
	sec_actual_size_fn real;
	struct slot *s;
	size_t size = 0;

	if (pl_mode() != PL_MODE_OFF && secretmem_owns(ptr)) {
		if (__atomic_load_n(&tab_live, __ATOMIC_RELAXED)) {
			pthread_mutex_lock(&sh_lock);
			s = find(ptr);
			if (s)
				size = s->size;
			pthread_mutex_unlock(&sh_lock);
		}
		return size ? size : secretmem_usable_size(ptr);
	}
	real = REAL(sec_actual_size_fn, PL_REAL_SECURE_ACTUAL_SIZE);
	return real ? real(ptr) : 0;
}

/* OpenSSL's count: the sizes of the live blocks of the arena. */
__attribute__((noinline)) size_t CRYPTO_secure_used(void)
{
	size_t used;

	if (pl_mode() == PL_MODE_OFF) {
		sec_used_fn real = REAL(sec_used_fn, PL_REAL_SECURE_USED);
		return real ? real() : 0;
	}
	pthread_mutex_lock(&sh_lock);
	used = sh_used;
	pthread_mutex_unlock(&sh_lock);
	return used;
}

__attribute__((noinline)) int CRYPTO_secure_malloc_initialized(void)
{
	if (pl_mode() == PL_MODE_OFF) {
		sec_int_fn real = REAL(sec_int_fn, PL_REAL_SECURE_INITIALIZED);
		return real ? real() : 0;
	}
	return __atomic_load_n(&sh_initialized, __ATOMIC_ACQUIRE);
}

/*
 * A program that sets up OpenSSL's own secure heap gets ours instead: its
 * fixed-size arena would hold the same keys in ordinary (mlock()ed, but
 * root-readable) memory.  OpenSSL's checks of the sizes: size and minsize
 * powers of two (OpenSSL 3.0 stops the program with an assertion for a bad
 * size; here it is 0), minsize at least two pointers, room for at least
 * four blocks; a second init returns 0.
 */
__attribute__((noinline)) int CRYPTO_secure_malloc_init(size_t size, size_t minsize)
{
	int ret = 0;

	pl_libs_check(CALLER);
	if (pl_mode() == PL_MODE_OFF) {
		sec_init_fn real = REAL(sec_init_fn, PL_REAL_SECURE_INIT);
		return real ? real(size, minsize) : 0;
	}
	if (size == 0 || (size & (size - 1)) != 0 || minsize == 0 || (minsize & (minsize - 1)) != 0)
		return 0;
	if (minsize < SH_MIN)
		minsize = SH_MIN;
	if ((size / minsize) * 2 < 8) /* OpenSSL's bit table would be empty */
		return 0;
	pthread_mutex_lock(&sh_lock);
	if (!sh_initialized) {
		sh_arena = size;
		sh_minsize = minsize;
		__atomic_store_n(&sh_initialized, 1, __ATOMIC_RELEASE);
		ret = 1;
	}
	pthread_mutex_unlock(&sh_lock);
	return ret;
}

/*
 * OpenSSL: 1 when the secure heap was released (no block of it is live;
 * also when it was never initialized), 0 otherwise.  Free secret pages are
 * given back to the kernel.
 */
__attribute__((noinline)) int CRYPTO_secure_malloc_done(void)
{
	int ret = 0;

	if (pl_mode() == PL_MODE_OFF) {
		sec_int_fn real = REAL(sec_int_fn, PL_REAL_SECURE_DONE);
		return real ? real() : 0;
	}
	pthread_mutex_lock(&sh_lock);
	if (sh_used == 0) {
		__atomic_store_n(&sh_initialized, 0, __ATOMIC_RELEASE);
		ret = 1;
	}
	pthread_mutex_unlock(&sh_lock);
	if (ret)
		secretmem_trim();
	return ret;
}
