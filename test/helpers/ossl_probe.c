/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * ossl_probe - a small OpenSSL program that the t_preload_* tests run under
 * the preload module (and without it).  It is linked with libcrypto; each
 * subcommand prints what it saw, one "name: value" line per fact, and exits
 * 0 (1 on a failed check, 2 on a usage error).  Whether a block lies in
 * secret memory is read from /proc/self/maps (a "/secretmem" mapping).
 *
 *   sizemax          OPENSSL_secure_malloc(SIZE_MAX) and a huge size fail,
 *                    then 600 small secure blocks: how many are secret
 *   exhaust SOFT [big]  (big: first a block twice the limit) lower the soft RLIMIT_MEMLOCK to SOFT bytes, fill
 *                    secret memory, then check that it is used again after
 *                    a free and after the soft limit is raised again
 *   asrefuse         secret memory refused by the address-space limit
 *   emfile           with the soft RLIMIT_NOFILE at 64 and every descriptor
 *                    open: secure blocks until one is refused (ordinary or
 *                    NULL), ten more; then, all descriptors closed and
 *                    nothing freed, whether the next secure block is secret
 *   refused SOFT     (SOFT > 0: lower the soft RLIMIT_MEMLOCK to SOFT bytes)
 *                    300 OPENSSL_secure_malloc/zalloc(1024), then 300
 *                    OPENSSL_malloc(1024): how many of each are secret,
 *                    ordinary or NULL; then, after a free of 16 secret
 *                    blocks, whether the next secure block is secret
 *   twocopies PATH   dlopen libcrypto.so.3 and a copy of it at PATH: whose
 *                    memory functions each one has, where CRYPTO_malloc()
 *                    of each puts its blocks
 *   setmem           the program installs its own memory functions
 *   secmem MODE      the checks of OpenSSL's test/secmemtest.c (our own
 *                    code); MODE plain, secure or all selects the expected
 *                    answers where secretmem-preload(7) lists a difference
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

static int failures;

#define CHECK(cond, ...)                                                                         \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			printf("FAILED (line %d): ", __LINE__);                                  \
			printf(__VA_ARGS__);                                                     \
			printf("\n");                                                            \
			failures++;                                                              \
		}                                                                                \
	} while (0)

/* 1 if p lies in a secret memory mapping of this process. */
static int is_secret(const void *p)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int ret = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)p >= lo && (uintptr_t)p < hi) {
			ret = strstr(line, "/secretmem") != NULL;
			break;
		}
	}
	fclose(f);
	return ret;
}

static int cmd_sizemax(void)
{
	void *blocks[600];
	int secret = 0;

	CHECK(OPENSSL_secure_malloc(SIZE_MAX) == NULL, "OPENSSL_secure_malloc(SIZE_MAX) succeeded");
	CHECK(OPENSSL_secure_zalloc(SIZE_MAX / 2 + 1) == NULL, "OPENSSL_secure_zalloc(SIZE_MAX/2+1) succeeded");
	CHECK(OPENSSL_malloc(SIZE_MAX) == NULL, "OPENSSL_malloc(SIZE_MAX) succeeded");
	for (int i = 0; i < 600; i++) {
		blocks[i] = OPENSSL_secure_malloc(32);
		CHECK(blocks[i] != NULL, "OPENSSL_secure_malloc(32) failed");
		secret += blocks[i] && is_secret(blocks[i]);
	}
	printf("secret after SIZE_MAX: %d of 600\n", secret);
	for (int i = 0; i < 600; i++)
		OPENSSL_secure_free(blocks[i]);
	return failures ? 1 : 0;
}

#define MAXB 20000

/* Allocate 1 KiB secure blocks until one is ordinary memory; returns how
 * many were secret, their pointers in b. */
static int fill(void **b, int *n)
{
	int secret = 0;

	while (*n < MAXB) {
		void *p = OPENSSL_secure_malloc(1024);

		if (!p)
			break;
		b[(*n)++] = p;
		if (!is_secret(p))
			break;
		secret++;
	}
	return secret;
}

