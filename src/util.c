/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * util.c - helpers that users of libsodium and OpenSSL expect next to a
 * secure allocator: zeroing the compiler cannot remove, a comparison whose
 * time does not depend on the contents, and the library's version.  They
 * use no other layer and work on any memory, secret or not.
 */
#define _DEFAULT_SOURCE
#include <string.h>
#include "internal.h"

SM_API void secretmem_memzero(void *ptr, size_t len)
{
	if (len == 0)
		return;
	/* glibc guarantees that explicit_bzero is never optimized away; the
	 * barrier also keeps a link-time optimizer from dropping the stores. */
	explicit_bzero(ptr, len);
	__asm__ __volatile__("" : : "r"(ptr) : "memory");
}

SM_API int secretmem_memeq(const void *a, const void *b, size_t len)
{
	const volatile unsigned char *x = a;
	const volatile unsigned char *y = b;
	unsigned int d = 0;

	/* Every byte is read (volatile) and no branch depends on the data. */
	for (size_t i = 0; i < len; i++)
		d |= (unsigned int)(x[i] ^ y[i]);
	/* d is 0..255: d - 1 wraps to UINT_MAX only for d == 0. */
	return (int)(((d - 1u) >> 8) & 1u);
}

SM_API const char *secretmem_version(void)
{
	return SECRETMEM_VERSION_STRING;
}
