/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * The module under a multi-threaded OpenSSL user that frees OpenSSL memory
 * late.  The test runs itself again with LD_PRELOAD="<module> libcrypto.so.3"
 * and SECRETMEM_OPENSSL=all, so that libcrypto is loaded before the module's
 * constructor as in a program linked with it; the child calls OpenSSL
 * through dlsym().  Four threads allocate, grow, check and free blocks with
 * CRYPTO_malloc/realloc/free and CRYPTO_secure_malloc/free; every block must
 * be in a /secretmem mapping, keep its contents and be recognised by
 * CRYPTO_secure_allocated().  Blocks left at exit are freed by an atexit
 * handler, by a destructor (after the exit handlers) and by OpenSSL's own
 * cleanup; the child must exit 0 without any message.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "scan.h"
#include "tlib.h"

typedef void *(*malloc_fn)(size_t, const char *, int);
typedef void *(*realloc_fn)(void *, size_t, const char *, int);
typedef void (*free_fn)(void *, const char *, int);

static malloc_fn c_malloc, c_secure_malloc;
static realloc_fn c_realloc;
static free_fn c_free, c_secure_free;
static int (*c_secure_allocated)(const void *);

#define THREADS 4
#define ITER 20000
#define SLOTS 64
#define LATE 32

static void *late_atexit[LATE], *late_dtor[LATE];

/* 1 if [p, p+len) lies inside a /secretmem mapping of this process. */
static int in_secretmem(const void *p, size_t len)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	int yes = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && strstr(line, " /secretmem (deleted)") &&
		    (uintptr_t)p >= a && (uintptr_t)p + len <= b)
			yes = 1;
	}
	fclose(f);
	return yes;
}

static void *worker(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	struct { void *p; size_t len; uint64_t tag; int secure; } slot[SLOTS];
	unsigned checked = 0;

	memset(slot, 0, sizeof(slot));
	for (int i = 0; i < ITER; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		int k = (int)((seed >> 33) % SLOTS);
		size_t len = 1 + (size_t)((seed >> 13) % ((seed >> 60) < 2 ? 40000 : 600));

		if (slot[k].p) {
			if (!tl_check(slot[k].p, slot[k].len, slot[k].tag)) {
				fprintf(stderr, "block contents changed\n");
				exit(1);
			}
			if (!slot[k].secure && (seed >> 40) % 3 == 0) {
				void *q = c_realloc(slot[k].p, len, __FILE__, __LINE__);
				if (!q) {
					fprintf(stderr, "CRYPTO_realloc failed\n");
					exit(1);
				}
				size_t keep = len < slot[k].len ? len : slot[k].len;
				if (!tl_check(q, keep, slot[k].tag)) {
					fprintf(stderr, "realloc lost the contents\n");
					exit(1);
				}
				slot[k].p = q;
				slot[k].len = len;
				tl_fill(q, len, slot[k].tag);
				continue;
			}
			(slot[k].secure ? c_secure_free : c_free)(slot[k].p, __FILE__, __LINE__);
			slot[k].p = NULL;
			continue;
		}
		slot[k].secure = (seed >> 50) % 4 == 0;
		slot[k].p = (slot[k].secure ? c_secure_malloc : c_malloc)(len, __FILE__, __LINE__);
		if (!slot[k].p) {
			fprintf(stderr, "allocation of %zu failed\n", len);
			exit(1);
		}
		if (slot[k].secure && c_secure_allocated(slot[k].p) != 1) {
			fprintf(stderr, "CRYPTO_secure_allocated() denies a secure block\n");
			exit(1);
		}
		if (checked++ % 500 == 0 && !in_secretmem(slot[k].p, len)) {
			fprintf(stderr, "block %p (%zu bytes) is not in secret memory\n", slot[k].p, len);
			exit(1);
		}
		slot[k].len = len;
		slot[k].tag = seed;
		tl_fill(slot[k].p, len, seed);
	}
	for (int k = 0; k < SLOTS; k++)
		if (slot[k].p)
			(slot[k].secure ? c_secure_free : c_free)(slot[k].p, __FILE__, __LINE__);
	return NULL;
}

static void free_at_exit(void)
{
	for (int i = 0; i < LATE; i++)
		c_free(late_atexit[i], __FILE__, __LINE__);
}

__attribute__((destructor)) static void free_in_destructor(void)
{
	for (int i = 0; i < LATE; i++)
		if (late_dtor[i])
			(i % 2 ? c_secure_free : c_free)(late_dtor[i], __FILE__, __LINE__);
}

static int child(void)
{
	pthread_t t[THREADS];
	int (*init)(uint64_t, const void *);

	*(void **)&c_malloc = dlsym(RTLD_DEFAULT, "CRYPTO_malloc");
	*(void **)&c_realloc = dlsym(RTLD_DEFAULT, "CRYPTO_realloc");
	*(void **)&c_free = dlsym(RTLD_DEFAULT, "CRYPTO_free");
	*(void **)&c_secure_malloc = dlsym(RTLD_DEFAULT, "CRYPTO_secure_malloc");
	*(void **)&c_secure_free = dlsym(RTLD_DEFAULT, "CRYPTO_secure_free");
	*(void **)&c_secure_allocated = dlsym(RTLD_DEFAULT, "CRYPTO_secure_allocated");
	*(void **)&init = dlsym(RTLD_DEFAULT, "OPENSSL_init_crypto");
	if (!c_malloc || !c_realloc || !c_free || !c_secure_malloc || !c_secure_free ||
	    !c_secure_allocated || !init) {
		fprintf(stderr, "libcrypto is not loaded\n");
		return 1;
	}
	/* OpenSSL registers its cleanup with atexit() here, before ours. */
	if (init(0, NULL) != 1)
		return 1;
	for (int i = 0; i < LATE; i++) {
		late_dtor[i] = (i % 2 ? c_secure_malloc : c_malloc)(100 + (size_t)i * 50, __FILE__, __LINE__);
		late_atexit[i] = c_malloc(3000, __FILE__, __LINE__);
		if (!late_dtor[i] || !late_atexit[i] || !in_secretmem(late_atexit[i], 3000))
			return 1;
	}
	atexit(free_at_exit);
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0)
			return 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	char log[300], self[PATH_MAX];

	if (argc == 2 && strcmp(argv[1], "child") == 0)
		return child();
	tl_need_secretmem();
	const char *preload = rig_ld_preload();
	void *h = dlopen("libcrypto.so.3", RTLD_LAZY | RTLD_NOLOAD);
	if (!h && !(h = dlopen("libcrypto.so.3", RTLD_LAZY)))
		tl_skip("libcrypto.so.3 not installed");
	dlclose(h);
	/* argv[0], not /proc/self/exe, which is valgrind under valgrind. */
	TL_CHECK(realpath(argv[0], self) != NULL, "realpath %s", argv[0]);
	snprintf(log, sizeof(log), "%s/child.log", rig_tmpdir());
	int st = rig_sh("LD_PRELOAD='%s libcrypto.so.3' ASAN_OPTIONS=detect_leaks=0 SECRETMEM_OPENSSL=all "
			"'%s' child > '%s' 2>&1", preload, self, log);
	rig_cat(log);
	TL_CHECK(st == 0, "the child failed (status %d)", st);
	TL_CHECK(rig_file_count(log, "") == 0, "the child printed something");
	printf("threads and late frees: every OpenSSL block in secret memory, clean exit\n");
	return 0;
}