static int cmd_exhaust(size_t soft, int big)
{
	static void *b[MAXB];
	struct rlimit rl;
	int n = 0, secret, again;
	void *p;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_max == RLIM_INFINITY || rl.rlim_max <= soft) {
		printf("FAILED: hard RLIMIT_MEMLOCK must be finite and above %zu\n", soft);
		return 1;
	}
	rl.rlim_cur = soft;
	if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) {
		printf("FAILED: setrlimit\n");
		return 1;
	}
	if (big) {
		/* Larger than the limit: ordinary memory, and nothing else changes. */
		p = OPENSSL_secure_malloc(2 * soft);
		printf("block larger than the limit: %s\n", !p ? "NULL" : is_secret(p) ? "secret" : "ordinary");
		b[n++] = p;
		p = OPENSSL_secure_malloc(1024);
		printf("secret right after it: %d\n", is_secret(p));
		b[n++] = p;
	}
	secret = fill(b, &n);
	printf("secret before the first ordinary block: %d\n", secret);
	CHECK(n < MAXB, "secret memory never ran out");
	/* Nothing freed, same limit: ordinary memory, without trying again. */
	again = 0;
	for (int i = 0; i < 20 && n < MAXB; i++) {
		b[n] = OPENSSL_secure_malloc(1024);
		again += is_secret(b[n++]);
	}
	printf("secret while refused: %d of 20\n", again);
	/* Free 16 secret blocks: the next request gets secret memory again. */
	for (int i = 0, freed = 0; i < n && freed < 16; i++)
		if (b[i] && is_secret(b[i])) {
			OPENSSL_secure_free(b[i]);
			b[i] = NULL;
			freed++;
		}
	p = OPENSSL_secure_malloc(1024);
	printf("secret after a free: %d\n", is_secret(p));
	b[n++] = p;
	/* Fill again, then raise the soft limit. */
	fill(b, &n);
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) {
		printf("FAILED: setrlimit up\n");
		return 1;
	}
	p = OPENSSL_secure_malloc(1024);
	printf("secret after the limit was raised: %d\n", is_secret(p));
	b[n++] = p;
	for (int i = 0; i < n; i++)
		OPENSSL_secure_free(b[i]);
	return failures ? 1 : 0;
}

static int cmd_refused(size_t soft)
{
	static void *b[600];
	struct rlimit rl;
	int n = 0;

	if (soft) {
		CHECK(getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_max > soft, "hard RLIMIT_MEMLOCK above %zu", soft);
		rl.rlim_cur = soft;
		CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0, "setrlimit");
	}
	for (int kind = 0; kind < 2; kind++) {
		int secret = 0, ordinary = 0, null = 0;

		for (int i = 0; i < 300; i++) {
			void *p = kind == 1   ? OPENSSL_malloc(1024)
				  : i % 2 ? OPENSSL_secure_zalloc(1024)
					  : OPENSSL_secure_malloc(1024);

			b[n++] = p;
			if (!p)
				null++;
			else if (is_secret(p))
				secret++;
			else
				ordinary++;
		}
		printf("%s: %d secret, %d ordinary, %d NULL\n", kind == 0 ? "secure" : "plain", secret, ordinary,
		       null);
	}
	for (int i = 0, freed = 0; i < 300 && freed < 16; i++)
		if (b[i] && is_secret(b[i])) {
			OPENSSL_secure_free(b[i]);
			b[i] = NULL;
			freed++;
		}
	void *p = OPENSSL_secure_malloc(1024);
	printf("secret after a free: %d\n", p && is_secret(p));
	OPENSSL_secure_free(p);
	for (int i = 0; i < n; i++)
		if (i < 300)
			OPENSSL_secure_free(b[i]);
		else
			OPENSSL_free(b[i]);
	return failures ? 1 : 0;
}

/*
 * Secret memory refused for a reason other than the memory-lock limit (run
 * as root, with CAP_IPC_LOCK): the address-space limit is set just above
 * what the process uses, so that new mappings fail.
 */
static int cmd_asrefuse(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long kb = 0;
	int ordinary = 0;
	struct rlimit rl;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %lu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	if (!kb) {
		printf("FAILED: VmSize\n");
		return 1;
	}
	rl.rlim_cur = rl.rlim_max = (kb + 512) * 1024;
	if (setrlimit(RLIMIT_AS, &rl) != 0) {
		printf("FAILED: setrlimit(RLIMIT_AS)\n");
		return 1;
	}
	for (int i = 0; i < 2000 && !ordinary; i++) {
		void *p = OPENSSL_secure_malloc(1024);

		if (!p)
			break;
		ordinary = !is_secret(p);
	}
	printf("ordinary block under the address-space limit: %d\n", ordinary);
	return 0;
}

