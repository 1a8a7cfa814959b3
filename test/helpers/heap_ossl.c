/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * heap_ossl - where OpenSSL's memory lands in this process: prints one line
 * "NAME s|o" per allocation (s: a /secretmem mapping, o: anything else):
 * OPENSSL_malloc, OPENSSL_secure_malloc before the secure heap is
 * initialized (OpenSSL then uses malloc), a private key's number (BN_new),
 * and OPENSSL_secure_malloc after CRYPTO_secure_malloc_init() (OpenSSL's own
 * mmap()ed arena).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>

static char where(const void *p)
{
	char line[512];
	unsigned long s, e;
	FILE *f = fopen("/proc/self/maps", "re");
	char w = '?';

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && (unsigned long)p >= s && (unsigned long)p < e) {
			w = strstr(line, "/secretmem") ? 's' : 'o';
			break;
		}
	if (f)
		fclose(f);
	return w;
}

int main(void)
{
	void *a = OPENSSL_malloc(100), *b = OPENSSL_secure_malloc(100);
	BIGNUM *bn = BN_secure_new();

	if (!a || !b || !bn || !BN_set_word(bn, 12345))
		return 1;
	printf("OPENSSL_malloc %c\n", where(a));
	printf("OPENSSL_secure_malloc %c\n", where(b));
	printf("BN_secure_new %c\n", where(bn));
	if (CRYPTO_secure_malloc_init(65536, 16) != 1)
		return 1;
	void *c = OPENSSL_secure_malloc(100);
	printf("OPENSSL_secure_malloc-after-init %c\n", where(c));
	OPENSSL_secure_free(c);
	BN_free(bn);
	OPENSSL_secure_free(b);
	OPENSSL_free(a);
	return 0;
}
