/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * preload.h - shared declarations of libsecretmem-preload.so.
 *
 * The module puts OpenSSL's memory into secret memory without changing the
 * program (see secretmem-preload(7)):
 *   preload.c  mode selection, SECRETMEM_REPORT
 *   libs.c     every libcrypto in the process (at start and after dlopen),
 *              the memory functions installed in each; the program's own
 *              CRYPTO_set_mem_functions()
 *   memfn.c    the memory functions (clear on free; secret memory)
 *   fallback.c secret memory, and the cause when it is refused
 *   secure.c   the exported CRYPTO_secure_* family, with OpenSSL's
 *              init/used/done semantics
 *   rsa.c      RSA's cached Montgomery contexts of p and q (copies of the
 *              primes) in the secure heap too
 *   param.c    private numbers OpenSSL copies out of parameters (the legacy
 *              RSA of EVP_PKEY_get1_RSA) in the secure heap too
 *   stdio.c    fclose() clears the stream buffer (key files go through it)
 *   real.c     finding the real OpenSSL functions at run time
 *   reach.c    the OpenSSL it cannot reach (another definition ahead of it,
 *              a copy of OpenSSL linked into another object): one warning,
 *              a page for `secretmem status`, the report
 *   dynobj.c   a loaded object's symbols and relocations; rebinding them
 *              for a library opened with RTLD_DEEPBIND (libs.c's dlopen)
 *   dlfrom.c   dlopen() with the caller's search path
 * (dynobj.c and dlfrom.c are linked into the heap module too.)
 * It uses libsecretmem through include/secretmem.h, plus three internal
 * calls (src/internal.h: sm_free_if_ours, a free with a single lookup,
 * sm_in_our_memory, and sm_failure_hint_off, which leaves the warning of a
 * refusal to fallback.c), and has no link-time dependency on OpenSSL: what it
 * needs is looked up with dlsym().
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
 * The mode asked for, from SECRETMEM_OPENSSL (read once; an invalid value
 * gives one warning and `secure`).  Whether the memory functions of that
 * mode are in place is per libcrypto (libs.c): pl_memfn_safe().
 */
int pl_mode(void);

/* Write "secretmem-preload: warning: <msg>\n" with one write(2). */
void pl_warn(const char *msg);

/* ---- fallback.c: secret memory, or the reason why not ------------------- */

/*
 * A block of num bytes from secret memory, or NULL (errno set).  A request
 * that fails for its own reasons (larger than anything could serve) changes
 * nothing; a refusal of secret memory itself prints one warning with its
 * cause and figures, and later requests go straight to ordinary memory (the
 * caller's, see pl_ordinary_allowed) until secret memory can be available
 * again (a secret block was freed, or RLIMIT_MEMLOCK changed).  secure_heap: 1 for the secure heap, 0 for
 * OPENSSL_malloc() in mode all (the counters of SECRETMEM_REPORT).
 */
void *pl_secret_malloc(size_t num, int secure_heap);
/* Every free of a secret block through the module (fallback.c retries). */
void pl_secret_freed(void);
/*
 * After pl_secret_malloc() failed for a block the module would have put in
 * secret memory: 1 if ordinary memory may serve it (counted for
 * SECRETMEM_REPORT), 0 under SECRETMEM_REQUIRE=1, and the caller's
 * allocation then fails with pl_secret_malloc()'s errno.
 */
int pl_ordinary_allowed(int secure_heap);

/* ---- memfn.c: the memory functions handed to CRYPTO_set_mem_functions -- */

typedef void *(*pl_malloc_fn)(size_t num, const char *file, int line);
typedef void *(*pl_realloc_fn)(void *ptr, size_t num, const char *file, int line);
typedef void (*pl_free_fn)(void *ptr, const char *file, int line);
typedef int (*pl_set_mem_fn)(pl_malloc_fn m, pl_realloc_fn r, pl_free_fn f);

/* mode PL_MODE_SECURE (clear on free) or PL_MODE_ALL (secret memory). */
void pl_memfn(int mode, pl_malloc_fn *m, pl_realloc_fn *r, pl_free_fn *f);
/* 1 once OpenSSL allocated through the module's memory functions. */
int pl_memfn_used(void);
/* Secure mode: the program's own functions, wrapped so that freed blocks
 * are still cleared (memfn.c); 1 on success. */
int pl_memfn_chain(pl_malloc_fn m, pl_realloc_fn r, pl_free_fn f, pl_malloc_fn *om, pl_realloc_fn *orr,
		   pl_free_fn *of);

/* ---- libs.c: every libcrypto in the process ------------------------------ */

/*
 * Find libcrypto copies not seen yet (at start, after each dlopen()) and
 * install the mode's memory functions in each.  Thread-safe.
 */
void pl_libs_scan(void);
/*
 * Called by every export with its caller's address: a caller in an object
 * not seen yet (libcrypto loaded in a way the module did not watch) triggers
 * pl_libs_scan().  Cheap when the caller is known.
 */
void pl_libs_check(const void *caller);
/*
 * 1 when every libcrypto seen has the module's memory functions (so an
 * OPENSSL_free() of a secret block reaches the module, never libc's free()).
 */
int pl_memfn_safe(void);
/* The program replaced the memory functions of the libcrypto of caller. */
void pl_libs_replaced(const void *caller);
/* 1 if any libcrypto was seen. */
int pl_libs_any(void);
/* Print the SECRETMEM_REPORT lines for the libraries. */
void pl_libs_report(void);
/* The real dlopen() (ours is exported), for the module's own lookups. */
void *pl_dlopen(const char *file, int flags);
/*
 * A libcrypto function by name: the usual global lookup, else (a libcrypto
 * loaded RTLD_LOCAL) from the object that contains the address caller.
 */
void *pl_sym_near(const void *caller, const char *name);

/* ---- reach.c: what the module cannot reach ------------------------------ */

/* At start-up (mode secure or all, the module asked for in LD_PRELOAD):
 * another object defines CRYPTO_secure_malloc ahead of the module?  Then
 * one warning, the page says inactive, and 1: the caller runs as mode off. */
int pl_reach_winner(void);
/* With libs.c's lock held, after each scan: warn of and publish every new
 * object with its own OpenSSL out of the module's reach. */
void pl_reach_scan_locked(void);
/* The SECRETMEM_REPORT lines of the above. */
void pl_reach_report(void);

/* stdio.c: libcrypto is in the process (it called one of our exports). */
void pl_openssl_seen(void);

/* secure.c: forget a block of the emulated OpenSSL arena (freed elsewhere). */
void pl_secure_untrack(void *ptr);

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
	PL_REAL_SET_MEM_FUNCTIONS,
	PL_REAL_PARAM_GET_BN,
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
