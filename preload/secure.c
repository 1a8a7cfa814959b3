/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * secure.c - OpenSSL's secure heap, served from secret memory.
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
 * Blocks this module did not hand out (the ordinary-memory fallback, a
 * secure heap OpenSSL had set up itself in `off` mode) go to the real
 * function (real.c).
 */
#define _GNU_SOURCE
#include <stddef.h>
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

	pl_late_init();
	if (pl_mode() == PL_MODE_OFF)
		return fallback_malloc(REAL(sec_malloc_fn, PL_REAL_SECURE_MALLOC), num, file, line);
	if (num == 0) /* as OpenSSL's CRYPTO_malloc(0) */
		return NULL;
	p = pl_secret_malloc(num);
	if (p)
		return p;
	return fallback_malloc(REAL(sec_malloc_fn, PL_REAL_SECURE_MALLOC), num, file, line);
}

__attribute__((noinline)) void *CRYPTO_secure_zalloc(size_t num, const char *file, int line)
{
	void *p;

	pl_late_init();
	if (pl_mode() == PL_MODE_OFF) {
		sec_malloc_fn real = REAL(sec_malloc_fn, PL_REAL_SECURE_ZALLOC);
		return real ? real(num, file, line) : calloc(1, num);
	}
	if (num == 0)
		return NULL;
	p = pl_secret_malloc(num); /* secret blocks come zero filled */
	if (p)
		return p;
	p = fallback_malloc(REAL(sec_malloc_fn, PL_REAL_SECURE_MALLOC), num, file, line);
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
		secretmem_free(ptr); /* zeroizes */
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
		secretmem_free(ptr); /* zeroizes the whole block */
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

	if (pl_mode() != PL_MODE_OFF && secretmem_owns(ptr))
		return secretmem_usable_size(ptr);
	real = REAL(sec_actual_size_fn, PL_REAL_SECURE_ACTUAL_SIZE);
	return real ? real(ptr) : 0;
}

/*
 * Bytes of secret memory in use by this module's allocations: in `all` mode
 * that includes every OPENSSL_malloc() block, not only the secure heap.
 */
__attribute__((noinline)) size_t CRYPTO_secure_used(void)
{
	struct secretmem_stats st;

	if (pl_mode() == PL_MODE_OFF) {
		sec_used_fn real = REAL(sec_used_fn, PL_REAL_SECURE_USED);
		return real ? real() : 0;
	}
	if (secretmem_stats(&st) != 0)
		return 0;
	return st.bytes_in_use;
}

/* The secure heap is always there: it is secret memory. */
__attribute__((noinline)) int CRYPTO_secure_malloc_initialized(void)
{
	if (pl_mode() == PL_MODE_OFF) {
		sec_int_fn real = REAL(sec_int_fn, PL_REAL_SECURE_INITIALIZED);
		return real ? real() : 0;
	}
	return 1;
}

/*
 * A program that sets up OpenSSL's own secure heap gets ours instead: its
 * fixed-size arena would hold the same keys in ordinary (mlock()ed, but
 * root-readable) memory.  Returns 1 (success), as OpenSSL does.
 */
__attribute__((noinline)) int CRYPTO_secure_malloc_init(size_t size, size_t minsize)
{
	pl_late_init();
	if (pl_mode() == PL_MODE_OFF) {
		sec_init_fn real = REAL(sec_init_fn, PL_REAL_SECURE_INIT);
		return real ? real(size, minsize) : 0;
	}
	return 1;
}

/*
 * OpenSSL: 1 when the secure heap was released, 0 while blocks are still
 * allocated.  Here: 1 (and the free secret pages are given back) when this
 * module has no live block, else 0.
 */
__attribute__((noinline)) int CRYPTO_secure_malloc_done(void)
{
	struct secretmem_stats st;

	if (pl_mode() == PL_MODE_OFF) {
		sec_int_fn real = REAL(sec_int_fn, PL_REAL_SECURE_DONE);
		return real ? real() : 0;
	}
	if (secretmem_stats(&st) != 0 || st.live_allocations != 0)
		return 0;
	secretmem_trim();
	return 1;
}
