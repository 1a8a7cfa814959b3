/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * allocators.c - the seven allocators measured and their table: per
 * allocator the calls (alloc, release with the clearing it needs, realloc,
 * trim), the timed loops of 1-5 (loops.h) instantiated on those calls,
 * whether it is available and why not; the loading of mimalloc and
 * jemalloc in their own symbol scope.
 *
 *   secretmem    secretmem_malloc / secretmem_free
 *   glibc+bzero  malloc, then explicit_bzero + free (no protection at all;
 *                the speed reference every ratio is taken against)
 *   mimalloc     mi_malloc / explicit_bzero + mi_free, and
 *   jemalloc     mallocx / explicit_bzero + dallocx, from Debian's
 *                libmimalloc.so.2 and libjemalloc.so.2 (load_general())
 *   openssl-sh   OpenSSL's secure heap (CRYPTO_secure_malloc)
 *   sodium       sodium_malloc / sodium_free
 *   naive-memfd  one memfd_secret(2) file per secret
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <openssl/crypto.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "bench.h"
#include "loops.h"

volatile uintptr_t sink;

static void *alloc_secretmem(size_t n)
{
	return secretmem_malloc(n);
}

static void release_secretmem(void *p, size_t n)
{
	(void)n;
	secretmem_free(p);
}

static void *realloc_secretmem(void *p, size_t old, size_t n)
{
	(void)old;
	return secretmem_realloc(p, n);
}

static void *alloc_glibc(size_t n)
{
	return malloc(n);
}

static void release_glibc(void *p, size_t n)
{
	explicit_bzero(p, n);
	free(p);
}

static void *realloc_glibc(void *p, size_t old, size_t n)
{
	(void)old;
	return realloc(p, n);
}

/* mimalloc and jemalloc, resolved in their own libraries by load_general() */
static void *(*mi_malloc_p)(size_t);
static void (*mi_free_p)(void *);
static void *(*mi_realloc_p)(void *, size_t);
static void (*mi_collect_p)(bool);
static void *(*je_mallocx_p)(size_t, int);
static void (*je_dallocx_p)(void *, int);
static void *(*je_rallocx_p)(void *, size_t, int);
static int (*je_mallctl_p)(const char *, void *, size_t *, void *, size_t);

static void *alloc_mimalloc(size_t n)
{
	return mi_malloc_p(n);
}

static void release_mimalloc(void *p, size_t n)
{
	explicit_bzero(p, n);
	mi_free_p(p);
}

static void *realloc_mimalloc(void *p, size_t old, size_t n)
{
	(void)old;
	return mi_realloc_p(p, n);
}

static void *alloc_jemalloc(size_t n)
{
	return je_mallocx_p(n, 0);
}

static void release_jemalloc(void *p, size_t n)
{
	explicit_bzero(p, n);
	je_dallocx_p(p, 0);
}

static void *realloc_jemalloc(void *p, size_t old, size_t n)
{
	(void)old;
	return je_rallocx_p(p, n, 0);
}

static void *alloc_openssl(size_t n)
{
	return OPENSSL_secure_malloc(n);
}

/* CRYPTO_secure_free clears the block (OPENSSL_cleanse) before freeing. */
static void release_openssl(void *p, size_t n)
{
	(void)n;
	OPENSSL_secure_free(p);
}

static void *alloc_sodium(size_t n)
{
	return sodium_malloc(n);
}

static void release_sodium(void *p, size_t n)
{
	(void)n;
	sodium_free(p);
}

/*
 * The naive allocator: one memfd_secret file per secret, kept open for the
 * life of the block (as the Rust memsec crate does).  The first 16 bytes of
 * the page hold the fd and the mapping length; the block follows.
 */
struct naive_head {
	int fd;
	size_t len;
};
#define NAIVE_HEAD 16

static void *alloc_naive(size_t n)
{
	size_t len = (n + NAIVE_HEAD + page_size - 1) & ~(page_size - 1);
	int fd = secretmem_memfd(O_CLOEXEC);

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	if (ftruncate(fd, (off_t)len) != 0)
		goto fail;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		goto fail;
	struct naive_head *h = m;
	h->fd = fd;
	h->len = len;
	return (char *)m + NAIVE_HEAD;
fail:;
	int e = errno;
	close(fd);
	errno = e;
	return NULL;
}

static void release_naive(void *p, size_t n)
{
	struct naive_head *h = (struct naive_head *)((char *)p - NAIVE_HEAD);
	int fd = h->fd;
	size_t len = h->len;

	explicit_bzero(p, n);
	munmap(h, len);
	close(fd);
}

/* The secure allocators without a realloc: allocate, copy, free. */
#define COPY_REALLOC(id)                                                \
	static void *realloc_##id(void *p, size_t old, size_t n)        \
	{                                                               \
		void *q = alloc_##id(n);                                \
		if (q) {                                                \
			memcpy(q, p, old < n ? old : n);                \
			release_##id(p, old);                           \
		}                                                       \
		return q;                                               \
	}
COPY_REALLOC(openssl)
COPY_REALLOC(sodium)
COPY_REALLOC(naive)

