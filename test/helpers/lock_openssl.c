/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * lock_openssl KEYFILE once|wait - OpenSSL 3's secure heap, set up by the
 * program itself with CRYPTO_secure_malloc_init() (one mmap()ed arena
 * between guard pages, locked with mlock2/mlock), holding two keys
 * (test/t_heap_lock_openssl; lockkeys.h says what is printed): key
 * "secure" in OPENSSL_secure_malloc() memory; key "bn" in a BN_secure_new()
 * number, set from a secure buffer that is then cleared and freed, so that
 * the number is only in the BIGNUM's limbs.
 */
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include "lockkeys.h"

static unsigned char *secure;
static BIGNUM *bn;

static int load(int fd)
{
	unsigned char *tmp;

	printf("CRYPTO_secure_malloc_init: %d\n", CRYPTO_secure_malloc_init(32768, 16));
	printf("CRYPTO_secure_malloc_initialized: %d\n", CRYPTO_secure_malloc_initialized());
	secure = OPENSSL_secure_malloc(LK_KEYLEN);
	if (!secure)
		return -1;
	printf("OPENSSL_secure_malloc: CRYPTO_secure_allocated %d\n", CRYPTO_secure_allocated(secure));
	if (lk_read(fd, secure) != 0)
		return -1;
	tmp = OPENSSL_secure_malloc(LK_KEYLEN);
	bn = BN_secure_new();
	if (!tmp || !bn || lk_read(fd, tmp) != 0 || !BN_bin2bn(tmp, LK_KEYLEN, bn))
		return -1;
	printf("temporary: CRYPTO_secure_allocated %d\n", CRYPTO_secure_allocated(tmp));
	OPENSSL_secure_clear_free(tmp, LK_KEYLEN);
	printf("BN_secure_new: BN_FLG_SECURE %d, %d bits\n", BN_get_flags(bn, BN_FLG_SECURE) != 0, BN_num_bits(bn));
	printf("CRYPTO_secure_used: %zu\n", CRYPTO_secure_used());
	return 0;
}

static uint64_t sum(int i)
{
	unsigned char *out;
	uint64_t s;

	if (i == 0)
		return lk_sum(secure, LK_KEYLEN);
	out = OPENSSL_secure_malloc(LK_KEYLEN);
	if (!out || BN_bn2binpad(bn, out, LK_KEYLEN) != LK_KEYLEN)
		_exit(4);
	s = lk_sum(out, LK_KEYLEN);
	OPENSSL_secure_clear_free(out, LK_KEYLEN);
	return s;
}

static void scribble(int i)
{
	if (i == 0)
		memset(secure, 0x5a, LK_KEYLEN);
	else if (!BN_set_word(bn, 0x5a))
		_exit(5);
}

static void finish(void)
{
	OPENSSL_secure_clear_free(secure, LK_KEYLEN);
	BN_clear_free(bn);
	printf("CRYPTO_secure_used after freeing: %zu\n", CRYPTO_secure_used());
	printf("CRYPTO_secure_malloc_done: %d\n", CRYPTO_secure_malloc_done());
}

int main(int argc, char **argv)
{
	static const struct lk_ops ops = { 2, { "secure", "bn" }, load, sum, scribble, finish };

	return lk_main(argc, argv, &ops);
}
