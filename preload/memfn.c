/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * memfn.c - the memory functions the module hands to OpenSSL with
 * CRYPTO_set_mem_functions() (libs.c installs them in every libcrypto).
 *
 * Mode secure: OpenSSL's ordinary allocations stay in malloc() but every
 * block is cleared when OpenSSL frees it (decoded key files, e.g. the DER
 * bytes of PEM_read_bio_PrivateKey(), are freed without clearing).
 * Mode all: every OPENSSL_malloc() comes from secret memory.
 * In both, a secret block that reaches them (a secure-heap block freed with
 * OPENSSL_free(), legal in OpenSSL when its secure heap is off) goes back to
 * secret memory, never to libc's free().
 *
 * A program that installs its own functions in mode secure gets them
 * wrapped (pl_memfn_chain): its allocator is used, with a 16-byte header
 * holding the size so that each block is still cleared when freed.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include "secretmem.h"
#include "internal.h"
#include "preload.h"

static int used; /* OpenSSL allocated through these functions */

int pl_memfn_used(void)
{
	return __atomic_load_n(&used, __ATOMIC_RELAXED);
}

static inline void mark_used(void)
{
	if (__builtin_expect(!__atomic_load_n(&used, __ATOMIC_RELAXED), 0))
		__atomic_store_n(&used, 1, __ATOMIC_RELAXED);
}

static void free_secret(void *ptr)
{
	pl_secure_untrack(ptr);
	secretmem_free(ptr); /* zeroizes */
	pl_secret_freed();
}

/* An ordinary block, cleared and given back to libc. */
static void free_ordinary(void *ptr)
{
	explicit_bzero(ptr, malloc_usable_size(ptr));
	free(ptr);
}

/* ---- mode secure: clear on free ----------------------------------------- */

static void clear_free(void *ptr, const char *file, int line)
{
	(void)file;
	(void)line;
	if (!ptr)
		return;
	if (secretmem_owns(ptr))
		free_secret(ptr);
	else
		free_ordinary(ptr);
}

/* OpenSSL's own CRYPTO_malloc(0) returns NULL without calling anything. */
static void *clear_malloc(size_t num, const char *file, int line)
{
	(void)file;
	(void)line;
	mark_used();
	return num ? malloc(num) : NULL;
}

/* realloc() would free the old block uncleared: move by hand. */
static void *clear_realloc(void *ptr, size_t num, const char *file, int line)
{
	size_t old;
	void *p;

	if (!ptr)
		return clear_malloc(num, file, line);
	if (num == 0) {
		clear_free(ptr, file, line);
		return NULL;
	}
	old = secretmem_owns(ptr) ? secretmem_usable_size(ptr) : malloc_usable_size(ptr);
	if (num <= old && !secretmem_owns(ptr))
		return ptr;
	p = malloc(num);
	if (!p)
		return NULL;
	memcpy(p, ptr, old < num ? old : num);
	clear_free(ptr, file, line);
	return p;
}

/* ---- mode all: secret memory -------------------------------------------- */

static void *all_malloc(size_t num, const char *file, int line)
{
	void *p;

	(void)file;
	(void)line;
	mark_used();
	if (num == 0)
		return NULL;
	p = pl_secret_malloc(num, 0);
	if (p || !pl_ordinary_allowed(0))
		return p;
	return malloc(num);
}

/* One lookup: a secret block is freed (a double or interior free of one
 * is fatal, as in secretmem_free); any other is the ordinary-memory
 * fallback's. */
static void all_free(void *ptr, const char *file, int line)
{
	(void)file;
	(void)line;
	if (!ptr)
		return;
	pl_secure_untrack(ptr); /* a no-op unless the secure heap tracks blocks */
	if (sm_free_if_ours(ptr))
		pl_secret_freed();
	else
		free_ordinary(ptr);
}

static void *all_realloc(void *ptr, size_t num, const char *file, int line)
{
	size_t old;
	void *p;

	if (!ptr)
		return all_malloc(num, file, line);
	if (num == 0) {
		all_free(ptr, file, line);
		return NULL;
	}
	if (!sm_in_our_memory(ptr)) {
		/* An ordinary block: secret memory now, if it is available. */
		p = all_malloc(num, file, line);
		if (!p)
			return NULL;
		old = malloc_usable_size(ptr);
		memcpy(p, ptr, old < num ? old : num);
		clear_free(ptr, file, line);
		return p;
	}
	pl_secure_untrack(ptr);
	p = secretmem_realloc(ptr, num);
	if (p)
		return p;
	/* Secret memory refused the larger block: move. */
	p = all_malloc(num, file, line);
	if (!p)
		return NULL;
	old = secretmem_usable_size(ptr);
	memcpy(p, ptr, old < num ? old : num);
	free_secret(ptr);
	return p;
}

void pl_memfn(int mode, pl_malloc_fn *m, pl_realloc_fn *r, pl_free_fn *f)
{
	if (mode == PL_MODE_ALL) {
		*m = all_malloc;
		*r = all_realloc;
		*f = all_free;
	} else {
		*m = clear_malloc;
		*r = clear_realloc;
		*f = clear_free;
	}
}

/* ---- mode secure with the program's own functions ------------------------ */

#define HDR 16 /* keeps the alignment of the program's blocks */

static pl_malloc_fn prog_m;
static pl_free_fn prog_f;

static void chain_free(void *ptr, const char *file, int line)
{
	unsigned char *base;
	size_t n;

	if (!ptr)
		return;
	if (secretmem_owns(ptr)) {
		free_secret(ptr);
		return;
	}
	base = (unsigned char *)ptr - HDR;
	memcpy(&n, base, sizeof(n));
	explicit_bzero(base, HDR + n);
	prog_f(base, file, line);
}

static void *chain_malloc(size_t num, const char *file, int line)
{
	unsigned char *base;

	mark_used();
	if (num == 0 || num > (size_t)-1 - HDR)
		return NULL;
	base = prog_m(num + HDR, file, line);
	if (!base)
		return NULL;
	memcpy(base, &num, sizeof(num));
	return base + HDR;
}

/* Through malloc+copy+free, so that the old block is cleared. */
static void *chain_realloc(void *ptr, size_t num, const char *file, int line)
{
	size_t old;
	void *p;

	if (!ptr)
		return chain_malloc(num, file, line);
	if (num == 0) {
		chain_free(ptr, file, line);
		return NULL;
	}
	if (secretmem_owns(ptr))
		old = secretmem_usable_size(ptr);
	else
		memcpy(&old, (unsigned char *)ptr - HDR, sizeof(old));
	p = chain_malloc(num, file, line);
	if (!p)
		return NULL;
	memcpy(p, ptr, old < num ? old : num);
	chain_free(ptr, file, line);
	return p;
}

int pl_memfn_chain(pl_malloc_fn m, pl_realloc_fn r, pl_free_fn f, pl_malloc_fn *om, pl_realloc_fn *orr,
		   pl_free_fn *of)
{
	if (!m || !r || !f)
		return 0;
	prog_m = m;
	(void)r; /* blocks move through chain_malloc + chain_free */
	prog_f = f;
	*om = chain_malloc;
	*orr = chain_realloc;
	*of = chain_free;
	return 1;
}
