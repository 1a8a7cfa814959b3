/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_adopt_migrate - every replacement that secretmem-migrate(7) gives for
 * libsodium's and OpenSSL's secure-memory calls does what the page says:
 * zero-filled blocks, calloc overflow, owns/usable_size, stats and trim, a
 * region's no-access / read-only / read-write modes (checked by faults in
 * child processes), memzero, memeq's sense.  And the page itself names every
 * call of the issue, and only secretmem functions that the header declares.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include "secretmem.h"
#include "tlib.h"

#define PAGE_FILE "man/man7/secretmem-migrate.7"

static volatile unsigned char sink;

static int touch_read(void *p)
{
	tl_no_core();
	tl_signal_default(SIGSEGV);
	sink = *(volatile unsigned char *)p;
	return 0;
}

static int touch_write(void *p)
{
	tl_no_core();
	tl_signal_default(SIGSEGV);
	*(volatile unsigned char *)p = 1;
	return 0;
}

static void expect(int (*fn)(void *), void *p, int segv, const char *what)
{
	int st = tl_run_child(fn, p, NULL, 0);

	if (segv)
		TL_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "%s: %s, want SIGSEGV", what, tl_status_str(st));
	else
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s, want exit 0", what, tl_status_str(st));
}

static void check_page(void)
{
	static const char *const must[] = {
		"sodium_malloc", "sodium_allocarray", "sodium_free", "sodium_mprotect_noaccess",
		"sodium_mprotect_readonly", "sodium_mprotect_readwrite", "sodium_memzero", "sodium_memcmp",
		"OPENSSL_secure_malloc", "OPENSSL_secure_zalloc", "OPENSSL_secure_free",
		"OPENSSL_secure_clear_free", "CRYPTO_secure_allocated", "CRYPTO_secure_used",
		"CRYPTO_secure_malloc_init", "CRYPTO_memcmp", "OPENSSL_cleanse",
	};
	static char text[32768];
	FILE *f = fopen(PAGE_FILE, "r");

	TL_CHECK(f != NULL, "open %s: %s", PAGE_FILE, strerror(errno));
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++)
		TL_CHECK(strstr(text, must[i]) != NULL, "%s does not map %s", PAGE_FILE, must[i]);
	/* every secretmem_ function named is declared in the header */
	int rc = system("for f in $(grep -o 'secretmem_[a-z_]*(' " PAGE_FILE " | tr -d '(' | sort -u); do"
			" grep -q \"[ *]$f(\" include/secretmem.h || { echo \"not in the header: $f\"; exit 1; };"
			" done");
	TL_CHECK(rc == 0, "the page names a function the header does not declare");
}

int main(void)
{
	check_page();

	/* sodium_malloc / OPENSSL_secure_zalloc: zero-filled */
	unsigned char *p = secretmem_malloc(100);
	TL_CHECK(p != NULL, "malloc");
	for (int i = 0; i < 100; i++)
		TL_CHECK(p[i] == 0, "not zero-filled");
	/* OPENSSL_secure_actual_size, CRYPTO_secure_allocated */
	TL_CHECK(secretmem_usable_size(p) >= 100, "usable size");
	int local;
	TL_CHECK(secretmem_owns(p) == 1 && secretmem_owns(&local) == 0, "owns");
	/* CRYPTO_secure_used */
	struct secretmem_stats st;
	TL_CHECK(secretmem_stats(&st) == 0 && st.bytes_in_use >= secretmem_usable_size(p), "bytes_in_use");
	/* CRYPTO_secure_malloc_initialized (the fallback under valgrind) */
	if (secretmem_supported() == 0)
		TL_CHECK(secretmem_default_backend() == SECRETMEM_BACKEND_SECRET, "backend is not secret");
	secretmem_free(p);
	/* CRYPTO_secure_malloc_done */
	TL_CHECK(secretmem_trim() >= 0, "trim");
	/* sodium_allocarray: overflow */
	errno = 0;
	TL_CHECK(secretmem_calloc(SIZE_MAX / 2, 3) == NULL && errno == ENOMEM, "calloc overflow");

	/* sodium_memzero, sodium_memcmp */
	unsigned char a[8] = "abcdefg", b[8] = "abcdefg";
	TL_CHECK(secretmem_memeq(a, b, 8) == 1, "equal must give 1");
	b[7] = 1;
	TL_CHECK(secretmem_memeq(a, b, 8) == 0, "different must give 0");
	secretmem_memzero(a, 8);
	TL_CHECK(a[0] == 0 && a[7] == 0, "memzero");

	/* sodium_mprotect_*: a region */
	struct secretmem_region *r = secretmem_region_create(32, 0);
	TL_CHECK(r != NULL, "region");
	unsigned char *key = secretmem_region_data(r);
	memset(key, 0x5a, 32);
	TL_CHECK(secretmem_region_protect(r, SECRETMEM_NOACCESS) == 0, "noaccess");
	expect(touch_read, key, 1, "read after noaccess");
	TL_CHECK(secretmem_region_protect(r, SECRETMEM_READONLY) == 0, "readonly");
	expect(touch_read, key, 0, "read after readonly");
	expect(touch_write, key, 1, "write after readonly");
	TL_CHECK(key[31] == 0x5a, "contents after readonly");
	TL_CHECK(secretmem_region_protect(r, SECRETMEM_READWRITE) == 0, "readwrite");
	expect(touch_write, key, 0, "write after readwrite");
	TL_CHECK(secretmem_region_protect(r, SECRETMEM_NOACCESS) == 0, "noaccess again");
	TL_CHECK(secretmem_region_destroy(r) == 0, "destroy a no-access region");
	printf("every replacement of secretmem-migrate(7) behaves as the page says\n");
	return 0;
}
