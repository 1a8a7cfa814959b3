/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * rsa.c - the cached Montgomery contexts of secret moduli go to the secure
 * heap too (modes secure and all: in all, for a libcrypto whose memory
 * functions could not be installed).
 *
 * OpenSSL's RSA code caches a Montgomery context for each prime
 * (RSA_FLAG_CACHE_PRIVATE): BN_MONT_CTX_set_locked() creates it with
 * BN_MONT_CTX_new() and BN_MONT_CTX_set(), which copies p (or q) and values
 * that reveal it (R^2 mod p) into the context's own BIGNUMs - ordinary
 * BIGNUMs, even though p itself is a secure one.  A scan of s_server in
 * `secure` mode found p and q there.  Not caching the contexts (clearing the
 * flag) would work too, but halves the RSA-2048 signing rate here: it also
 * turns off OpenSSL's fastest CRT path.
 *
 * So BN_MONT_CTX_set_locked() - which libcrypto calls through its PLT - is
 * exported here: for a modulus marked BN_FLG_SECURE it builds the context
 * itself and marks the context's three BIGNUMs BN_FLG_SECURE before
 * BN_MONT_CTX_set() fills them, so their limbs come from secret memory and
 * BN_MONT_CTX_free() clears and frees them there.  The BIGNUMs are reached
 * through the layout of struct bn_mont_ctx_st, private to OpenSSL but the
 * same in 1.1.0 to 3.x; the module only uses it when OpenSSL_version_num()
 * says 1.1 or 3 and a new context looks exactly as BN_MONT_CTX_new() leaves
 * it.  Otherwise, in mode off, and for public moduli, OpenSSL's function
 * runs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "preload.h"

/* From <openssl/bn.h>: part of the ABI. */
#define PL_BN_FLG_MALLOCED 0x01
#define PL_BN_FLG_SECURE 0x08

typedef struct pl_bignum PL_BIGNUM;
typedef struct pl_bn_ctx PL_BN_CTX;
typedef struct pl_lock PL_LOCK;

/* struct bignum_st and struct bn_mont_ctx_st of OpenSSL 1.1.0 to 3.x. */
struct pl_bignum_layout {
	uint64_t *d;
	int top, dmax, neg, flags;
};

struct pl_mont_layout {
	int ri;
	struct pl_bignum_layout rr, n, ni;
	uint64_t n0[2];
	int flags;
};

typedef struct pl_mont PL_MONT;
typedef PL_MONT *(*set_locked_fn)(PL_MONT **pmont, PL_LOCK *lock, const PL_BIGNUM *mod, PL_BN_CTX *ctx);

static struct {
	PL_MONT *(*mont_new)(void);
	int (*mont_set)(PL_MONT *mont, const PL_BIGNUM *mod, PL_BN_CTX *ctx);
	void (*mont_free)(PL_MONT *mont);
	int (*get_flags)(const PL_BIGNUM *b, int n);
	void (*set_flags)(PL_BIGNUM *b, int n);
	int (*read_lock)(PL_LOCK *lock);
	int (*write_lock)(PL_LOCK *lock);
	int (*unlock)(PL_LOCK *lock);
	int usable;
} ossl;

static pthread_once_t ossl_once = PTHREAD_ONCE_INIT;
static const void *caller; /* a return address in libcrypto */

/* Functions we do not hide: the usual lookup, else from the caller's object. */
static void *sym(const char *name)
{
	return pl_sym_near(caller, name);
}

