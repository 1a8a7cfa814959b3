/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * lock_sodium KEYFILE once|wait - libsodium's locked memory holding two
 * keys (test/t_heap_lock_sodium; lockkeys.h says what is printed):
 * key "guarded" in sodium_malloc() memory (its own mapping between guard
 * pages, mlock()ed, with a canary), made read-only with
 * sodium_mprotect_readonly(); key "mlocked" in a malloc()ed buffer locked
 * with sodium_mlock() - under heap mode that buffer is secret memory
 * already, and sodium_mlock() must still return 0 as it does plainly.
 */
#include <sodium.h>
#include "lockkeys.h"

static unsigned char *guarded, *mlocked;

static int load(int fd)
{
	printf("sodium_init: %d\n", sodium_init());
	guarded = sodium_malloc(LK_KEYLEN);
	printf("sodium_malloc: %s\n", guarded ? "ok" : "NULL");
	if (!guarded || lk_read(fd, guarded) != 0)
		return -1;
	printf("sodium_mprotect_readonly: %d\n", sodium_mprotect_readonly(guarded));
	mlocked = malloc(LK_KEYLEN);
	if (!mlocked)
		return -1;
	printf("sodium_mlock: %d\n", sodium_mlock(mlocked, LK_KEYLEN));
	return lk_read(fd, mlocked);
}

static uint64_t sum(int i)
{
	return lk_sum(i ? mlocked : guarded, LK_KEYLEN);
}

static void scribble(int i)
{
	if (i == 0 && sodium_mprotect_readwrite(guarded) != 0)
		_exit(3);
	memset(i ? mlocked : guarded, 0x5a, LK_KEYLEN);
}

static void finish(void)
{
	printf("sodium_munlock: %d\n", sodium_munlock(mlocked, LK_KEYLEN));
	free(mlocked);
	printf("sodium_mprotect_readwrite: %d\n", sodium_mprotect_readwrite(guarded));
	/* checks the canary: aborts if the block was damaged */
	sodium_free(guarded);
	printf("sodium_free: done\n");
}

int main(int argc, char **argv)
{
	static const struct lk_ops ops = { 2, { "guarded", "mlocked" }, load, sum, scribble, finish };

	return lk_main(argc, argv, &ops);
}