/* ---- emfile --------------------------------------------------------------- */

static char mapsbuf[1 << 20];

/* is_secret() through maps, a descriptor of /proc/self/maps opened before the
 * table was filled: it needs no new one. */
static int is_secret_at(int maps, const void *p)
{
	size_t n = 0;
	ssize_t k;

	while (n < sizeof(mapsbuf) - 1 && (k = pread(maps, mapsbuf + n, sizeof(mapsbuf) - 1 - n, (off_t)n)) > 0)
		n += (size_t)k;
	mapsbuf[n] = '\0';
	for (char *l = mapsbuf, *e; *l; l = e + 1) {
		unsigned long lo, hi;

		e = strchr(l, '\n');
		if (!e)
			break;
		*e = '\0';
		if (sscanf(l, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)p >= lo && (uintptr_t)p < hi)
			return strstr(l, "/secretmem") != NULL;
	}
	return 0;
}

static const char *kind_at(int maps, const void *p)
{
	return !p ? "NULL" : is_secret_at(maps, p) ? "secret" : "ordinary";
}

static int cmd_emfile(void)
{
	static int fds[64];
	static void *b[256];
	struct rlimit rl;
	int nfd = 0, n = 0, secret = 0, c[3] = { 0, 0, 0 }, maps, err = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_max < 64) {
		printf("FAILED: hard RLIMIT_NOFILE below 64\n");
		return 1;
	}
	/* a daemon's pidfile on descriptor 0, under a record lock: the
	 * module's descriptor check must not release it (a close of any
	 * descriptor of the file would) */
	char lockpath[] = "/tmp/ossl_probe_lock.XXXXXX";
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	close(0);
	if (mkstemp(lockpath) != 0 || fcntl(0, F_SETLK, &fl) != 0) {
		printf("FAILED: no locked file on descriptor 0\n");
		return 1;
	}
	unlink(lockpath);
	rl.rlim_cur = 64;
	maps = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || maps < 0) {
		printf("FAILED: setrlimit or /proc/self/maps\n");
		return 1;
	}
	while (nfd < 64) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			err = errno;
			break;
		}
		fds[nfd++] = fd;
	}
	if (err != EMFILE) {
		printf("FAILED: the descriptor table did not fill (%s)\n", strerror(err));
		return 1;
	}
	/* The table is full: secure blocks until one is refused. */
	while (n < 200) {
		void *p = OPENSSL_secure_malloc(1024);

		b[n++] = p;
		if (!p || !is_secret_at(maps, p))
			break;
		secret++;
	}
	printf("at EMFILE: %d secret, then %s\n", secret, n < 200 ? kind_at(maps, b[n - 1]) : "none refused");
	for (int i = 0; i < 10; i++) {
		void *p = OPENSSL_secure_malloc(1024);

		b[n++] = p;
		c[!p ? 2 : is_secret_at(maps, p) ? 0 : 1]++;
	}
	printf("still at EMFILE: %d secret, %d ordinary, %d NULL\n", c[0], c[1], c[2]);
	/* Descriptors free again, nothing freed: secret memory again. */
	while (nfd)
		close(fds[--nfd]);
	b[n] = OPENSSL_secure_malloc(1024);
	printf("after the descriptors were closed: %s\n", kind_at(maps, b[n]));
	n++;
	/* after the check found a free descriptor: another process sees
	 * the lock still held */
	pid_t pid = fork();
	if (pid == 0) {
		struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		_exit(fcntl(0, F_GETLK, &q) == 0 && q.l_type != F_UNLCK ? 0 : 1);
	}
	int st = 1;
	if (pid > 0)
		waitpid(pid, &st, 0);
	printf("record lock on descriptor 0 kept: %s\n", pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "yes" : "no");
	for (int i = 0; i < n; i++)
		OPENSSL_secure_free(b[i]);
	close(maps);
	return failures ? 1 : 0;
}