static void resolve(void)
{
	unsigned long (*version)(void);
	unsigned long v;

	*(void **)&version = sym("OpenSSL_version_num");
	*(void **)&ossl.mont_new = sym("BN_MONT_CTX_new");
	*(void **)&ossl.mont_set = sym("BN_MONT_CTX_set");
	*(void **)&ossl.mont_free = sym("BN_MONT_CTX_free");
	*(void **)&ossl.get_flags = sym("BN_get_flags");
	*(void **)&ossl.set_flags = sym("BN_set_flags");
	*(void **)&ossl.read_lock = sym("CRYPTO_THREAD_read_lock");
	*(void **)&ossl.write_lock = sym("CRYPTO_THREAD_write_lock");
	*(void **)&ossl.unlock = sym("CRYPTO_THREAD_unlock");
	if (!version || !ossl.mont_new || !ossl.mont_set || !ossl.mont_free || !ossl.get_flags ||
	    !ossl.set_flags || !ossl.read_lock || !ossl.write_lock || !ossl.unlock)
		return;
	v = version();
	/* 0x1010xxxx (1.1.x) or 0x3xxxxxxx (3.x): the layout above. */
	ossl.usable = (v >> 20) == 0x101 || (v >> 28) == 3;
}

/* Does a new context look exactly like BN_MONT_CTX_new()'s? */
static int fresh_context(const PL_MONT *mont)
{
	static const struct pl_bignum_layout zero;
	const struct pl_mont_layout *m = (const void *)mont;

	return m->ri == 0 && !memcmp(&m->rr, &zero, sizeof(zero)) && !memcmp(&m->n, &zero, sizeof(zero)) &&
	       !memcmp(&m->ni, &zero, sizeof(zero)) && m->n0[0] == 0 && m->n0[1] == 0 &&
	       m->flags == PL_BN_FLG_MALLOCED;
}

/* A Montgomery context for a secure modulus, with secure BIGNUMs. */
static PL_MONT *secure_context(const PL_BIGNUM *mod, PL_BN_CTX *ctx)
{
	PL_MONT *mont = ossl.mont_new();
	struct pl_mont_layout *m = (void *)mont;

	if (!mont)
		return NULL;
	if (fresh_context(mont)) {
		ossl.set_flags((PL_BIGNUM *)&m->rr, PL_BN_FLG_SECURE);
		ossl.set_flags((PL_BIGNUM *)&m->n, PL_BN_FLG_SECURE);
		ossl.set_flags((PL_BIGNUM *)&m->ni, PL_BN_FLG_SECURE);
	}
	if (!ossl.mont_set(mont, mod, ctx)) {
		ossl.mont_free(mont);
		return NULL;
	}
	return mont;
}

PL_EXPORT PL_MONT *BN_MONT_CTX_set_locked(PL_MONT **pmont, PL_LOCK *lock, const PL_BIGNUM *mod,
					  PL_BN_CTX *ctx);

__attribute__((noinline)) PL_MONT *BN_MONT_CTX_set_locked(PL_MONT **pmont, PL_LOCK *lock,
							  const PL_BIGNUM *mod, PL_BN_CTX *ctx)
{
	set_locked_fn real;
	PL_MONT *ret, *mtmp;

	if (pl_mode() != PL_MODE_OFF) {
		__atomic_store_n(&caller, __builtin_return_address(0), __ATOMIC_RELAXED);
		pthread_once(&ossl_once, resolve);
	}
	if (pl_mode() == PL_MODE_OFF || !ossl.usable || !ossl.get_flags(mod, PL_BN_FLG_SECURE)) {
		*(void **)&real = pl_real(PL_REAL_BN_MONT_CTX_SET_LOCKED, __builtin_return_address(0));
		return real ? real(pmont, lock, mod, ctx) : NULL;
	}
	/* OpenSSL's own logic, with secure_context() for BN_MONT_CTX_new+set. */
	if (!ossl.read_lock(lock))
		return NULL;
	ret = *pmont;
	ossl.unlock(lock);
	if (ret)
		return ret;
	mtmp = secure_context(mod, ctx);
	if (!mtmp)
		return NULL;
	if (!ossl.write_lock(lock)) {
		ossl.mont_free(mtmp);
		return NULL;
	}
	if (*pmont) {
		ossl.mont_free(mtmp); /* another thread was first */
		ret = *pmont;
	} else {
		ret = *pmont = mtmp;
	}
	ossl.unlock(lock);
	return ret;
}