/* Each allocator's trim, for the "after trim" chain. */
static void trim_secretmem(void)
{
	secretmem_trim();
}

static void trim_glibc(void)
{
	malloc_trim(0);
}

static void trim_mimalloc(void)
{
	if (mi_collect_p)
		mi_collect_p(true);
}

static void trim_jemalloc(void)
{
	if (je_mallctl_p) /* MALLCTL_ARENAS_ALL = 4096 */
		je_mallctl_p("arena.4096.purge", NULL, NULL, NULL, 0);
}

static void trim_none(void)
{
}
#define trim_openssl trim_none
#define trim_sodium trim_none
#define trim_naive trim_none

/* The timed loops of 1-5 (loops.h), instantiated per allocator so the calls are direct. */
#define DEFINE_LOOPS(id)                                                                       \
	static double pairs_##id(long k) { return loop_pairs(alloc_##id, release_##id, k); }   \
	static double batch_##id(long k) { return loop_batch(alloc_##id, release_##id, k); }   \
	static double random_##id(long k)                                                      \
	{                                                                                      \
		return loop_random(alloc_##id, release_##id, k, rnd_size, LIVE);               \
	}                                                                                      \
	static double big_##id(long k)                                                         \
	{                                                                                      \
		return loop_random(alloc_##id, release_##id, k, big_size, BIG_LIVE);           \
	}                                                                                      \
	static void work_##id(long k) { loop_work(alloc_##id, release_##id, k); }

DEFINE_LOOPS(secretmem)
DEFINE_LOOPS(glibc)
DEFINE_LOOPS(mimalloc)
DEFINE_LOOPS(jemalloc)
DEFINE_LOOPS(openssl)
DEFINE_LOOPS(sodium)
DEFINE_LOOPS(naive)

#define ALLOCATOR(id)                                                                          \
	{ #id, alloc_##id, release_##id, realloc_##id, trim_##id, pairs_##id, batch_##id,      \
	  random_##id, big_##id, work_##id, 1, NULL }

struct allocator allocs[NALLOC] = {
	ALLOCATOR(secretmem), ALLOCATOR(glibc),  ALLOCATOR(mimalloc), ALLOCATOR(jemalloc),
	ALLOCATOR(openssl),   ALLOCATOR(sodium), ALLOCATOR(naive),
};

const char *const col_name[NALLOC] = {
	"secretmem", "glibc+bzero", "mimalloc", "jemalloc", "openssl-sh", "sodium", "naive-memfd",
};

int find_alloc(const char *name)
{
	for (int i = 0; i < NALLOC; i++)
		if (strcmp(allocs[i].name, name) == 0)
			return i;
	return -1;
}

static char general_why[2][256];

/*
 * mimalloc and jemalloc from Debian's shared libraries, each in its own
 * symbol scope: RTLD_LOCAL keeps their malloc out of the process's global
 * scope (the process's malloc stays glibc's), RTLD_DEEPBIND makes their own
 * calls bind inside them.  A missing library makes that column "n/a" with
 * the reason.
 */
void load_general(void)
{
	void *h = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);

	if (h) {
		*(void **)&mi_malloc_p = dlsym(h, "mi_malloc");
		*(void **)&mi_free_p = dlsym(h, "mi_free");
		*(void **)&mi_realloc_p = dlsym(h, "mi_realloc");
		*(void **)&mi_collect_p = dlsym(h, "mi_collect");
	}
	if (!h || !mi_malloc_p || !mi_free_p || !mi_realloc_p) {
		snprintf(general_why[0], sizeof(general_why[0]), "libmimalloc.so.2: %s (Debian package libmimalloc2.0)",
			 h ? "mi_malloc/mi_free/mi_realloc missing" : dlerror());
		allocs[A_MIMALLOC].available = 0;
		allocs[A_MIMALLOC].why = general_why[0];
	}
	h = dlopen("libjemalloc.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	if (h) {
		*(void **)&je_mallocx_p = dlsym(h, "mallocx");
		*(void **)&je_dallocx_p = dlsym(h, "dallocx");
		*(void **)&je_rallocx_p = dlsym(h, "rallocx");
		*(void **)&je_mallctl_p = dlsym(h, "mallctl");
	}
	if (!h || !je_mallocx_p || !je_dallocx_p || !je_rallocx_p) {
		snprintf(general_why[1], sizeof(general_why[1]), "libjemalloc.so.2: %s (Debian package libjemalloc2)",
			 h ? "mallocx/dallocx/rallocx missing" : dlerror());
		allocs[A_JEMALLOC].available = 0;
		allocs[A_JEMALLOC].why = general_why[1];
	}
}

/* The library that defines the process's malloc (should be libc). */
const char *process_malloc(void)
{
	Dl_info di;
	void *m = dlsym(RTLD_DEFAULT, "malloc");

	if (m && dladdr(m, &di) && di.dli_fname) {
		const char *s = strrchr(di.dli_fname, '/');
		return s ? s + 1 : di.dli_fname;
	}
	return "?";
}