typedef void (*get_mem_fn)(CRYPTO_malloc_fn *m, CRYPTO_realloc_fn *r, CRYPTO_free_fn *f);
typedef void *(*malloc_fn)(size_t num, const char *file, int line);
typedef void (*free_fn)(void *p, const char *file, int line);

static int cmd_twocopies(const char *copy)
{
	const char *names[2] = { "libcrypto.so.3", copy };

	for (int i = 0; i < 2; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		get_mem_fn get;
		malloc_fn m;
		free_fn f;
		CRYPTO_malloc_fn cm;
		CRYPTO_realloc_fn cr;
		CRYPTO_free_fn cf;
		Dl_info info;
		void *p;

		if (!h) {
			printf("FAILED: dlopen %s: %s\n", names[i], dlerror());
			return 1;
		}
		*(void **)&get = dlsym(h, "CRYPTO_get_mem_functions");
		*(void **)&m = dlsym(h, "CRYPTO_malloc");
		*(void **)&f = dlsym(h, "CRYPTO_free");
		if (!get || !m || !f) {
			printf("FAILED: symbols of %s\n", names[i]);
			return 1;
		}
		get(&cm, &cr, &cf);
		printf("copy %d memory functions: %s\n", i,
		       dladdr((void *)(uintptr_t)cm, &info) && info.dli_fname && strstr(info.dli_fname, "secretmem-preload")
			       ? "module"
			       : "openssl");
		p = m(64, __FILE__, __LINE__);
		printf("copy %d CRYPTO_malloc secret: %d\n", i, is_secret(p));
		f(p, __FILE__, __LINE__);
	}
	return 0;
}

/* ---- setmem --------------------------------------------------------------- */

static long prog_allocs, prog_dirty_frees;

/* The program's allocator keeps the requested size in front of each block,
 * so that its free() can check the block's content. */
static void *prog_malloc(size_t num, const char *file, int line)
{
	unsigned char *b = malloc(num + 16);

	(void)file;
	(void)line;
	if (!b)
		return NULL;
	prog_allocs++;
	memcpy(b, &num, sizeof(num));
	return b + 16;
}

static void prog_free(void *p, const char *file, int line)
{
	unsigned char *b;
	size_t n;

	(void)file;
	(void)line;
	if (!p)
		return;
	b = (unsigned char *)p - 16;
	memcpy(&n, b, sizeof(n));
	for (size_t i = 0; i < n; i++)
		if (b[16 + i]) {
			prog_dirty_frees++;
			break;
		}
	free(b);
}

static void *prog_realloc(void *p, size_t num, const char *file, int line)
{
	void *q;
	size_t old;

	if (!p)
		return prog_malloc(num, file, line);
	q = prog_malloc(num, file, line);
	if (!q)
		return NULL;
	memcpy(&old, (unsigned char *)p - 16, sizeof(old));
	memcpy(q, p, old < num ? old : num);
	memset(p, 0, old); /* a realloc is not a leftover */
	prog_free(p, file, line);
	return q;
}

static int cmd_setmem(void)
{
	int ret = CRYPTO_set_mem_functions(prog_malloc, prog_realloc, prog_free);
	EVP_PKEY *k;
	BIO *bio;
	void *p;

	printf("set_mem_functions: %d\n", ret);
	k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	bio = BIO_new(BIO_s_mem());
	CHECK(k && bio && PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL), "keygen/PEM");
	BIO_free(bio);
	EVP_PKEY_free(k);
	p = OPENSSL_malloc(100);
	printf("OPENSSL_malloc secret: %d\n", is_secret(p));
	memset(p, 0x5a, 100);
	OPENSSL_free(p);
	printf("program allocations: %s\n", prog_allocs ? "yes" : "no");
	printf("program frees with content left: %ld\n", prog_dirty_frees);
	return failures ? 1 : 0;
}

/* ---- secmem: the checks of OpenSSL's test/secmemtest.c ------------------- */

