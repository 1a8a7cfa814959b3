/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * preload.c - mode selection and the `all` mode of libsecretmem-preload.so.
 *
 * SECRETMEM_OPENSSL=secure (default): the exported CRYPTO_secure_* family
 * (secure.c) serves OpenSSL's secure heap - where it keeps private keys -
 * from secret memory, and OpenSSL's ordinary allocations stay in malloc()
 * but are cleared when freed (OpenSSL frees decoded key files, e.g. the DER
 * bytes of PEM_read_bio_PrivateKey(), without clearing them).  =all: in addition every OPENSSL_malloc() comes from
 * secret memory: the constructor below hands OpenSSL our memory functions
 * with CRYPTO_set_mem_functions(), which OpenSSL accepts only before its
 * first allocation.  =off: the module does nothing (the exports forward to
 * OpenSSL's own functions).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <malloc.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "secretmem.h"
#include "preload.h"

typedef void *(*malloc_fn)(size_t num, const char *file, int line);
typedef void *(*realloc_fn)(void *ptr, size_t num, const char *file, int line);
typedef void (*free_fn)(void *ptr, const char *file, int line);
typedef int (*set_mem_functions_fn)(malloc_fn m, realloc_fn r, free_fn f);

enum all_state {
	ALL_NOT_WANTED = 0,
	ALL_INSTALLED,
	ALL_PENDING,  /* libcrypto not loaded when the constructor ran */
	ALL_FAILED,   /* OpenSSL refused: it had allocated already     */
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int requested_mode = PL_MODE_SECURE;
static int all_state = ALL_NOT_WANTED;
static pthread_mutex_t late_lock = PTHREAD_MUTEX_INITIALIZER;
static int exhausted_warned;
static int backend_checked;

void pl_warn(const char *msg)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "secretmem-preload: warning: %s\n", msg);

	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1;
	/* One write, so that the line is not interleaved with other output. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

/* ---- the `secure` mode memory functions: clear on free ----------------- */

static void clear_free(void *ptr, const char *file, int line)
{
	(void)file;
	(void)line;
	if (!ptr)
		return;
	explicit_bzero(ptr, malloc_usable_size(ptr));
	free(ptr);
}

static void *clear_malloc(size_t num, const char *file, int line)
{
	(void)file;
	(void)line;
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
	old = malloc_usable_size(ptr);
	if (num <= old)
		return ptr;
	p = malloc(num);
	if (!p)
		return NULL;
	memcpy(p, ptr, old);
	clear_free(ptr, file, line);
	return p;
}

/* ---- the `all` mode memory functions ---------------------------------- */

/*
 * OpenSSL's own CRYPTO_malloc(0) returns NULL without calling anything; the
 * hooks keep that behaviour, so a program sees the same results with and
 * without the module.
 */
static void *all_malloc(size_t num, const char *file, int line)
{
	void *p;

	(void)file;
	(void)line;
	if (num == 0)
		return NULL;
	p = pl_secret_malloc(num);
	return p ? p : malloc(num);
}

static void all_free(void *ptr, const char *file, int line)
{
	(void)file;
	(void)line;
	if (!ptr)
		return;
	/* Blocks of the ordinary-memory fallback belong to libc. */
	if (secretmem_owns(ptr))
		secretmem_free(ptr);
	else
		clear_free(ptr, file, line);
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
	if (!secretmem_owns(ptr))
		return clear_realloc(ptr, num, file, line);
	p = secretmem_realloc(ptr, num);
	if (p)
		return p;
	/* Secret memory refused the larger block: move to ordinary memory. */
	p = pl_secret_malloc(num);
	if (!p)
		p = malloc(num);
	if (!p)
		return NULL;
	old = secretmem_usable_size(ptr);
	memcpy(p, ptr, old < num ? old : num);
	secretmem_free(ptr); /* zeroizes */
	return p;
}

/* ---- mode selection --------------------------------------------------- */

static void try_install(int late)
{
	set_mem_functions_fn set;

	*(void **)&set = dlsym(RTLD_DEFAULT, "CRYPTO_set_mem_functions");
	if (!set) {
		if (!late) {
			/* The program may dlopen() libcrypto later. */
			all_state = ALL_PENDING;
			return;
		}
		all_state = ALL_FAILED;
		pl_warn("SECRETMEM_OPENSSL=all: libcrypto was loaded after program start "
			"(dlopen), too late for CRYPTO_set_mem_functions; using mode secure");
		return;
	}
	if (set(all_malloc, all_realloc, all_free) == 1) {
		all_state = ALL_INSTALLED;
		return;
	}
	all_state = ALL_FAILED;
	pl_warn(late ? "SECRETMEM_OPENSSL=all: libcrypto was loaded after program start "
		       "and OpenSSL refused CRYPTO_set_mem_functions; using mode secure"
		     : "SECRETMEM_OPENSSL=all: OpenSSL had allocated memory before the module "
		       "started and refused CRYPTO_set_mem_functions; using mode secure");
}

/*
 * `secure` mode: best effort and quiet - a program that loads libcrypto
 * later or allocated before us keeps OpenSSL's own functions.
 */
static void install_clearing(void)
{
	set_mem_functions_fn set;

	*(void **)&set = dlsym(RTLD_DEFAULT, "CRYPTO_set_mem_functions");
	if (set)
		set(clear_malloc, clear_realloc, clear_free);
}

static void init(void)
{
	const char *v = getenv("SECRETMEM_OPENSSL");

	if (!v || !*v || strcmp(v, "secure") == 0) {
		requested_mode = PL_MODE_SECURE;
	} else if (strcmp(v, "all") == 0) {
		requested_mode = PL_MODE_ALL;
	} else if (strcmp(v, "off") == 0) {
		requested_mode = PL_MODE_OFF;
	} else {
		requested_mode = PL_MODE_SECURE;
		pl_warn("invalid value of SECRETMEM_OPENSSL (secure, all or off), using secure");
	}
	if (requested_mode == PL_MODE_ALL)
		try_install(0);
	if (requested_mode == PL_MODE_SECURE)
		install_clearing();
}

/*
 * Runs before main() and, in the usual case where the program is linked
 * with libcrypto, after libcrypto is loaded but before OpenSSL's first
 * allocation.
 */
__attribute__((constructor)) static void preload_constructor(void)
{
	pthread_once(&init_once, init);
}

void pl_late_init(void)
{
	pthread_once(&init_once, init);
	pl_openssl_seen();
	if (__atomic_load_n(&all_state, __ATOMIC_ACQUIRE) != ALL_PENDING)
		return;
	pthread_mutex_lock(&late_lock);
	if (all_state == ALL_PENDING)
		try_install(1);
	pthread_mutex_unlock(&late_lock);
}

int pl_mode(void)
{
	pthread_once(&init_once, init);
	if (requested_mode == PL_MODE_ALL)
		return all_state == ALL_INSTALLED ? PL_MODE_ALL : PL_MODE_SECURE;
	return requested_mode;
}

/* ---- secret memory with a fallback ------------------------------------ */

static void warn_exhausted(int err)
{
	struct rlimit rl;
	char msg[320], limit[64];

	if (__atomic_exchange_n(&exhausted_warned, 1, __ATOMIC_ACQ_REL))
		return;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0)
		snprintf(limit, sizeof(limit), "unknown");
	else if (rl.rlim_cur == RLIM_INFINITY)
		snprintf(limit, sizeof(limit), "unlimited");
	else
		snprintf(limit, sizeof(limit), "%llu bytes", (unsigned long long)rl.rlim_cur);
	snprintf(msg, sizeof(msg),
		 "secret memory refused an allocation (%s; memory-lock limit RLIMIT_MEMLOCK = %s); "
		 "OpenSSL allocations that do not fit use ordinary memory",
		 strerror(err), limit);
	pl_warn(msg);
}

