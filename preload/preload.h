/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * preload.h - shared declarations of libsecretmem-preload.so.
 *
 * The module puts OpenSSL's memory into secret memory without changing the
 * program (see secretmem-preload(7)):
 *   preload.c  mode selection, the `all` mode memory functions handed to
 *              CRYPTO_set_mem_functions(), fallback to ordinary memory
 *   secure.c   the exported CRYPTO_secure_* family (`secure` and `all`)
 *   rsa.c      `secure` mode: RSA's cached Montgomery contexts of p and q
 *              (copies of the primes) in the secure heap too
 *   stdio.c    fclose() clears the stream buffer (key files go through it)
 *   real.c     finding the real OpenSSL functions at run time
 * It uses libsecretmem only through include/secretmem.h and has no link-time
 * dependency on OpenSSL: what it needs is looked up with dlsym().
 */
#ifndef SECRETMEM_PRELOAD_H
#define SECRETMEM_PRELOAD_H

#include <stddef.h>

/* Symbols the dynamic linker must see (the build hides everything else). */
#define PL_EXPORT __attribute__((visibility("default")))

enum pl_mode {
	PL_MODE_OFF = 0,
	PL_MODE_SECURE = 1,
	PL_MODE_ALL = 2,
};

/*
 * The mode in force, from SECRETMEM_OPENSSL (read once; an invalid value
 * gives one warning and `secure`).  PL_MODE_ALL only once the memory
 * functions are installed; PL_MODE_SECURE when they could not be.
 */
int pl_mode(void);

/*
 * Called by every exported function: completes a pending `all` mode when
 * libcrypto was loaded after the module's constructor ran (dlopen), or
 * reports once that it cannot be completed.
 */
void pl_late_init(void);

/*
 * A block of num bytes from secret memory, or NULL.  On the first refusal
 * prints one warning naming the memory-lock limit; the caller then uses
 * ordinary memory for this allocation.
 */
void *pl_secret_malloc(size_t num);

/* stdio.c: libcrypto is in the process (it called one of our exports). */
void pl_openssl_seen(void);

/* Write "secretmem-preload: warning: <msg>\n" with one write(2). */
void pl_warn(const char *msg);

/* ---- real.c ----------------------------------------------------------- */

enum pl_real_fn {
	PL_REAL_SECURE_MALLOC = 0,
	PL_REAL_SECURE_ZALLOC,
	PL_REAL_SECURE_FREE,
	PL_REAL_SECURE_CLEAR_FREE,
	PL_REAL_SECURE_ALLOCATED,
	PL_REAL_SECURE_ACTUAL_SIZE,
	PL_REAL_SECURE_USED,
	PL_REAL_SECURE_INITIALIZED,
	PL_REAL_SECURE_INIT,
	PL_REAL_SECURE_DONE,
	PL_REAL_BN_MONT_CTX_SET_LOCKED,
	PL_REAL_COUNT
};

/*
 * The definition of one OpenSSL function that ours hides: the next one in the
 * lookup order (RTLD_NEXT), else - for a libcrypto that was dlopen()ed with
 * RTLD_LOCAL, as Python's ssl module does - the one reachable from the
 * object that called us (caller: a return address inside it).  NULL when
 * there is none.  Cached; thread-safe.
 */
void *pl_real(int fn, const void *caller);

#endif /* SECRETMEM_PRELOAD_H */