static int cmd_secmem(const char *mode)
{
	int plain = strcmp(mode, "plain") == 0, all = strcmp(mode, "all") == 0;
	char *p, *q, *r, *s, *z, *big[5];
	int nbig = 0;

	/* Before init: blocks are not from the arena. */
	CHECK(!CRYPTO_secure_malloc_initialized(), "initialized before init");
	s = OPENSSL_secure_malloc(20);
	CHECK(s != NULL, "secure_malloc(20) before init");
	/* Difference 1: the module's blocks are secret memory, and say so. */
	CHECK(CRYPTO_secure_allocated(s) == !plain, "allocated(block from before init) = %d",
	      CRYPTO_secure_allocated(s));
	CHECK(OPENSSL_secure_malloc(0) == NULL, "secure_malloc(0) before init is not NULL");
	r = OPENSSL_secure_malloc(20);
	CHECK(r != NULL, "secure_malloc(20)");
	CHECK(CRYPTO_secure_malloc_init(4096, 32) == 1, "init(4096, 32) did not return 1");
	CHECK(CRYPTO_secure_malloc_initialized() == 1, "not initialized after init");
	CHECK(CRYPTO_secure_malloc_init(4096, 32) == 0, "second init did not return 0");
	CHECK(CRYPTO_secure_allocated(r) == !plain, "allocated(r) = %d", CRYPTO_secure_allocated(r));
	CHECK(CRYPTO_secure_used() == 0, "used = %zu at init", CRYPTO_secure_used());

	p = OPENSSL_secure_malloc(20);
	CHECK(p && CRYPTO_secure_allocated(p), "p not secure");
	CHECK(CRYPTO_secure_used() == 32, "used = %zu, want 32 (minimum block)", CRYPTO_secure_used());
	CHECK(CRYPTO_secure_actual_size(p) == 32, "actual_size = %zu, want 32", CRYPTO_secure_actual_size(p));
	q = OPENSSL_malloc(20);
	CHECK(q != NULL, "OPENSSL_malloc(20)");
	/* Difference 2: in mode all OPENSSL_malloc() blocks are secret memory. */
	CHECK(CRYPTO_secure_allocated(q) == all, "allocated(OPENSSL_malloc block) = %d", CRYPTO_secure_allocated(q));
	z = OPENSSL_secure_malloc(20);
	CHECK(z && CRYPTO_secure_allocated(z), "second secure block");
	CHECK(CRYPTO_secure_used() == 64, "used = %zu, want 64", CRYPTO_secure_used());
	OPENSSL_secure_free(p);
	CHECK(CRYPTO_secure_used() == 32, "used = %zu after a free, want 32", CRYPTO_secure_used());
	OPENSSL_free(q);
	CHECK(CRYPTO_secure_malloc_done() == 0, "done() succeeded with a live block");
	CHECK(CRYPTO_secure_malloc_initialized() == 1, "not initialized after a refused done()");
	OPENSSL_secure_free(z);
	CHECK(CRYPTO_secure_used() == 0, "used = %zu, want 0", CRYPTO_secure_used());
	CHECK(CRYPTO_secure_malloc_done() == 1, "done() failed with no live block");
	CHECK(CRYPTO_secure_malloc_initialized() == 0, "initialized after done()");

	/* Impossible requests. */
	CHECK(CRYPTO_secure_malloc_init(32768, 16) == 1, "init(32768, 16)");
	CHECK(OPENSSL_secure_malloc(SIZE_MAX) == NULL, "secure_malloc(SIZE_MAX) succeeded");
	CHECK(OPENSSL_secure_malloc(65536) == NULL, "a block larger than the arena succeeded");
	CHECK(CRYPTO_secure_malloc_done() == 1, "done() after failed requests");
	CHECK(CRYPTO_secure_malloc_init(16, 16) == 0, "init(16, 16) succeeded");
	CHECK(CRYPTO_secure_malloc_initialized() == 0, "initialized after a failed init");

	/* A zero-size request in the arena is a minimum block; freed blocks
	 * are cleared (OpenSSL keeps its free-list links in the first two
	 * pointers, so only the rest is checked). */
	CHECK(CRYPTO_secure_malloc_init(4096, 32) == 1, "init(4096, 32) again");
	p = OPENSSL_secure_malloc(0);
	CHECK(p != NULL, "secure_malloc(0) in the arena is NULL");
	CHECK(p && CRYPTO_secure_allocated(p) && CRYPTO_secure_used() == 32, "secure_malloc(0): used = %zu",
	      CRYPTO_secure_used());
	OPENSSL_secure_free(p);
	p = OPENSSL_secure_malloc(64);
	CHECK(p != NULL, "secure_malloc(64)");
	if (p) {
		memset(p, 0xa5, 64);
		OPENSSL_secure_free(p);
#ifdef __SANITIZE_ADDRESS__
		/* The read below is a use after free on purpose (as OpenSSL's
		 * test does); AddressSanitizer rightly stops it. */
		if (0)
#endif
		for (size_t i = 2 * sizeof(void *); i < 64; i++)
			if (p[i]) {
				CHECK(0, "freed block not cleared at byte %zu", i);
				break;
			}
	}
	/* Difference 3: the arena grows; OpenSSL's 4 KiB arena holds four 1 KiB blocks. */
	for (int i = 0; i < 5; i++) {
		big[i] = OPENSSL_secure_malloc(1024);
		if (big[i])
			nbig++;
	}
	CHECK(nbig == (plain ? 4 : 5), "%d of five 1 KiB blocks in a 4 KiB arena", nbig);
	CHECK(CRYPTO_secure_used() == (size_t)nbig * 1024, "used = %zu", CRYPTO_secure_used());
	for (int i = 0; i < 5; i++)
		OPENSSL_secure_free(big[i]);
	CHECK(CRYPTO_secure_malloc_done() == 1, "done() at the end");
	if (!plain) /* OpenSSL 3.0 stops the program with an assertion here */
		CHECK(CRYPTO_secure_malloc_init(1000, 32) == 0, "init with a size not a power of two");
	OPENSSL_secure_free(r);
	OPENSSL_secure_free(s);
	printf("secmemtest checks, mode %s: %s\n", mode, failures ? "FAILED" : "passed");
	return failures ? 1 : 0;
}

