/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * param.c - private numbers that OpenSSL 3 copies out of parameters go to
 * the secure heap.
 *
 * OpenSSL 3 moves keys between providers and the legacy structures as
 * OSSL_PARAM arrays.  EVP_PKEY_get1_RSA() - which libcurl calls for an RSA
 * client key - builds a cached legacy RSA from the key's parameters with
 * ossl_rsa_fromdata(), which reads every number with OSSL_PARAM_get_BN():
 * that creates the BIGNUM with BN_new(), an ordinary one, even for d, p, q,
 * dP, dQ and qInv.  The copy lives as long as the key; a scan of curl in
 * `secure` mode found all six numbers in ordinary memory.
 *
 * libcrypto calls OSSL_PARAM_get_BN() through its PLT, so the module
 * exports it: for a parameter that names a private number (d, the RSA
 * factors, exponents and coefficients, "priv") and an empty *val, it puts a
 * BN_secure_new() there first; OpenSSL's function then fills that BIGNUM,
 * whose limbs come from the secure heap.  Only with OpenSSL 3 (the
 * function does not exist before; the module checks OpenSSL_version_num()
 * as rsa.c does) and not in mode off.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include "preload.h"

/* struct ossl_param_st of <openssl/core.h>: part of OpenSSL 3's ABI. */
struct pl_param {
	const char *key;
	unsigned int data_type;
	void *data;
	size_t data_size;
	size_t return_size;
};

typedef struct pl_bn PL_BN;
typedef int (*get_bn_fn)(const struct pl_param *p, PL_BN **val);

static struct {
	PL_BN *(*secure_new)(void);
	void (*bn_free)(PL_BN *b);
	int usable;
} ossl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const void *first_caller;

/* Functions we do not hide: the usual lookup, else from the caller's object. */
static void *sym(const char *name)
{
	return pl_sym_near(first_caller, name);
}

static void resolve(void)
{
	unsigned long (*version)(void);

	*(void **)&version = sym("OpenSSL_version_num");
	*(void **)&ossl.secure_new = sym("BN_secure_new");
	*(void **)&ossl.bn_free = sym("BN_free");
	ossl.usable = version && ossl.secure_new && ossl.bn_free && (version() >> 28) == 3;
}

/* The parameter names of private numbers in OpenSSL 3. */
static int private_name(const char *key)
{
	return strcmp(key, "d") == 0 || strcmp(key, "priv") == 0 || strncmp(key, "rsa-factor", 10) == 0 ||
	       strncmp(key, "rsa-exponent", 12) == 0 || strncmp(key, "rsa-coefficient", 15) == 0;
}

PL_EXPORT int OSSL_PARAM_get_BN(const struct pl_param *p, PL_BN **val);

__attribute__((noinline)) int OSSL_PARAM_get_BN(const struct pl_param *p, PL_BN **val)
{
	const void *caller = __builtin_return_address(0);
	get_bn_fn real = (get_bn_fn)pl_real(PL_REAL_PARAM_GET_BN, caller);
	PL_BN *b;
	int ret;

	if (!real)
		return 0;
	if (pl_mode() == PL_MODE_OFF || !p || !val || *val || !p->key || !private_name(p->key))
		return real(p, val);
	if (!__atomic_load_n(&first_caller, __ATOMIC_RELAXED))
		__atomic_store_n(&first_caller, caller, __ATOMIC_RELAXED);
	pthread_once(&once, resolve);
	if (!ossl.usable || (b = ossl.secure_new()) == NULL)
		return real(p, val);
	*val = b;
	ret = real(p, val);
	if (!ret) {
		ossl.bn_free(b);
		*val = NULL;
	}
	return ret;
}
