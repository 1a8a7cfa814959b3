/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * stdio.c - no key files left behind in freed stdio buffers.
 *
 * OpenSSL reads PEM and DER key files through a file BIO, that is through
 * fopen()/fread()/fgets(): the C library copies the file into the stream's
 * buffer (malloc()ed by glibc, not by OpenSSL, so neither mode covers it)
 * and fclose() frees that buffer without clearing it.  The key file's text
 * - all of the key in base64 - then stays in the heap until the memory is
 * reused; a scan of `openssl pkeyutl -sign` found 1.3 KB of an RSA key's
 * PEM text that way.  This fclose() clears the buffer first.
 *
 * Written key files (`openssl genrsa -out`, `pkey -out`, `genpkey -out`)
 * go through the same buffer: a stream with unwritten output is flushed
 * first (as fclose() would do), and its buffer is cleared once the output
 * is out; if the flush fails the buffer is left alone, so that fclose()
 * can still try to write it and report the error as before.
 * Only with glibc (whose FILE exposes the buffer bounds), and only in a
 * process that has libcrypto loaded (other programs run unchanged).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "preload.h"

typedef int (*fclose_fn)(FILE *fp);

static fclose_fn real_fclose;
static int crypto_seen; /* 0 unknown, 1 libcrypto loaded */

void pl_openssl_seen(void)
{
	if (!__atomic_load_n(&crypto_seen, __ATOMIC_RELAXED))
		__atomic_store_n(&crypto_seen, 1, __ATOMIC_RELAXED);
}

/* A libcrypto loaded with RTLD_LOCAL is not in RTLD_DEFAULT's scope, but
 * then it has called our exports (pl_openssl_seen()). */
static int have_libcrypto(void)
{
	if (__atomic_load_n(&crypto_seen, __ATOMIC_RELAXED))
		return 1;
	/* Cheap enough for fclose(); becomes 1 for good once libcrypto is in. */
	if (!dlsym(RTLD_DEFAULT, "OPENSSL_cleanse"))
		return 0;
	__atomic_store_n(&crypto_seen, 1, __ATOMIC_RELAXED);
	return 1;
}

static void scrub(FILE *fp)
{
#ifdef __GLIBC__
	/* Pending output is written first; if that fails, fclose() retries. */
	if (fp->_IO_write_ptr > fp->_IO_write_base && (fflush(fp) != 0 || fp->_IO_write_ptr > fp->_IO_write_base))
		return;
	if (fp->_IO_buf_base && fp->_IO_buf_end > fp->_IO_buf_base)
		explicit_bzero(fp->_IO_buf_base, (size_t)(fp->_IO_buf_end - fp->_IO_buf_base));
#else
	(void)fp;
#endif
}

PL_EXPORT int fclose(FILE *fp);

int fclose(FILE *fp)
{
	fclose_fn real = __atomic_load_n(&real_fclose, __ATOMIC_ACQUIRE);

	if (!real) {
		*(void **)&real = dlsym(RTLD_NEXT, "fclose");
		__atomic_store_n(&real_fclose, real, __ATOMIC_RELEASE);
	}
	if (fp && pl_mode() != PL_MODE_OFF && have_libcrypto())
		scrub(fp);
	return real(fp);
}