static void check_backend(void)
{
	int b;

	if (__atomic_exchange_n(&backend_checked, 1, __ATOMIC_ACQ_REL))
		return;
	b = secretmem_default_backend();
	if (b == SECRETMEM_BACKEND_FALLBACK)
		pl_warn("memfd_secret(2) is not usable here; OpenSSL's memory is locked "
			"ordinary memory (kept out of swap and core dumps, but readable by root)");
}

/*
 * Once secret memory has refused an allocation (the memory-lock limit), a
 * new attempt costs a handful of failing system calls; only one allocation
 * in PL_RETRY_EVERY tries again, the others go to ordinary memory at once.
 * A successful retry ends the degraded state.
 */
#define PL_RETRY_EVERY 256

static int degraded;
static unsigned long degraded_count;

void *pl_secret_malloc(size_t num)
{
	void *p;
	int err;

	if (__builtin_expect(!__atomic_load_n(&backend_checked, __ATOMIC_RELAXED), 0))
		check_backend();
	if (__builtin_expect(__atomic_load_n(&degraded, __ATOMIC_RELAXED), 0) &&
	    __atomic_add_fetch(&degraded_count, 1, __ATOMIC_RELAXED) % PL_RETRY_EVERY != 0) {
		errno = ENOMEM;
		return NULL;
	}
	p = secretmem_malloc(num);
	if (__builtin_expect(p != NULL, 1)) {
		if (__builtin_expect(__atomic_load_n(&degraded, __ATOMIC_RELAXED), 0))
			__atomic_store_n(&degraded, 0, __ATOMIC_RELAXED);
		return p;
	}
	err = errno;
	__atomic_store_n(&degraded, 1, __ATOMIC_RELAXED);
	warn_exhausted(err);
	errno = err;
	return NULL;
}
