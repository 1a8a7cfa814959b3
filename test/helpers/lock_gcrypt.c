/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * lock_gcrypt KEYFILE once|wait - libgcrypt's secure memory pool
 * (GCRYCTL_INIT_SECMEM: one mmap()ed, mlock()ed pool) holding two keys
 * (test/t_heap_lock_gcrypt; lockkeys.h says what is printed): key "buffer"
 * in gcry_malloc_secure() memory; key "mpi" in a secret MPI
 * (gcry_mpi_snew), set from a secure buffer that is then freed (libgcrypt
 * wipes it), so that the number is only in the MPI's limbs.
 */
#include <gcrypt.h>
#include "lockkeys.h"

static unsigned char *buffer;
static gcry_mpi_t mpi;

static int load(int fd)
{
	unsigned char *tmp;
	gcry_mpi_t t;

	if (!gcry_check_version(GCRYPT_VERSION))
		return -1;
	printf("GCRYCTL_INIT_SECMEM: %u\n", (unsigned)gcry_control(GCRYCTL_INIT_SECMEM, 32768, 0));
	printf("GCRYCTL_INITIALIZATION_FINISHED: %u\n", (unsigned)gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0));
	buffer = gcry_malloc_secure(LK_KEYLEN);
	if (!buffer)
		return -1;
	printf("gcry_malloc_secure: is_secure %d\n", gcry_is_secure(buffer));
	if (lk_read(fd, buffer) != 0)
		return -1;
	tmp = gcry_malloc_secure(LK_KEYLEN);
	if (!tmp || lk_read(fd, tmp) != 0 || gcry_mpi_scan(&t, GCRYMPI_FMT_USG, tmp, LK_KEYLEN, NULL) != 0)
		return -1;
	gcry_free(tmp);
	mpi = gcry_mpi_snew(8 * LK_KEYLEN);
	gcry_mpi_set(mpi, t);
	gcry_mpi_release(t);
	printf("gcry_mpi_snew: secure %d, %u bits\n", gcry_mpi_get_flag(mpi, GCRYMPI_FLAG_SECURE),
	       gcry_mpi_get_nbits(mpi));
	return 0;
}

static uint64_t sum(int i)
{
	unsigned char *out;
	size_t n = 0;
	uint64_t s;

	if (i == 0)
		return lk_sum(buffer, LK_KEYLEN);
	out = gcry_malloc_secure(LK_KEYLEN);
	if (!out || gcry_mpi_print(GCRYMPI_FMT_USG, out, LK_KEYLEN, &n, mpi) != 0 || n != LK_KEYLEN)
		_exit(4);
	s = lk_sum(out, LK_KEYLEN);
	gcry_free(out);
	return s;
}

static void scribble(int i)
{
	if (i == 0)
		memset(buffer, 0x5a, LK_KEYLEN);
	else
		gcry_mpi_set_ui(mpi, 0x5a);
}

static void finish(void)
{
	gcry_free(buffer);
	gcry_mpi_release(mpi);
	printf("released\n");
}

int main(int argc, char **argv)
{
	static const struct lk_ops ops = { 2, { "buffer", "mpi" }, load, sum, scribble, finish };

	return lk_main(argc, argv, &ops);
}