/* OPENSSL_free() twice on one block of n bytes, (interior 1) once on the
 * block's start + 16, or (interior 2) OPENSSL_realloc() of the start + 16:
 * must not return. */
static int cmd_badfree(size_t n, int interior)
{
	unsigned char *p = OPENSSL_malloc(n);

	if (!p || n <= 16)
		return 2;
	memset(p, 0x5a, n);
	printf("badfree: %zu-byte block at %p\n", n, (void *)p);
	if (interior == 2) {
		p = OPENSSL_realloc(p + 16, n / 2);
	} else if (interior) {
		OPENSSL_free(p + 16);
	} else {
		OPENSSL_free(p);
		OPENSSL_free(p);
	}
	printf("badfree: the bad OPENSSL_free() returned\n");
	return 3;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && strcmp(argv[1], "sizemax") == 0)
		return cmd_sizemax();
	if (argc >= 3 && strcmp(argv[1], "exhaust") == 0)
		return cmd_exhaust(strtoul(argv[2], NULL, 0), argc >= 4 && strcmp(argv[3], "big") == 0);
	if (argc >= 3 && strcmp(argv[1], "twocopies") == 0)
		return cmd_twocopies(argv[2]);
	if (argc >= 2 && strcmp(argv[1], "asrefuse") == 0)
		return cmd_asrefuse();
	if (argc >= 2 && strcmp(argv[1], "emfile") == 0)
		return cmd_emfile();
	if (argc >= 3 && strcmp(argv[1], "refused") == 0)
		return cmd_refused(strtoul(argv[2], NULL, 0));
	if (argc >= 2 && strcmp(argv[1], "setmem") == 0)
		return cmd_setmem();
	if (argc >= 3 && strcmp(argv[1], "secmem") == 0)
		return cmd_secmem(argv[2]);
	if (argc >= 3 && (strcmp(argv[1], "doublefree") == 0 || strcmp(argv[1], "interiorfree") == 0 ||
			  strcmp(argv[1], "interiorrealloc") == 0))
		return cmd_badfree(strtoul(argv[2], NULL, 0), argv[1][0] != 'i' ? 0 : argv[1][8] == 'f' ? 1 : 2);
	fprintf(stderr, "usage: ossl_probe sizemax|exhaust SOFT|refused SOFT|asrefuse|emfile|twocopies PATH|setmem|secmem MODE|"
		"doublefree SIZE|interiorfree SIZE|interiorrealloc SIZE\n");
	return 2;
}
